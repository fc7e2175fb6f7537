package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// crafted applies stmts to a copy of a genuine, populated backup and returns
// the copy's path: an attacker's backup built from a real one.
func crafted(t *testing.T, genuine string, stmts ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "crafted.db")
	b, err := os.ReadFile(genuine)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := openFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("craft %q: %v", s, err)
		}
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	return p
}

// genuineBackup is a backup of a migrated database with an admin, a session
// and a setting, taken from the live store at dir/kimi.db.
func genuineBackup(t *testing.T, s *Store) string {
	t.Helper()
	ctx := context.Background()
	err := s.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_admins (username, password_hash, created_at, password_changed_at) VALUES ('admin', 'x', 1, 1)`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO kimi_sessions (id, secret_hash, admin_id, csrf_token, created_at, last_seen_at, expires_at)
			VALUES ('old', x'00', 1, 'c', 1, 1, 4102444800)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "genuine.db")
	if err := s.Backup(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// slowQuery never finishes on its own: a recursive count without a limit.
const slowQuery = `SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c)`

// craftedCases are the attacks of issue 7: each backup restored with exit 0
// before the schema check, and each kept working after serve.
var craftedCases = []struct {
	name  string
	stmts []string
	want  []string // every one must appear in the error
}{
	{"module-named trigger on a core table", []string{
		`CREATE TRIGGER kudos_keep BEFORE DELETE ON kimi_sessions BEGIN SELECT RAISE(IGNORE); END`},
		[]string{`store: schema: unexpected trigger "kudos_keep" on table kimi_sessions`}},
	{"module trigger on a module table writing a core table", []string{
		`CREATE TABLE kudos_points (v)`,
		`CREATE TRIGGER kudos_wipe AFTER INSERT ON kudos_points BEGIN DELETE FROM kimi_sessions; END`},
		[]string{`store: schema: unexpected trigger "kudos_wipe" on table kudos_points`}},
	{"module trigger naming a core table quoted, commented, as a string", []string{
		`CREATE TABLE kudos_points (v)`,
		`CREATE TRIGGER kudos_q AFTER INSERT ON kudos_points BEGIN UPDATE "KIMI_Admins" SET password_hash = 'x'; END`,
		`CREATE TRIGGER kudos_b AFTER INSERT ON kudos_points BEGIN DELETE FROM [kimi_audit_log]; END`,
		`CREATE TRIGGER kudos_s AFTER INSERT ON kudos_points BEGIN DELETE FROM 'kimi_settings' /* kudos_only */; END`,
		"CREATE TRIGGER kudos_t AFTER INSERT ON kudos_points BEGIN DELETE FROM `kimi_setup_tokens`; END"},
		[]string{`unexpected trigger "kudos_q" on table kudos_points`, `unexpected trigger "kudos_b" on table kudos_points`,
			`unexpected trigger "kudos_s" on table kudos_points`, `unexpected trigger "kudos_t" on table kudos_points`}},
	{"module view over a core table", []string{
		`CREATE VIEW kudos_leak AS SELECT value FROM main.kimi_settings`},
		[]string{`unexpected view "kudos_leak"`}},
	{"table with the reserved prefix", []string{`CREATE TABLE kimi_extra (x)`, `CREATE TABLE "KIMI_shadow" (x)`},
		[]string{`store: schema: unexpected table "KIMI_shadow"`, `unexpected table "kimi_extra"`}},
	{"trigger ignores the sign-out", []string{
		`CREATE TRIGGER keep_sessions BEFORE DELETE ON kimi_sessions BEGIN SELECT RAISE(IGNORE); END`},
		[]string{`store: schema: unexpected trigger "keep_sessions" on table kimi_sessions`}},
	{"trigger rewrites password_hash", []string{
		`CREATE TRIGGER keep_password AFTER UPDATE ON kimi_admins BEGIN UPDATE kimi_admins SET password_hash = 'attacker' WHERE id = NEW.id AND password_hash <> 'attacker'; END`},
		[]string{`unexpected trigger "keep_password" on table kimi_admins`}},
	{"trigger drops audit rows", []string{
		`CREATE TRIGGER no_audit AFTER INSERT ON kimi_audit_log BEGIN DELETE FROM kimi_audit_log WHERE id = NEW.id; END`},
		[]string{`unexpected trigger "no_audit" on table kimi_audit_log`}},
	{"audit_log is a view", []string{
		`DROP TABLE kimi_audit_log`,
		`CREATE VIEW kimi_audit_log (id, at_ms, actor, action, target, detail, ip) AS SELECT 0, 0, '', '', '', '', '' WHERE 0`,
		`CREATE TRIGGER audit_sink INSTEAD OF INSERT ON kimi_audit_log BEGIN SELECT 1; END`},
		[]string{`missing table "kimi_audit_log"`, `unexpected view "kimi_audit_log"`, `unexpected trigger "audit_sink" on table kimi_audit_log`, `missing index "kimi_audit_log_actor" on table kimi_audit_log`}},
	{"only the goose table", []string{
		`DROP TABLE kimi_sessions`, `DROP TABLE kimi_setup_tokens`, `DROP TABLE kimi_admins`, `DROP TABLE kimi_audit_log`, `DROP TABLE kimi_settings`},
		[]string{`missing table "kimi_admins"`, `missing table "kimi_audit_log"`, `missing table "kimi_sessions"`, `missing table "kimi_settings"`, `missing table "kimi_setup_tokens"`}},
	{"slow trigger", []string{
		`CREATE TRIGGER slow BEFORE DELETE ON kimi_sessions BEGIN ` + slowQuery + `; END`},
		[]string{`unexpected trigger "slow" on table kimi_sessions`}},
	{"extra table", []string{`CREATE TABLE stash (x)`},
		[]string{`unexpected table "stash"`}},
	{"extra index", []string{`CREATE INDEX admins_hash ON kimi_admins (password_hash)`},
		[]string{`unexpected index "admins_hash" on table kimi_admins`}},
	{"changed table", []string{
		`DROP TABLE kimi_setup_tokens`, `CREATE TABLE kimi_setup_tokens (token_hash BLOB PRIMARY KEY NOT NULL, expires_at INTEGER NOT NULL, note TEXT) STRICT`},
		[]string{`table "kimi_setup_tokens" differs from the migrations' definition`}},
	{"goose table is a view", []string{
		`DROP TABLE kimi_schema_version`, `CREATE VIEW kimi_schema_version AS SELECT 1 AS version_id, 1 AS is_applied`},
		[]string{`view "kimi_schema_version" is not goose's version table`}},
}

