package sdk

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyStandardLibrary fails when the SDK or hostkit depend on
// anything beyond the standard library and the SDK's own packages, directly
// or transitively: a module author's build must not inherit the appliance's
// dependencies. sdktest's one exception is the SQLite driver its storage
// fake runs on (a real database, as the host's); everything else it
// imports must be standard or the SDK's too.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	const own = "github.com/kimiapp/kimi/modules/sdk"
	allowedDirect := map[string][]string{own + "/sdktest": {"modernc.org/sqlite"}}
	out, err := exec.Command("go", "list", "-json=ImportPath,Standard,Deps,Imports,TestImports,XTestImports", own+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	standard := stdPackages(t)
	isOwn := func(p string) bool { return p == own || strings.HasPrefix(p, own+"/") }
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var checked int
	for dec.More() {
		var pkg struct {
			ImportPath                               string
			Deps, Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&pkg); err != nil {
			t.Fatal(err)
		}
		checked++
		allowed := allowedDirect[pkg.ImportPath]
		direct := append(append(append([]string{}, pkg.Imports...), pkg.TestImports...), pkg.XTestImports...)
		for _, p := range direct {
			if !standard[p] && !isOwn(p) && !contains(allowed, p) {
				t.Errorf("%s imports %s (only the standard library and modules/sdk/... are allowed)", pkg.ImportPath, p)
			}
		}
		if allowed != nil {
			continue // the driver's own dependencies are its business
		}
		for _, p := range pkg.Deps {
			if !standard[p] && !isOwn(p) {
				t.Errorf("%s depends on %s (only the standard library and modules/sdk/... are allowed)", pkg.ImportPath, p)
			}
		}
	}
	if checked < 3 {
		t.Fatalf("go list reported %d SDK packages", checked)
	}
}

func stdPackages(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "std").Output()
	if err != nil {
		t.Fatalf("go list std: %v", err)
	}
	std := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		std[p] = true
	}
	return std
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
