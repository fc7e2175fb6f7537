package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kimiapp/kimi/app/store"
)

// TestBackupWithoutSecrets: `kimi backup` says a full backup holds the keys
// in plain text (and it does: byte search); `--without-secrets` writes a
// copy without them that restores and serves.
func TestBackupWithoutSecrets(t *testing.T) {
	dataDir, env := newDataDir(t)
	const key = "wt-live-key-9b8e7f6a5d4c3b2a"
	st := openDB(t, dataDir)
	err := st.Write(context.Background(), func(tx *sql.Tx) error {
		return store.SetSecretSettingTx(context.Background(), tx, "worldtree.default_key", key)
	})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	help := runKimi(t, env, "", "backup", "-h")
	for _, w := range []string{"Worldtree API keys", "plain text", "-without-secrets"} {
		if !strings.Contains(help.stdout, w) {
			t.Errorf("kimi backup -h lacks %q:\n%s", w, help.stdout)
		}
	}
	dir := t.TempDir()
	full, lean := filepath.Join(dir, "full.db"), filepath.Join(dir, "lean.db")
	res := runKimi(t, env, "", "backup", full)
	if res.code != 0 || !strings.Contains(res.stdout, "plain text") {
		t.Fatalf("full backup: exit %d, want a plain-text warning\n%s%s", res.code, res.stdout, res.stderr)
	}
	if b, _ := os.ReadFile(full); !bytes.Contains(b, []byte(key)) {
		t.Fatal("the full backup lacks the key: the byte search cannot see it")
	}
	res = runKimi(t, env, "", "backup", "--without-secrets", lean)
	if res.code != 0 || !strings.Contains(res.stdout, "without secrets") {
		t.Fatalf("backup --without-secrets: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if b, _ := os.ReadFile(lean); bytes.Contains(b, []byte(key)) {
		t.Fatal("the backup without secrets holds the key's bytes")
	}
	other := filepath.Join(t.TempDir(), "data")
	oenv := testEnv(other)
	if res := runKimi(t, oenv, "", "restore", lean); res.code != 0 {
		t.Fatalf("restore of a backup without secrets: exit %d %s", res.code, res.stderr)
	}
	s := startServer(t, oenv)
	if code, _ := s.get("/readyz"); code != 200 {
		t.Errorf("/readyz after restoring a backup without secrets = %d", code)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
}
