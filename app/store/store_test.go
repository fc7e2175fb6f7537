package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	kimi "github.com/kimiapp/kimi"
)

func openTest(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func migratedStore(t *testing.T) *Store {
	t.Helper()
	s := openTest(t, filepath.Join(t.TempDir(), "kimi.db"))
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

// withExtraMigration makes the binary "know" one more migration, as an
// upgraded Kimi would, for the duration of the test.
func withExtraMigration(t *testing.T) {
	t.Helper()
	core := kimi.MigrationsFS()
	m := fstest.MapFS{}
	entries, err := fs.ReadDir(core, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(core, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = &fstest.MapFile{Data: b}
	}
	m["09999_test_upgrade.sql"] = &fstest.MapFile{Data: []byte(
		"-- +goose Up\nCREATE TABLE upgraded (id INTEGER PRIMARY KEY);\n-- +goose Down\nDROP TABLE upgraded;\n")}
	prev := migrationsFS
	migrationsFS = func() fs.FS { return m }
	t.Cleanup(func() { migrationsFS = prev })
}

func TestDSNPragmaOrderAndModes(t *testing.T) {
	w := DSN("/data/kimi.db", false)
	r := DSN("/data/kimi.db", true)
	if !strings.HasPrefix(w, "file:/data/kimi.db?") {
		t.Fatalf("writer DSN not a file URI: %s", w)
	}
	if i, j := strings.Index(w, "busy_timeout"), strings.Index(w, "journal_mode"); i < 0 || j < 0 || i > j {
		t.Errorf("busy_timeout must precede journal_mode: %s", w)
	}
	for _, want := range []string{"_txlock=immediate", "foreign_keys%28ON%29", "synchronous%28NORMAL%29", "_time_format=sqlite"} {
		if !strings.Contains(w, want) {
			t.Errorf("writer DSN lacks %s: %s", want, w)
		}
	}
	if strings.Contains(r, "_txlock") || !strings.Contains(r, "query_only%281%29") {
		t.Errorf("reader DSN must be query_only without txlock: %s", r)
	}
}

func TestOpenAppliesPragmas(t *testing.T) {
	s := migratedStore(t)
	ctx := context.Background()
	for _, db := range []*sql.DB{s.Writer(), s.Reader()} {
		var mode string
		var fk, sync int
		if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || fk != 1 || sync != 1 {
			t.Errorf("journal_mode=%s foreign_keys=%d synchronous=%d, want wal 1 1", mode, fk, sync)
		}
	}
	if _, err := s.Reader().ExecContext(ctx, "INSERT INTO kimi_settings (key, value, updated_at) VALUES ('x','y',0)"); err == nil {
		t.Error("reader pool accepted a write; it must be query_only")
	}
}

func TestMigrateEmptyDatabase(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "kimi.db"))
	ctx := context.Background()
	if err := s.Ready(ctx); !errors.Is(err, ErrNotMigrated) {
		t.Fatalf("Ready before migrate = %v, want ErrNotMigrated", err)
	}
	rep, err := s.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, latest, _ := s.SchemaVersion(ctx)
	if rep.From != 0 || rep.To != latest || len(rep.Applied) == 0 {
		t.Errorf("report = %+v, want 0 -> %d with applied files", rep, latest)
	}
	if rep.BackupPath != "" {
		t.Errorf("empty database must not be backed up, got %s", rep.BackupPath)
	}
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("Ready after migrate: %v", err)
	}
	// Idempotent.
	rep2, err := s.Migrate(ctx)
	if err != nil || len(rep2.Applied) != 0 || rep2.From != latest {
		t.Fatalf("second Migrate = %+v, %v", rep2, err)
	}
	st, err := s.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st {
		if !m.Applied {
			t.Errorf("migration %s not applied", m.Name)
		}
	}
}

