package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/store"
)

// TestAdminCommandNeverMigratesUnderARunningServer: `kimi admin` migrates a
// database that is behind the binary (so it works before the first serve),
// but a schema change under a running server — an old `kimi serve` during
// an upgrade — is what the lock exists to prevent, so then it refuses like
// `kimi migrate up`. On a current schema it works alongside the server.
func TestAdminCommandNeverMigratesUnderARunningServer(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	dbPath := filepath.Join(dataDir, config.DBFile)
	env := map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_LOG_LEVEL": "warn"}
	run := func(args ...string) (int, string, string) {
		c, out, errOut := testCLI(env, "a-good-password\n")
		code := c.main(context.Background(), args)
		return code, out.String(), errOut.String()
	}
	create := []string{"admin", "create", "--username", "alice", "--password-stdin"}

	// A "server" holds the lock on a database that still needs migrating.
	if err := ensureDataDir(dataDir, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	lock, err := store.AcquireLock(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(create...)
	if code != ExitFailure || !strings.Contains(errOut, "in use by another Kimi process") {
		t.Fatalf("admin create with pending migrations under a lock: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	st, err := store.Open(context.Background(), dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cur, _, err := st.SchemaVersion(context.Background())
	st.Close()
	if err != nil || cur != 0 {
		t.Fatalf("schema version after the refused command = %d, %v; want 0 (untouched)", cur, err)
	}
	lock.Release()

	// Without a server it migrates and creates the admin.
	if code, out, errOut := run(create...); code != ExitOK || !strings.Contains(out, `admin "alice" created`) {
		t.Fatalf("admin create: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// On a current schema it works while the server holds the lock.
	if lock, err = store.AcquireLock(dbPath); err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if code, out, errOut := run("admin", "reset-password", "--username", "alice", "--password-stdin"); code != ExitOK {
		t.Fatalf("reset-password alongside a server: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
