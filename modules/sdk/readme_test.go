package sdk

import (
	"os"
	"regexp"
	"testing"
)

// The README's complete example is real code: its module and test are kept
// byte for byte in internal/counter, which `go test ./modules/...` builds
// and runs. Editing one without the other fails here.
func TestREADMEExampleIsCompiledCode(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, 2)
	if len(blocks) != 2 {
		t.Fatalf("README has %d Go blocks before the recipes, want the example and its test", len(blocks))
	}
	for i, path := range []string{"internal/counter/counter.go", "internal/counter/counter_test.go"} {
		code, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(blocks[i][1]) != string(code) {
			t.Errorf("README Go block %d differs from %s; copy the compiled file into the README (or back)", i+1, path)
		}
	}
}