func TestMigratePopulatedDatabaseBacksUpFirst(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kimi.db")
	s := openTest(t, path)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSetting(ctx, "keep.me", "precious"); err != nil {
		t.Fatal(err)
	}
	from, _, _ := s.SchemaVersion(ctx)
	s.Close()

	withExtraMigration(t)
	s2 := openTest(t, path)
	if err := s2.Ready(ctx); !errors.Is(err, ErrNotMigrated) {
		t.Fatalf("Ready with pending migration = %v", err)
	}
	rep, err := s2.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != from || rep.To != 9999 || len(rep.Applied) != 1 || rep.Applied[0] != "09999_test_upgrade.sql" {
		t.Fatalf("report = %+v", rep)
	}
	if rep.BackupPath == "" || filepath.Dir(rep.BackupPath) != filepath.Join(filepath.Dir(path), "backups") {
		t.Fatalf("pre-migration backup path = %q", rep.BackupPath)
	}
	if perm := filepathMode(t, rep.BackupPath); perm != 0o600 {
		t.Errorf("pre-migration backup mode %#o, want 0600", perm)
	}
	// The data survived the migration and the backup holds the old schema.
	if v, ok, err := s2.Setting(ctx, "keep.me"); err != nil || !ok || v != "precious" {
		t.Fatalf("setting after migrate = %q %v %v", v, ok, err)
	}
	rep2, err := Check(ctx, rep.BackupPath)
	if err != nil || !rep2.OK() || rep2.SchemaVersion != from {
		t.Fatalf("backup check = %+v, %v (want schema %d)", rep2, err, from)
	}
	bk := openTest(t, rep.BackupPath)
	if v, ok, _ := bk.Setting(ctx, "keep.me"); !ok || v != "precious" {
		t.Fatalf("backup lacks data: %q %v", v, ok)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kimi.db")
	func() {
		withExtraMigration(t)
		s := openTest(t, path)
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}()
	// Back to the real binary's migrations: the database is now "from the future".
	migrationsFS = kimi.MigrationsFS
	s := openTest(t, path)
	_, err := s.Migrate(ctx)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Migrate = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), "schema version 9999") || !strings.Contains(err.Error(), "upgrade Kimi") {
		t.Errorf("message not clear: %v", err)
	}
	if _, err := s.MigrationStatus(ctx); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("MigrationStatus = %v, want ErrSchemaTooNew", err)
	}
	// Nothing was changed: the newer table is still there.
	var n int
	if err := s.Reader().QueryRowContext(ctx, "SELECT count(*) FROM upgraded").Scan(&n); err != nil {
		t.Fatalf("newer schema was touched: %v", err)
	}
	if err := s.Ready(ctx); err == nil {
		t.Error("Ready must fail on a newer schema")
	}
}

func TestBackupRestoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "kimi.db")
	s := openTest(t, path)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := s.Audit(ctx, AuditEntry{Actor: "admin", Action: "test.row", Detail: strings.Repeat("x", 500), Target: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var calls, lastDone, lastTotal int
	dest := filepath.Join(dir, "out", "backup.db")
	if err := s.Backup(ctx, dest, func(done, total int) { calls++; lastDone, lastTotal = done, total }); err != nil {
		t.Fatal(err)
	}
	if calls == 0 || lastDone != lastTotal || lastTotal == 0 {
		t.Errorf("progress calls=%d last=%d/%d", calls, lastDone, lastTotal)
	}
	info, ok, err := s.LastBackup(ctx)
	if err != nil || !ok || info.Path != dest || info.Bytes == 0 {
		t.Fatalf("LastBackup = %+v %v %v", info, ok, err)
	}
	if _, err := os.Stat(dest + "-wal"); err == nil {
		t.Error("backup left a -wal file; it must be self-contained")
	}
	// Changes after the backup are undone by the restore.
	if err := s.Audit(ctx, AuditEntry{Actor: "admin", Action: "after.backup"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	prev, err := Restore(ctx, path, dest)
	if err != nil {
		t.Fatal(err)
	}
	if prev == "" {
		t.Fatal("previous database not kept")
	}
	r := openTest(t, path)
	var n, after int
	r.Reader().QueryRowContext(ctx, "SELECT count(*) FROM kimi_audit_log WHERE action='test.row'").Scan(&n)
	r.Reader().QueryRowContext(ctx, "SELECT count(*) FROM kimi_audit_log WHERE action='after.backup'").Scan(&after)
	if n != 500 || after != 0 {
		t.Fatalf("restored rows=%d after=%d, want 500 0", n, after)
	}
	old := openTest(t, prev)
	old.Reader().QueryRowContext(ctx, "SELECT count(*) FROM kimi_audit_log WHERE action='after.backup'").Scan(&after)
	if after != 1 {
		t.Fatalf("kept previous database lost its last write (after=%d)", after)
	}
	if err := r.Ready(ctx); err != nil {
		t.Fatalf("restored database not ready: %v", err)
	}
}

func TestRestoreRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "kimi.db")
	s := openTest(t, path)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSetting(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}

	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 1000)), 0o600)
	foreign := filepath.Join(dir, "foreign.db")
	fdb, _ := sql.Open("sqlite", DSN(foreign, false))
	fdb.Exec("CREATE TABLE t (x)")
	fdb.Close()
	newer := filepath.Join(dir, "newer.db")
	func() {
		withExtraMigration(t)
		n := openTest(t, newer)
		if _, err := n.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		n.Close()
	}()
	migrationsFS = kimi.MigrationsFS
	good := filepath.Join(dir, "good.db")
	if err := s.Backup(ctx, good, nil); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, src, want string
	}{
		{"missing", filepath.Join(dir, "nope.db"), "no such database file"},
		{"garbage", garbage, "restore"},
		{"not kimi", foreign, "not a Kimi database"},
		{"newer schema", newer, "newer than this binary"},
		{"in use", good, "in use by another Kimi process"},
	}
	lock, err := AcquireLock(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name != "in use" {
				lock.Release()
			} else if lock, err = AcquireLock(path); err != nil {
				t.Fatal(err)
			}
			_, err := Restore(ctx, path, tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Restore(%s) = %v, want error containing %q", tt.name, err, tt.want)
			}
			if strings.Contains(err.Error(), "store: restore: store:") {
				t.Errorf("error repeats its prefix: %v", err)
			}
			// The live database is untouched.
			if v, ok, err := s.Setting(ctx, "k"); err != nil || !ok || v != "v" {
				t.Fatalf("live database changed: %q %v %v", v, ok, err)
			}
			matches, _ := filepath.Glob(path + ".pre-restore-*")
			if len(matches) != 0 {
				t.Fatalf("refused restore moved the database: %v", matches)
			}
		})
	}
	lock.Release()
}

func TestConcurrentWritersNeverBusy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kimi.db")
	s := openTest(t, path)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// A second Store on the same file stands in for another process (the
	// `kimi backup` CLI next to a running server).
	other := openTest(t, path)
	if err := s.SetSetting(ctx, "counter", "0"); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		st := s
		if w%4 == 3 {
			st = other
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				// Read-then-write: the pattern that fails with SQLITE_BUSY
				// under DEFERRED transactions.
				errs <- st.Write(ctx, func(tx *sql.Tx) error {
					var n int
					if err := tx.QueryRowContext(ctx, "SELECT CAST(value AS INTEGER) FROM kimi_settings WHERE key='counter'").Scan(&n); err != nil {
						return err
					}
					_, err := tx.ExecContext(ctx, "UPDATE kimi_settings SET value=? WHERE key='counter'", fmt.Sprint(n+1))
					return err
				})
				// Readers run alongside.
				if _, _, err := st.Setting(ctx, "counter"); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent write failed: %v", err)
		}
	}
	v, _, _ := s.Setting(ctx, "counter")
	if v != fmt.Sprint(workers*each) {
		t.Fatalf("counter = %s, want %d (lost updates)", v, workers*each)
	}
}

