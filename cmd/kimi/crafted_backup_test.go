package main

// Crafted backups, through the built binary: refused by restore, doctor and
// every command that opens the store for work.

import (
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kimiapp/kimi/app/store"
)

const guardPassword = "correct-horse-battery"

// newDataDir creates a data directory with an admin and returns its env.
func newDataDir(t *testing.T) (dataDir string, env []string) {
	t.Helper()
	dataDir = filepath.Join(t.TempDir(), "data")
	env = testEnv(dataDir)
	if res := runKimi(t, env, guardPassword+"\n", "admin", "create", "--password-stdin"); res.code != 0 {
		t.Fatalf("admin create: exit %d %s", res.code, res.stderr)
	}
	return dataDir, env
}

// craftCopy copies src to a new file and runs stmts on it.
func craftCopy(t *testing.T, src string, stmts ...string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "crafted.db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", store.DSN(p, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, s := range append(stmts, "PRAGMA wal_checkpoint(TRUNCATE)") {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return p
}

func sum(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// leftovers lists files a refused restore must not leave in dataDir.
func leftovers(t *testing.T, dataDir string) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"*.restore-*", "kimi.db.pre-restore-*"} {
		m, err := filepath.Glob(filepath.Join(dataDir, pat))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

// TestCraftedBackupRefused: a backup with added triggers (one keeps the
// sessions restore deletes, one rewrites password_hash after every update,
// one never returns) restored with exit 0 before; restore now refuses it
// naming each trigger, leaves the data directory as it was, and returns
// (the slow trigger never runs). Placed as the live database, the same file
// is refused by doctor, serve and admin reset-password. A genuine backup
// still restores and serves.
func TestCraftedBackupRefused(t *testing.T) {
	dataDir, env := newDataDir(t)
	genuine := filepath.Join(t.TempDir(), "genuine.db")
	if res := runKimi(t, env, "", "backup", genuine); res.code != 0 {
		t.Fatalf("backup: exit %d %s", res.code, res.stderr)
	}
	attacks := []string{
		`INSERT INTO kimi_sessions (id, secret_hash, admin_id, csrf_token, created_at, last_seen_at, expires_at) VALUES ('stolen', x'00', 1, 'c', 1, 1, 4102444800)`,
		`CREATE TRIGGER keep_sessions BEFORE DELETE ON kimi_sessions BEGIN SELECT RAISE(IGNORE); END`,
		`CREATE TRIGGER keep_password AFTER UPDATE ON kimi_admins BEGIN UPDATE kimi_admins SET password_hash = 'attacker' WHERE id = NEW.id AND password_hash <> 'attacker'; END`,
	}
	bad := craftCopy(t, genuine, attacks...)
	// A session row, so restore's sign-out would fire the endless trigger.
	slow := craftCopy(t, genuine, attacks[0], `CREATE TRIGGER slow BEFORE DELETE ON kimi_sessions BEGIN
		SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c); END`)

	live := filepath.Join(dataDir, "kimi.db")
	before := sum(t, live)
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"triggers", bad, []string{`store: schema: unexpected trigger "keep_password" on table kimi_admins`, `unexpected trigger "keep_sessions" on table kimi_sessions`}},
		{"slow trigger", slow, []string{`store: schema: unexpected trigger "slow" on table kimi_sessions`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := runKimi(t, env, "", "restore", tt.src)
			if res.code != 1 {
				t.Fatalf("restore of a crafted backup: exit %d, want 1\n%s%s", res.code, res.stdout, res.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("restore error lacks %q:\n%s", w, res.stderr)
				}
			}
			if sum(t, live) != before {
				t.Error("a refused restore changed the live database")
			}
			if left := leftovers(t, dataDir); len(left) != 0 {
				t.Errorf("a refused restore left files behind: %v", left)
			}
		})
	}

	// The crafted file as the live database of another data directory.
	crafted := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(crafted, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crafted, "kimi.db"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	cenv := testEnv(crafted)
	const want = `unexpected trigger "keep_sessions" on table kimi_sessions`
	if res := runKimi(t, cenv, "", "doctor"); res.code != 1 || !strings.Contains(res.stdout, "FAIL  schema    "+want) {
		t.Errorf("doctor on a crafted database: exit %d, want 1 naming the trigger\n%s", res.code, res.stdout)
	}
	if res := runKimi(t, cenv, "", "serve"); res.code != 1 || !strings.Contains(res.stderr, "kimi serve: store: schema: ") || !strings.Contains(res.stderr, want) {
		t.Errorf("serve on a crafted database: exit %d, want 1 naming the trigger\n%s", res.code, res.stderr)
	}
	res := runKimi(t, cenv, "another-long-password\n", "admin", "reset-password", "--password-stdin")
	if res.code != 1 || !strings.Contains(res.stderr, want) {
		t.Errorf("admin reset-password on a crafted database: exit %d, want 1 naming the trigger\n%s%s", res.code, res.stdout, res.stderr)
	}

	// A genuine backup restores and serves.
	if res := runKimi(t, env, "", "restore", genuine); res.code != 0 {
		t.Fatalf("restore of a genuine backup: exit %d %s", res.code, res.stderr)
	}
	s := startServer(t, env)
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("serve after restore exited %d", code)
	}
}