// TestRestoreRefusesCraftedBackups: a backup whose schema differs from what
// the migrations produce at its version is refused by restore, naming each
// object, before any statement that could fire its triggers runs (the slow
// trigger would otherwise never return); the live database, the backup and
// the data directory are left exactly as they were. Check (doctor) and
// Migrate (start-up) refuse the same file with the same problems.
func TestRestoreRefusesCraftedBackups(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "kimi.db")
	s := openTest(t, path)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	genuine := genuineBackup(t, s)
	if err := s.SetSetting(ctx, "live", "untouched"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range craftedCases {
		t.Run(tt.name, func(t *testing.T) {
			src := crafted(t, genuine, tt.stmts...)
			srcSum := fileSum(t, src)
			before := statAll(t, path)
			done := make(chan error, 1)
			go func() {
				_, err := RestoreWith(ctx, path, src, RestoreOptions{Timeout: time.Minute})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("restore of a crafted backup did not return")
			}
			if err == nil {
				t.Fatal("crafted backup restored")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if !errors.Is(err, ErrSchemaMismatch) {
				t.Errorf("error is not ErrSchemaMismatch: %v", err)
			}
			after := statAll(t, path)
			for name, fi := range before {
				if !os.SameFile(fi, after[name]) {
					t.Errorf("%s replaced by a refused restore", name)
				}
			}
			if v, ok, err := s.Setting(ctx, "live"); err != nil || !ok || v != "untouched" {
				t.Fatalf("live database changed: %q %v %v", v, ok, err)
			}
			noTempFiles(t, dir)
			if fileSum(t, src) != srcSum {
				t.Error("the backup file was changed by the refused restore")
			}

			rep, err := Check(ctx, src)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if rep.OK() {
				t.Fatalf("Check reports a crafted database as OK: %+v", rep)
			}
			joined := strings.Join(rep.Schema, "\n")
			for _, w := range tt.want {
				if !strings.Contains(joined, strings.TrimPrefix(w, "store: schema: ")) {
					t.Errorf("Check.Schema lacks %q: %q", w, rep.Schema)
				}
			}

			live := filepath.Join(t.TempDir(), "kimi.db")
			if err := os.WriteFile(live, mustRead(t, src), 0o600); err != nil {
				t.Fatal(err)
			}
			st := openTest(t, live)
			if _, err := st.Migrate(ctx); !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), strings.TrimPrefix(tt.want[0], "store: schema: ")) {
				t.Fatalf("Migrate of the crafted database = %v, want the schema refusal", err)
			}
			if err := st.Ready(ctx); err == nil {
				t.Error("a refused database reports ready")
			}
		})
	}
}

