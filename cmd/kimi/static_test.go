package main

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryIsStatic: the binary has no dynamic loader and no shared
// libraries (CGO-free, one file to copy anywhere), and `make build` uses
// the same recipe: CGO_ENABLED=0 and the version/commit stamp.
func TestBinaryIsStatic(t *testing.T) {
	f, err := elf.Open(kimiBin)
	if err != nil {
		t.Fatalf("open the built binary: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary asks for a dynamic loader (PT_INTERP); it must be static")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) != 0 {
		t.Fatalf("the binary links shared libraries %v (%v); it must be static", libs, err)
	}

	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("make", "-n", "-C", root, "build").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	recipe := string(out)
	for _, want := range []string{"CGO_ENABLED=0", "go build", "buildinfo.Version=", "buildinfo.Commit=", "./cmd/kimi"} {
		if !strings.Contains(recipe, want) {
			t.Errorf("make build recipe lacks %q:\n%s", want, recipe)
		}
	}
}
