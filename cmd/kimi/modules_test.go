package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestServeModulesNeverTakeTheApplianceDown: a KIMI_MODULES that names a
// module that is not installed, next to bundled ones, is reported and the
// appliance serves; each selected module ends started or failed with its
// reason logged with its own logger, and SIGTERM still exits 0.
func TestServeModulesNeverTakeTheApplianceDown(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startServer(t, testEnv(dataDir, "KIMI_MODULES=hello,ghost,reference_kudos"))
	if code, body := s.get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d %q, want 200", code, body)
	}
	if len(s.linesContaining("Configured Kimi module is not installed: ghost")) != 1 {
		t.Errorf("no refusal of the unknown module in the log:\n%s", s.log())
	}
	if len(s.linesContaining("module selection from KIMI_MODULES")) != 1 {
		t.Errorf("the log does not say the selection came from KIMI_MODULES:\n%s", s.log())
	}
	for _, m := range []string{"hello", "reference_kudos"} {
		started := s.linesContaining("Kimi module started: " + m)
		failed := s.linesContaining("Kimi module failed: " + m)
		if len(started)+len(failed) != 1 || !strings.Contains(strings.Join(append(started, failed...), ""), "module="+m) {
			t.Errorf("module %s: want one started-or-failed line with module=%s; log:\n%s", m, m, s.log())
		}
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code = %d, want 0; log:\n%s", code, s.log())
	}
}