// TestRestoreAcceptsGenuineBackupAtItsVersion: the schema is compared at the
// backup's own version, so a genuine backup from an older Kimi (the real
// migrations' latest version, while this binary knows one more migration)
// restores and then migrates;
// one at the binary's version restores too.
func TestRestoreAcceptsGenuineBackupAtItsVersion(t *testing.T) {
	ctx := context.Background()
	old := migratedStore(t)
	oldBackup := genuineBackup(t, old)
	oldVersion, err := latestVersion()
	if err != nil {
		t.Fatal(err)
	}

	withExtraMigration(t)
	for _, tt := range []struct {
		name string
		src  func(t *testing.T) string
		want int64
	}{
		{"older version", func(*testing.T) string { return oldBackup }, oldVersion},
		{"current version", func(t *testing.T) string { return genuineBackup(t, migratedStore(t)) }, 9999},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src(t)
			rep, err := Check(ctx, src)
			if err != nil || !rep.OK() || rep.SchemaVersion != tt.want {
				t.Fatalf("Check = %+v, %v; want OK at version %d", rep, err, tt.want)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "kimi.db")
			if _, err := Restore(ctx, path, src); err != nil {
				t.Fatalf("Restore of a genuine backup: %v", err)
			}
			noTempFiles(t, dir)
			s := openTest(t, path)
			if _, err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate after restore: %v", err)
			}
			if err := s.Ready(ctx); err != nil {
				t.Fatal(err)
			}
			var admins int
			if err := s.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_admins`).Scan(&admins); err != nil || admins != 1 {
				t.Fatalf("admins = %d, %v", admins, err)
			}
		})
	}
}

// TestRestoreIsBounded: a restore that runs past its timeout is cut off,
// removes its temporary copy and leaves the live database in place.
func TestRestoreIsBounded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "kimi.db")
	s := openTest(t, path)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// 64 MiB: neither copied nor checked within a millisecond.
	if _, err := s.Writer().ExecContext(ctx, `INSERT INTO kimi_audit_log (at_ms, actor, action, detail)
		SELECT 1, 'a', 'big', hex(randomblob(512 << 10)) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 64) SELECT x FROM c)`); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "big.db")
	if err := s.Backup(ctx, big, nil); err != nil {
		t.Fatal(err)
	}
	before := statAll(t, path)
	_, err := RestoreWith(ctx, path, big, RestoreOptions{Timeout: time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RestoreWith past its timeout = %v, want context.DeadlineExceeded", err)
	}
	after := statAll(t, path)
	for name, fi := range before {
		if !os.SameFile(fi, after[name]) {
			t.Errorf("%s replaced by a cut-off restore", name)
		}
	}
	noTempFiles(t, dir)
}

// TestVerificationStatementsAreInterrupted: the restore's bound reaches into
// a running statement — the driver interrupts SQLite when the context ends —
// so a slow query on a maintenance connection cannot outlive the deadline.
func TestVerificationStatementsAreInterrupted(t *testing.T) {
	db, err := openFile(filepath.Join(t.TempDir(), "scratch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var n int64
		done <- db.QueryRowContext(ctx, slowQuery).Scan(&n)
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("an endless query finished")
		}
	case <-time.After(time.Minute):
		t.Fatal("an endless query outlived its context by a minute")
	}
}

func TestNormalizeSQL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"CREATE TABLE t (\n    a  INTEGER,\tb TEXT\n)", "CREATE TABLE t ( a INTEGER, b TEXT )"},
		{"CREATE TABLE t (a TEXT DEFAULT 'x  y') -- note\n", "CREATE TABLE t (a TEXT DEFAULT 'x  y')"},
		{"CREATE TABLE \"my  t\" (a /* c */ INT)", "CREATE TABLE \"my  t\" (a INT)"},
		{"CREATE TABLE t (a TEXT DEFAULT 'it''s  ok')", "CREATE TABLE t (a TEXT DEFAULT 'it''s  ok')"},
		{"CREATE TABLE [a  b] (x)", "CREATE TABLE [a  b] (x)"},
	}
	for _, tt := range tests {
		if got := normalizeSQL(tt.in); got != tt.want {
			t.Errorf("normalizeSQL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCompareSchemaAllowHook: the comparison takes an allow-list for objects
// the core migrations do not create (module tables, later); without it every
// extra object is refused.
func TestCompareSchemaAllowHook(t *testing.T) {
	want := []SchemaObject{{Type: "table", Name: "settings", Table: "settings", SQL: "CREATE TABLE settings (k)", Present: true}}
	got := append([]SchemaObject{{Type: "table", Name: "kudos_points", Table: "kudos_points", SQL: "CREATE TABLE kudos_points (x)", Present: true}}, want...)
	if p := compareSchema(got, want, nil, nil); len(p) != 1 || p[0] != `unexpected table "kudos_points"` {
		t.Fatalf("without an allow-list: %q", p)
	}
	allow := func(o SchemaObject) bool { return strings.HasPrefix(o.Name, "kudos_") }
	if p := compareSchema(got, want, nil, allow); len(p) != 0 {
		t.Fatalf("with an allow-list: %q", p)
	}
}

// noTempFiles fails when a restore left a temporary copy in dir.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(dir, "*.restore-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fileSum(t *testing.T, p string) [32]byte {
	t.Helper()
	return sha256.Sum256(mustRead(t, p))
}

// TestCoreObjectsCarryTheReservedPrefix: every table and index the core
// migrations create (goose's version table included) is named
// kimi_<name>, so no module table `<module>_<table>` can take one of them
// once preflight refuses the module prefix "kimi".
func TestCoreObjectsCarryTheReservedPrefix(t *testing.T) {
	latest, err := latestVersion()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := expectedSchema(context.Background(), latest)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) < 8 {
		t.Fatalf("expected schema has %d objects; the migrations did not run", len(objs))
	}
	for _, o := range objs {
		if !strings.HasPrefix(o.Name, ReservedTablePrefix+"_") || !strings.HasPrefix(o.Table, ReservedTablePrefix+"_") {
			t.Errorf("core %s lacks the reserved prefix %q", o.describe(), ReservedTablePrefix+"_")
		}
	}
}
