package llm

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoKimiPackage: app/llm and app/llm/llmfake import no other
// Kimi package (the egress transport comes in through Options.Transport);
// the tests may use the fake, and llmfake's non-test files import nothing
// of Kimi at all, so demo mode can run it.
func TestImportsNoKimiPackage(t *testing.T) {
	allowed := map[string]bool{
		"github.com/kimiapp/kimi/app/llm":         true,
		"github.com/kimiapp/kimi/app/llm/llmfake": true,
	}
	for _, dir := range []string{".", "llmfake"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("list %s: %v (%d files)", dir, err, len(files))
		}
		for _, name := range files {
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatalf("parse %s: %v", name, err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !strings.HasPrefix(path, "github.com/kimiapp/kimi") {
					continue
				}
				test := strings.HasSuffix(name, "_test.go")
				if !allowed[path] || (!test && dir == "llmfake") || (!test && path == "github.com/kimiapp/kimi/app/llm/llmfake") {
					t.Errorf("%s imports %s; app/llm depends on no other Kimi package", name, path)
				}
			}
		}
	}
}
