package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLockCannotBeDeletedAway: deleting kimi.db.lock under a running server
// used to let a second `kimi serve` and a `kimi restore` run beside it. The
// lock is on the data directory now: both are refused with ErrLocked's
// message while the first server runs.
func TestLockCannotBeDeletedAway(t *testing.T) {
	dataDir, env := newDataDir(t)
	backup := filepath.Join(t.TempDir(), "backup.db")
	if res := runKimi(t, env, "", "backup", backup); res.code != 0 {
		t.Fatalf("backup: exit %d %s", res.code, res.stderr)
	}
	s := startServer(t, env)
	if err := os.Remove(filepath.Join(dataDir, "kimi.db.lock")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	const locked = "the database is in use by another Kimi process"
	for _, args := range [][]string{{"serve"}, {"restore", backup}, {"migrate", "up"}} {
		res := runKimi(t, env, "", args...)
		if res.code != 1 || !strings.Contains(res.stderr, locked) {
			t.Errorf("kimi %s beside a running server after deleting kimi.db.lock: exit %d, want 1 with %q\n%s",
				strings.Join(args, " "), res.code, locked, res.stderr)
		}
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	// Once the server is gone the lock is free again.
	if res := runKimi(t, env, "", "restore", backup); res.code != 0 {
		t.Fatalf("restore after the server stopped: exit %d %s", res.code, res.stderr)
	}
}
