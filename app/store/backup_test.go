package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupRefusesLiveFiles: a backup written over the live database, its
// WAL, shared-memory or lock file (also through a symlinked directory) would
// corrupt the running appliance or lose acknowledged writes, so it is
// refused and the live files are left untouched; a directory is refused
// with a clear message.
func TestBackupRefusesLiveFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "kimi.db")
	s := openTest(t, path)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	lock, err := AcquireLock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if err := s.Audit(ctx, AuditEntry{Actor: "admin", Action: "before.backup"}); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "data-link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dest, want string
	}{
		{"database", path, "live database"},
		{"wal", path + "-wal", "live database"},
		{"shm", path + "-shm", "live database"},
		{"journal", path + "-journal", "live database"},
		{"lock", path + ".lock", "live database"},
		{"database via symlinked dir", filepath.Join(link, "kimi.db"), "live database"},
		{"wal via symlinked dir", filepath.Join(link, "kimi.db-wal"), "live database"},
		{"relative wal", relTo(t, path+"-wal"), "live database"},
		{"directory", t.TempDir(), "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := statAll(t, path)
			err := s.Backup(ctx, tt.dest, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Backup(%s) = %v, want an error containing %q", tt.dest, err, tt.want)
			}
			after := statAll(t, path)
			for name, fi := range before {
				if !os.SameFile(fi, after[name]) {
					t.Errorf("%s was replaced by the refused backup", name)
				}
			}
		})
	}
	// The appliance still works and kept its write.
	if err := s.Audit(ctx, AuditEntry{Actor: "admin", Action: "after.backup"}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.Reader().QueryRowContext(ctx,
		`SELECT count(*) FROM kimi_audit_log WHERE action IN ('before.backup', 'after.backup')`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("audit rows = %d, %v; want 2", n, err)
	}
	// A sibling file that merely shares the prefix is a fine destination.
	if err := s.Backup(ctx, path+"-backup.db", nil); err != nil {
		t.Fatalf("Backup beside the database: %v", err)
	}
}

// statAll stats the database and its companion files that exist.
func statAll(t *testing.T, path string) map[string]os.FileInfo {
	t.Helper()
	out := map[string]os.FileInfo{}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = fi
	}
	return out
}

func relTo(t *testing.T, p string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, p)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// TestBackupToAnyFileName: SQLite must not read URI syntax out of a backup
// file name ('?' starts a query, '#' a fragment, '%' an escape), which would
// write the copy somewhere else or fail after creating a stray file.
func TestBackupToAnyFileName(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	if err := s.Audit(ctx, AuditEntry{Actor: "admin", Action: "in.backup"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kimi?mode=memory.db", "kimi#1.db", "kimi%41 b.db", "dir?x/kimi.db"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			dest := filepath.Join(dir, name)
			if err := s.Backup(ctx, dest, nil); err != nil {
				t.Fatalf("Backup(%q): %v", name, err)
			}
			rep, err := Check(ctx, dest)
			if err != nil || !rep.OK() {
				t.Fatalf("Check(%q) = %+v, %v", name, rep, err)
			}
			var got []string
			err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(dir, p)
					got = append(got, rel)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != name {
				t.Fatalf("files after backup = %q, want only %q", got, name)
			}
		})
	}
}

// TestBackupIsPrivate: a backup holds password and session hashes and
// stored keys, so it is readable by the owner only (0600) whatever the
// umask, like the live database — including the automatic pre-migration one.
func TestBackupIsPrivate(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	dir := t.TempDir()
	for _, name := range []string{"new.db", "overwritten.db"} {
		dest := filepath.Join(dir, name)
		if name == "overwritten.db" {
			if err := os.WriteFile(dest, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Backup(ctx, dest, nil); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(dest)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s mode %#o, want 0600", name, perm)
		}
	}
	if perm := filepathMode(t, s.Path()); perm != 0o600 {
		t.Errorf("live database mode %#o, want 0600", perm)
	}
}

func filepathMode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestRestoreSignsEveryoneOut: a backup holds the sessions that were live
// when it was taken, including ones revoked since (a stolen cookie the admin
// signed out, a password change). Restoring must not bring them back: the
// restored database has no sessions and no set-up tokens, and the restore
// is recorded in its audit log.
func TestRestoreSignsEveryoneOut(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "kimi.db")
	s := openTest(t, path)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	err := s.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_admins (username, password_hash, created_at, password_changed_at) VALUES ('admin', 'x', 1, 1)`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_sessions (id, secret_hash, admin_id, csrf_token, created_at, last_seen_at, expires_at)
			VALUES ('stolen', x'00', 1, 'c', 1, 1, 4102444800)`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO kimi_setup_tokens (token_hash, expires_at) VALUES (x'01', 4102444800)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, "backup.db")
	if err := s.Backup(ctx, backup, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()

	if _, err := Restore(ctx, path, backup); err != nil {
		t.Fatal(err)
	}
	r := openTest(t, path)
	var sessions, tokens, admins, restores int
	if err := r.Reader().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM kimi_sessions), (SELECT count(*) FROM kimi_setup_tokens),
		(SELECT count(*) FROM kimi_admins), (SELECT count(*) FROM kimi_audit_log WHERE action = ?)`, ActionRestore).Scan(&sessions, &tokens, &admins, &restores); err != nil {
		t.Fatal(err)
	}
	if sessions != 0 || tokens != 0 || admins != 1 || restores != 1 {
		t.Fatalf("after restore: sessions=%d setup tokens=%d admins=%d restore audit rows=%d, want 0 0 1 1", sessions, tokens, admins, restores)
	}
	// The backup file itself is left as it was.
	b := openTest(t, backup)
	if err := b.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_sessions`).Scan(&sessions); err != nil || sessions != 1 {
		t.Fatalf("backup file changed by the restore: sessions=%d, %v", sessions, err)
	}
}
