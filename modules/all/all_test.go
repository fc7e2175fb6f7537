package all

import (
	"context"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk/hostkit"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// Every bundled module passes preflight, has a unique name, declares no
// tool or command name another declares, and starts and closes on the
// fakes with its default settings (which refuse an undeclared name).
func TestBundledModulesStart(t *testing.T) {
	seen := map[string]bool{}
	for _, spec := range Specs() {
		if err := spec.Validate(); err != nil {
			t.Errorf("%s: %v", spec.Name, err)
			continue
		}
		if seen[spec.Name] {
			t.Errorf("module %q is listed twice", spec.Name)
		}
		seen[spec.Name] = true
		t.Run(spec.Name, func(t *testing.T) {
			rt := sdktest.NewRuntime(t, spec)
			if err := rt.StartErr(context.Background()); err != nil {
				t.Fatalf("start: %v", err)
			}
			if err := rt.Close(context.Background()); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	if conflicts := hostkit.DeclaredNameConflicts(Specs()); len(conflicts) > 0 {
		t.Errorf("bundled modules declare one name twice: %v", conflicts)
	}
	if len(seen) != 2 {
		t.Errorf("bundled modules = %v, want hello and kudos", seen)
	}
}
