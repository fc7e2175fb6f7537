package sdk

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestReprQuotesLikeTheOriginal: sdk.Repr, the quoting modules use in their
// messages, renders values as the original's messages do (and as
// hostkit.Repr, which modules never import).
func TestReprQuotesLikeTheOriginal(t *testing.T) {
	tests := []struct{ in, want string }{
		{"name", `'name'`},
		{"it's", `"it's"`},
		{`say "it's"`, `'say "it\'s"'`},
		{"a\\b\n", `'a\\b\n'`},
		{"", `''`},
	}
	for _, tt := range tests {
		if got := Repr(tt.in); got != tt.want {
			t.Errorf("Repr(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestModulesDoNotImportHostkit: hostkit is for hosts and fakes; no package
// under modules/ outside modules/sdk/... imports it, in its code or its
// tests (what a module needs is in modules/sdk, such as Repr).
func TestModulesDoNotImportHostkit(t *testing.T) {
	const (
		modules = "github.com/kimiapp/kimi/modules"
		sdkPath = modules + "/sdk"
		hostkit = sdkPath + "/hostkit"
	)
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", modules+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var modulePkgs int
	for dec.More() {
		var pkg struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&pkg); err != nil {
			t.Fatal(err)
		}
		if pkg.ImportPath == sdkPath || strings.HasPrefix(pkg.ImportPath, sdkPath+"/") {
			continue
		}
		modulePkgs++
		for _, p := range append(append(append([]string{}, pkg.Imports...), pkg.TestImports...), pkg.XTestImports...) {
			if p == hostkit || strings.HasPrefix(p, hostkit+"/") {
				t.Errorf("%s imports %s: modules use modules/sdk (sdk.Repr for quoting), never hostkit", pkg.ImportPath, p)
			}
		}
	}
	if modulePkgs < 2 {
		t.Fatalf("go list reported %d module packages outside modules/sdk", modulePkgs)
	}
}
