package store

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

// TestBackupWithoutSecrets: a full backup holds a secret setting's bytes; a
// backup without secrets holds none of them (byte search of the file, so
// free pages count too), keeps the ordinary settings, records the omission
// in its own audit log, restores, and leaves the live database unchanged.
func TestBackupWithoutSecrets(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	const secret, plain = "wt-secret-key-4f1c2a9e77d0b3", "https://worldtree.example"
	err := s.Write(ctx, func(tx *sql.Tx) error {
		if err := SetSecretSettingTx(ctx, tx, "worldtree.default_key", secret); err != nil {
			return err
		}
		return SetSettingTx(ctx, tx, "worldtree.base_url", plain)
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	full := filepath.Join(dir, "full.db")
	if _, err := s.BackupWith(ctx, full, BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(mustRead(t, full), []byte(secret)) {
		t.Fatal("the full backup lacks the secret: the byte search cannot see it")
	}
	lean := filepath.Join(dir, "lean.db")
	info, err := s.BackupWith(ctx, lean, BackupOptions{WithoutSecrets: true, Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	if !info.WithoutSecrets || info.Path != lean {
		t.Errorf("BackupInfo = %+v", info)
	}
	for _, p := range []string{lean, lean + "-wal", lean + "-shm"} {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret's bytes", filepath.Base(p))
		}
	}
	b := openTest(t, lean)
	if _, ok, _ := b.Setting(ctx, "worldtree.default_key"); ok {
		t.Error("the secret setting is in the backup without secrets")
	}
	if v, ok, _ := b.Setting(ctx, "worldtree.base_url"); !ok || v != plain {
		t.Errorf("ordinary setting = %q %v, want it kept", v, ok)
	}
	var actor string
	if err := b.Reader().QueryRowContext(ctx, `SELECT actor FROM kimi_audit_log WHERE action = ?`, ActionBackupWithoutSecrets).Scan(&actor); err != nil || actor != "tester" {
		t.Errorf("audit row of the omission: actor %q, %v", actor, err)
	}
	b.Close()
	if last, ok, err := s.LastBackup(ctx); err != nil || !ok || !last.WithoutSecrets {
		t.Errorf("LastBackup = %+v %v %v, want the backup without secrets", last, ok, err)
	}
	if v, ok, _ := s.Setting(ctx, "worldtree.default_key"); !ok || v != secret {
		t.Error("the live database lost its secret")
	}
	restored := filepath.Join(t.TempDir(), "kimi.db")
	if _, err := Restore(ctx, restored, lean); err != nil {
		t.Fatalf("restore of a backup without secrets: %v", err)
	}
	r := openTest(t, restored)
	if _, err := r.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSecretSettingFlag: SetSecretSettingTx marks a row secret and
// SetSettingTx stores an ordinary one (also over a former secret).
func TestSecretSettingFlag(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	flag := func(key string) int {
		var v int
		if err := s.Reader().QueryRowContext(ctx, `SELECT secret FROM kimi_settings WHERE key = ?`, key).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, step := range []struct {
		secret bool
		want   int
	}{{false, 0}, {true, 1}, {false, 0}} {
		err := s.Write(ctx, func(tx *sql.Tx) error {
			if step.secret {
				return SetSecretSettingTx(ctx, tx, "k", "v")
			}
			return SetSettingTx(ctx, tx, "k", "v")
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := flag("k"); got != step.want {
			t.Fatalf("secret = %d after secret=%v, want %d", got, step.secret, step.want)
		}
	}
}