func TestWriteRollsBackOnErrorAndPanic(t *testing.T) {
	s := migratedStore(t)
	ctx := context.Background()
	boom := errors.New("boom")
	err := s.Write(ctx, func(tx *sql.Tx) error {
		SetSettingTx(ctx, tx, "a", "1")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write = %v", err)
	}
	func() {
		defer func() { recover() }()
		s.Write(ctx, func(tx *sql.Tx) error {
			SetSettingTx(ctx, tx, "b", "1")
			panic("x")
		})
	}()
	for _, k := range []string{"a", "b"} {
		if _, ok, _ := s.Setting(ctx, k); ok {
			t.Errorf("setting %s committed despite failure", k)
		}
	}
	// The writer is still usable after the panic.
	if err := s.SetSetting(ctx, "c", "1"); err != nil {
		t.Fatal(err)
	}
}

func TestLockExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kimi.db")
	l1, err := AcquireLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireLock(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock = %v, want ErrLocked", err)
	}
	l1.Release()
	l1.Release()
	l2, err := AcquireLock(path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Release()
}

func TestCheckReportsSoundDatabase(t *testing.T) {
	s := migratedStore(t)
	rep, err := Check(context.Background(), s.Path())
	if err != nil || !rep.OK() {
		t.Fatalf("Check = %+v, %v", rep, err)
	}
	if _, err := Check(context.Background(), filepath.Join(t.TempDir(), "missing.db")); err == nil {
		t.Fatal("Check must not create a missing database")
	}
}

func TestSizeAndClose(t *testing.T) {
	s := migratedStore(t)
	n, err := s.Size()
	if err != nil || n == 0 {
		t.Fatalf("Size = %d, %v", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if fi, err := os.Stat(s.Path() + "-wal"); err == nil && fi.Size() != 0 {
		t.Errorf("WAL not checkpointed on close: %d bytes", fi.Size())
	}
	if err := s.Ready(context.Background()); err == nil {
		t.Error("Ready after Close must fail")
	}
}

func TestLibcPin(t *testing.T) {
	dep := func(path, v string, repl *debug.Module) *debug.Module {
		return &debug.Module{Path: path, Version: v, Replace: repl}
	}
	tests := []struct {
		name       string
		deps       []*debug.Module
		have, want string
		ok         bool
	}{
		{"match", []*debug.Module{dep("modernc.org/sqlite", "v1.62.0", nil), dep("modernc.org/libc", "v1.80.1", nil)}, "v1.80.1", "v1.80.1", true},
		{"replace wins", []*debug.Module{dep("modernc.org/sqlite", "v1.62.0", nil), dep("modernc.org/libc", "v1.80.2", dep("modernc.org/libc", "v1.80.1", nil))}, "v1.80.1", "v1.80.1", true},
		{"drifted", []*debug.Module{dep("modernc.org/sqlite", "v1.62.0", nil), dep("modernc.org/libc", "v1.80.2", nil)}, "v1.80.2", "v1.80.1", false},
		{"unknown sqlite", []*debug.Module{dep("modernc.org/sqlite", "v9.0.0", nil), dep("modernc.org/libc", "v1.80.1", nil)}, "v1.80.1", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, want, ok := libcPin(&debug.BuildInfo{Deps: tt.deps})
			if have != tt.have || want != tt.want || ok != tt.ok {
				t.Fatalf("libcPin = %q %q %v, want %q %q %v", have, want, ok, tt.have, tt.want, tt.ok)
			}
		})
	}
	// The table must know the sqlite version this module builds with; the
	// binary-level check (kimi doctor, CI) covers the real build info.
	if _, ok := sqliteLibcPins[requiredSQLite(t)]; !ok {
		t.Fatalf("sqliteLibcPins lacks modernc.org/sqlite %s: add its libc pin", requiredSQLite(t))
	}
}

// requiredSQLite reads the sqlite version from the repository's go.mod.
func requiredSQLite(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "modernc.org/sqlite" {
			return f[1]
		}
	}
	t.Fatal("go.mod does not require modernc.org/sqlite")
	return ""
}

func TestSettingsTimeStorage(t *testing.T) {
	s := migratedStore(t)
	ctx := context.Background()
	before := time.Now().Unix()
	if err := s.SetSetting(ctx, "x", "1"); err != nil {
		t.Fatal(err)
	}
	var at int64
	if err := s.Reader().QueryRowContext(ctx, "SELECT updated_at FROM kimi_settings WHERE key='x'").Scan(&at); err != nil {
		t.Fatal(err)
	}
	if at < before || at > time.Now().Unix() {
		t.Fatalf("updated_at = %d, want unix seconds near %d", at, before)
	}
	if err := s.SetSetting(ctx, "", "v"); err == nil {
		t.Fatal("empty key accepted")
	}
}
