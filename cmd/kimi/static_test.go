package main

import (
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// TestBinaryUsesJSONv2: the binary `make` builds decodes JSON with
// encoding/json's v2 implementation (discordgo decodes every gateway event
// with it). The Makefile must export GOEXPERIMENT=jsonv2 to every recipe
// (checked always); the test binary of `make test` is built the same way,
// so under it the built kimi must record the experiment. CI runs make
// test: there, a run without the experiment fails.
func TestBinaryUsesJSONv2(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// The environment the Makefile's recipes get, minus the caller's own.
	cmd := exec.Command("make", "-s", "--no-print-directory", "-C", root,
		"--eval", "print-goexperiment: ; @echo \"$$GOEXPERIMENT\"", "print-goexperiment")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOEXPERIMENT=") })
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make print-goexperiment: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.Contains(got, "jsonv2") {
		t.Fatalf("the Makefile's recipes get GOEXPERIMENT=%q, want jsonv2", got)
	}

	if !strings.Contains(os.Getenv("GOEXPERIMENT"), "jsonv2") {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs the tests without GOEXPERIMENT=jsonv2: run them with make test")
		}
		t.Log("a plain go test: the built kimi uses the v1 decoder (make test checks the binary)")
		return
	}
	info, err := buildinfo.ReadFile(kimiBin)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range info.Settings {
		if s.Key == "GOEXPERIMENT" && strings.Contains(s.Value, "jsonv2") {
			return
		}
	}
	t.Fatalf("the built kimi records no GOEXPERIMENT=jsonv2 in its build settings: %v", info.Settings)
}
