package worldtree

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoKimiPackage checks the package is the client alone: no file of it, tests
// included, imports another Kimi package (settings persistence lives in app/settings, the
// admin page's aggregation in app/admin).
func TestImportsNoKimiPackage(t *testing.T) {
	const self = "github.com/kimiapp/kimi/app/worldtree"
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("list files: %v (%d files)", err, len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatalf("%s: import %s: %v", name, imp.Path.Value, err)
			}
			if path == self {
				continue // the external test package (example_test.go)
			}
			if path == "github.com/kimiapp/kimi" || strings.HasPrefix(path, "github.com/kimiapp/kimi/") {
				t.Errorf("%s imports %s; app/worldtree must depend on no other Kimi package", name, path)
			}
		}
	}
}
