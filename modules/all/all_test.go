package all

import (
	"context"
	"testing"

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
	// No two bundled modules declare one tool or command name (preflight
	// would refuse both): checked here without hostkit, which modules do
	// not import.
	owner := map[string]string{}
	for _, s := range Specs() {
		for _, n := range append(append([]string(nil), s.Tools...), s.Commands...) {
			if o, ok := owner[n]; ok && o != s.Name {
				t.Errorf("bundled modules %s and %s both declare %q", o, s.Name, n)
			}
			owner[n] = s.Name
		}
	}
	if len(seen) != 2 {
		t.Errorf("bundled modules = %v, want hello and kudos", seen)
	}
}
