package modstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// wait bounds every wait: a write that hangs must fail the test, not hang it.
const wait = 20 * time.Second

// fixture is a migrated store in t.TempDir() with a Manager, a confined
// module "kudos" (table kudos_points) and "other" (table other_data), and a
// session and a setting in the core tables.
type fixture struct {
	st    *store.Store
	m     *Manager
	kudos *Port
	other *Port
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	f := &fixture{st: st, m: m}
	for _, mod := range []struct{ name, table string }{{"kudos", "points"}, {"other", "data"}} {
		if _, err := m.Migrate(ctx, mod.name, sdk.Permissions{}, []sdk.Migration{createTable(mod.table)}); err != nil {
			t.Fatalf("migrate %s: %v", mod.name, err)
		}
	}
	if f.kudos, err = m.Open(ctx, "kudos", sdk.Permissions{}); err != nil {
		t.Fatal(err)
	}
	if f.other, err = m.Open(ctx, "other", sdk.Permissions{}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetSetting(ctx, "worldtree.key", "secret-value"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Writer().ExecContext(ctx, `INSERT INTO kimi_admins (username, password_hash, created_at, password_changed_at) VALUES ('admin', 'x', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Writer().ExecContext(ctx, `INSERT INTO kimi_sessions (id, secret_hash, admin_id, csrf_token, created_at, last_seen_at, expires_at) VALUES ('s1', x'00', 1, 'c', 1, 1, 4102444800)`); err != nil {
		t.Fatal(err)
	}
	return f
}

// createTable is a migration creating `<module>_<name> (id, v)`.
func createTable(name string) sdk.Migration {
	return sdk.Migration{Name: "001_create_" + name, Up: func(ctx context.Context, mc sdk.MigrationContext) error {
		_, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table(name)+` (id INTEGER PRIMARY KEY, v TEXT)`)
		return err
	}}
}

// bounded runs f and fails the test if it does not return within wait.
func bounded(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(wait):
		t.Fatalf("%s did not return: it hangs", what)
		return nil
	}
}

// TestConfinement: a confined module reads and writes only its own tables,
// whatever route the SQL takes (a subquery, its own view or trigger, a
// pragma, an attach, transaction control); RawStorage's handle is
// unconfined; core writes are unaffected after a module's transaction.
func TestConfinement(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	read := func(q string) func(*Port) error {
		return func(p *Port) error {
			rows, err := p.Reader().QueryContext(ctx, q)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
			}
			return rows.Err()
		}
	}
	write := func(stmts ...string) func(*Port) error {
		return func(p *Port) error {
			return bounded(t, "WriteTx", func() error {
				return p.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
					for _, q := range stmts {
						rows, err := tx.QueryContext(ctx, q)
						if err != nil {
							return err
						}
						for rows.Next() {
						}
						rows.Close()
						if err := rows.Err(); err != nil {
							return err
						}
					}
					return nil
				})
			})
		}
	}
	for _, tt := range []struct {
		name string
		run  func(*Port) error
		ok   bool
	}{
		{"read own table", read(`SELECT id, v FROM kudos_points`), true},
		{"read own table in a WriteTx", write(`SELECT count(*) FROM kudos_points`), true},
		{"rollback of the host's transaction", write(`ROLLBACK`), false},
		{"rollback, then write in autocommit", write(`ROLLBACK`, `INSERT INTO kudos_points (v) VALUES ('outside')`), false},
		{"write own table", write(`INSERT INTO kudos_points (v) VALUES ('a')`, `UPDATE kudos_points SET v = 'b'`, `DELETE FROM kudos_points WHERE v = 'zz'`), true},
		{"pragma table_info of own table", read(`PRAGMA table_info(kudos_points)`), true},
		{"common table expression", read(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5) SELECT count(*) FROM c`), true},
		{"count own rows", read(`SELECT count(*) FROM kudos_points`), true},
		{"constant from sessions", read(`SELECT 1 FROM kimi_sessions`), false},
		{"count another module's rows", read(`SELECT count(*) FROM other_data`), false},
		{"exists in settings", read(`SELECT EXISTS (SELECT 1 FROM kimi_settings WHERE key = 'worldtree.key')`), false},
		{"select sessions", read(`SELECT * FROM kimi_sessions`), false},
		{"count sessions", read(`SELECT count(*) FROM kimi_sessions`), false},
		{"select settings", read(`SELECT value FROM kimi_settings`), false},
		{"settings in a subquery", read(`SELECT (SELECT value FROM kimi_settings LIMIT 1)`), false},
		{"settings joined to own table", read(`SELECT k.id FROM kudos_points k JOIN kimi_settings s ON 1`), false},
		{"admins in a WriteTx", write(`SELECT password_hash FROM kimi_admins`), false},
		{"settings in a WriteTx", write(`SELECT value FROM kimi_settings`), false},
		{"read another module's table", read(`SELECT * FROM other_data`), false},
		{"write another module's table", write(`INSERT INTO other_data (v) VALUES ('x')`), false},
		{"update settings", write(`UPDATE kimi_settings SET value = 'pwned'`), false},
		{"delete sessions", write(`DELETE FROM kimi_sessions`), false},
		{"drop another module's table", write(`DROP TABLE other_data`), false},
		{"create a table outside the prefix", write(`CREATE TABLE kimi_evil (x)`), false},
		{"index on a core table", write(`CREATE INDEX kudos_idx ON kimi_sessions (id)`), false},
		{"trigger on a core table", write(`CREATE TRIGGER kudos_t AFTER DELETE ON kimi_sessions BEGIN SELECT 1; END`), false},
		{"schema table", read(`SELECT sql FROM sqlite_schema`), false},
		{"migration ledger", read(`SELECT * FROM kimi_module_migrations`), false},
		{"pragma query_only off", read(`PRAGMA query_only = 0`), false},
		{"pragma writable_schema", write(`PRAGMA writable_schema = 1`), false},
		{"pragma table_info of a core table", read(`PRAGMA table_info(kimi_sessions)`), false},
		{"attach", write(`ATTACH DATABASE ':memory:' AS x`), false},
		{"commit its own transaction", write(`COMMIT`), false},
		{"temp table", write(`CREATE TEMP TABLE kudos_tmp (x)`), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run(f.kudos)
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "authorization denied")) {
				t.Fatalf("allowed, or refused for another reason than the authorizer: %v", err)
			}
		})
	}

	t.Run("own view over a core table", func(t *testing.T) {
		// Creating it names only the module's own view; reading it reads
		// kimi_settings through it, which the authorizer refuses.
		_ = write(`CREATE VIEW kudos_leak AS SELECT value FROM kimi_settings`)(f.kudos)
		if err := read(`SELECT * FROM kudos_leak`)(f.kudos); err == nil {
			t.Fatal("a module's view read kimi_settings")
		}
	})
	t.Run("own trigger writing a core table", func(t *testing.T) {
		_ = write(`CREATE TRIGGER kudos_wipe AFTER INSERT ON kudos_points BEGIN DELETE FROM kimi_sessions; END`)(f.kudos)
		_ = write(`INSERT INTO kudos_points (v) VALUES ('t')`)(f.kudos)
		var n int
		if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_sessions`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("sessions after the trigger = %d, %v; want 1", n, err)
		}
	})

	t.Run("core data intact and core writes work", func(t *testing.T) {
		v, ok, err := f.st.Setting(ctx, "worldtree.key")
		if err != nil || !ok || v != "secret-value" {
			t.Fatalf("setting = %q %v %v", v, ok, err)
		}
		var tables int
		if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'other_data'`).Scan(&tables); err != nil || tables != 1 {
			t.Fatalf("other_data exists = %d, %v", tables, err)
		}
		if err := f.st.SetSetting(ctx, "after", "module writes"); err != nil {
			t.Fatalf("core write after module transactions: %v", err)
		}
		if _, err := f.st.Writer().ExecContext(ctx, `SELECT count(*) FROM kimi_sessions`); err != nil {
			t.Fatalf("core read on the writer after module transactions: %v", err)
		}
	})

	t.Run("raw storage is unconfined", func(t *testing.T) {
		if f.kudos.Raw() != nil {
			t.Fatal("Raw without RawStorage is not nil")
		}
		raw, err := f.m.Open(ctx, "rawmod", sdk.Permissions{RawStorage: true})
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		var n int
		if err := raw.Raw().QueryRowContext(ctx, `SELECT count(*) FROM kimi_sessions`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("raw count sessions = %d, %v", n, err)
		}
		var v string
		if err := raw.Raw().QueryRowContext(ctx, `SELECT value FROM kimi_settings WHERE key = 'worldtree.key'`).Scan(&v); err != nil || v != "secret-value" {
			t.Fatalf("raw read settings = %q, %v", v, err)
		}
		if _, err := raw.Raw().ExecContext(ctx, `INSERT INTO other_data (v) VALUES ('raw')`); err != nil {
			t.Fatalf("raw write of another module's table: %v", err)
		}
		// Its Reader stays confined.
		if err := read(`SELECT * FROM kimi_sessions`)(raw); err == nil {
			t.Fatal("a RawStorage module's Reader read kimi_sessions")
		}
	})
}

// TestNestedWriteFailsAtOnce: inside a WriteTx, a nested WriteTx (its own
// or another port's) and a core write with fn's ctx fail with a contract
// error instead of waiting for the writer the transaction holds.
func TestNestedWriteFailsAtOnce(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	var nested []error
	err := bounded(t, "WriteTx with nested writes", func() error {
		return f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			nested = append(nested,
				f.kudos.WriteTx(ctx, func(context.Context, *sql.Tx) error { return nil }),
				f.other.WriteTx(ctx, func(context.Context, *sql.Tx) error { return nil }),
				f.st.SetSetting(ctx, "k", "v"),
			)
			_, err := f.m.Migrate(ctx, "kudos", sdk.Permissions{}, nil)
			nested = append(nested, err)
			_, err = tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('kept')`)
			return err
		})
	})
	if err != nil {
		t.Fatalf("outer WriteTx: %v", err)
	}
	for i, err := range nested {
		if !errors.Is(err, store.ErrNestedWrite) {
			t.Errorf("nested write %d = %v, want ErrNestedWrite", i, err)
		}
		if i != 2 && (!errors.Is(err, sdk.ErrContract) || !strings.Contains(err.Error(), "module 'kudos' started a write inside its own write transaction")) {
			t.Errorf("nested write %d = %v, want the contract error", i, err)
		}
	}
	var n int
	if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kudos_points WHERE v = 'kept'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("outer write committed %d rows, %v", n, err)
	}
}

// TestOverlongWriteIsRolledBack: a write transaction held past
// MaxWriteHold is rolled back and reported, whether fn honours its ctx, runs
// a statement that never ends, or ignores its ctx entirely; the writer is
// free again at once.
func TestOverlongWriteIsRolledBack(t *testing.T) {
	f := newFixture(t, Options{MaxWriteHold: 300 * time.Millisecond})
	ctx := context.Background()
	release := make(chan struct{})
	defer close(release)
	for _, tt := range []struct {
		name string
		fn   func(ctx context.Context, tx *sql.Tx) error
	}{
		{"waits on its ctx", func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('lost')`); err != nil {
				return err
			}
			<-ctx.Done()
			_, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('lost')`)
			return err
		}},
		{"endless statement", func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('lost')`); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`)
			return err
		}},
		{"ignores its ctx", func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('lost')`); err != nil {
				return err
			}
			<-release
			return nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := f.kudos.Stats().RolledBackOverlong
			err := bounded(t, "overlong WriteTx", func() error { return f.kudos.WriteTx(ctx, tt.fn) })
			if !errors.Is(err, ErrWriteHeldTooLong) || !strings.Contains(err.Error(), "module 'kudos' held the writer past 300ms; rolled back") {
				t.Fatalf("WriteTx = %v, want ErrWriteHeldTooLong", err)
			}
			if got := f.kudos.Stats().RolledBackOverlong - before; got != 1 {
				t.Errorf("RolledBackOverlong grew by %d", got)
			}
			if err := bounded(t, "core write after an overlong module write", func() error { return f.st.SetSetting(ctx, "free", tt.name) }); err != nil {
				t.Fatalf("writer after the rollback: %v", err)
			}
			var n int
			if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kudos_points WHERE v = 'lost'`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d rows of the rolled-back write committed (%v)", n, err)
			}
		})
	}
}

// TestWriteTxErrorAndPanicRollBack: fn's error is returned and its writes
// are rolled back; a panic rolls back and propagates to the caller; the
// stats count every write with its wait and hold times.
func TestWriteTxErrorAndPanicRollBack(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	insert := func(ctx context.Context, tx *sql.Tx) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('undone')`); err != nil {
			t.Error(err)
		}
	}
	boom := errors.New("boom")
	if err := f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error { insert(ctx, tx); return boom }); !errors.Is(err, boom) {
		t.Fatalf("WriteTx = %v, want fn's error", err)
	}
	func() {
		defer func() {
			if p := recover(); p != "kaboom" {
				t.Fatalf("recovered %v, want the panic", p)
			}
		}()
		_ = f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error { insert(ctx, tx); panic("kaboom") })
	}()
	if err := f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('kept')`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var undone, kept int
	if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE v = 'undone'), count(*) FILTER (WHERE v = 'kept') FROM kudos_points`).Scan(&undone, &kept); err != nil {
		t.Fatal(err)
	}
	if undone != 0 || kept != 1 {
		t.Errorf("undone %d kept %d, want 0 and 1", undone, kept)
	}
	s := f.kudos.Stats()
	if s.Writes != 3 || s.HoldTotal <= 0 || s.HoldMax <= 0 || s.HoldMax > s.HoldTotal || s.WaitMax > s.WaitTotal || s.RolledBackOverlong != 0 {
		t.Errorf("Stats = %+v", s)
	}
	tables, err := f.kudos.Tables(ctx)
	if err != nil || len(tables) != 1 || tables[0] != (TableInfo{Name: "kudos_points", Rows: 1}) {
		t.Errorf("Tables = %+v, %v", tables, err)
	}
}

// TestWriteWaitIsMeasured: a write queued behind another's reports the time
// it waited for the writer.
func TestWriteWaitIsMeasured(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = f.other.WriteTx(ctx, func(context.Context, *sql.Tx) error { close(held); <-release; return nil })
	}()
	<-held
	done := make(chan error, 1)
	go func() { done <- f.kudos.WriteTx(ctx, func(context.Context, *sql.Tx) error { return nil }) }()
	time.Sleep(50 * time.Millisecond) // let it queue; the assertion is on order, not duration
	close(release)
	if err := bounded(t, "queued WriteTx", func() error { return <-done }); err != nil {
		t.Fatal(err)
	}
	if s := f.kudos.Stats(); s.Writes != 1 || s.WaitTotal <= 0 || s.WaitTotal < s.HoldTotal {
		t.Errorf("Stats = %+v: the wait behind the other write is not measured", s)
	}
}

// TestMigrationLedger: applied steps are recorded; the next run applies only
// new ones; a renamed, reordered or removed step and a ledger longer than
// the module's list are refused with the module and migration named.
func TestMigrationLedger(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	step := func(name string) sdk.Migration {
		return sdk.Migration{Name: name, Up: func(ctx context.Context, mc sdk.MigrationContext) error {
			_, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table("t"+name)+` (x)`)
			return err
		}}
	}
	list := func(names ...string) []sdk.Migration {
		var out []sdk.Migration
		for _, n := range names {
			out = append(out, step(n))
		}
		return out
	}
	applied, err := f.m.Migrate(ctx, "led", sdk.Permissions{}, list("001_a", "002_b"))
	if err != nil || strings.Join(applied, ",") != "001_a,002_b" {
		t.Fatalf("first Migrate = %v, %v", applied, err)
	}
	for _, tt := range []struct {
		name  string
		steps []sdk.Migration
		want  string // error substring; "" for success
		apply string
	}{
		{"unchanged", list("001_a", "002_b"), "", ""},
		{"renamed", list("001_a", "002_x"), "module 'led' migration 2 is '002_x' but '002_b' was applied at that position", ""},
		{"reordered", list("002_b", "001_a"), "module 'led' migration 1 is '002_b' but '001_a' was applied at that position", ""},
		{"removed", list("002_b"), "module 'led' migration 1 is '002_b' but '001_a' was applied at that position", ""},
		{"newer ledger", list("001_a"), "module 'led' migration ledger lists 2 migrations but the module declares 1", ""},
		{"none declared", nil, "applied '001_a' is unknown to this version", ""},
		{"duplicate name", list("001_a", "001_a"), "module 'led' declares migration '001_a' twice", ""},
		{"empty name", []sdk.Migration{{Name: " ", Up: step("x").Up}}, "has an empty name", ""},
		{"extended", list("001_a", "002_b", "003_c"), "", "003_c"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.m.Migrate(ctx, "led", sdk.Permissions{}, tt.steps)
			if tt.want == "" {
				if err != nil || strings.Join(got, ",") != tt.apply {
					t.Fatalf("Migrate = %v, %v; want %q applied", got, err, tt.apply)
				}
				return
			}
			if !errors.Is(err, sdk.ErrContract) || !strings.Contains(err.Error(), tt.want) || len(got) != 0 {
				t.Fatalf("Migrate = %v, %v; want %q", got, err, tt.want)
			}
		})
	}
	// Disabling a module keeps its tables: nothing is dropped by a refusal.
	p, err := f.m.Open(ctx, "led", sdk.Permissions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tables, err := p.Tables(ctx)
	if err != nil || len(tables) != 3 {
		t.Fatalf("Tables = %+v, %v; want led_t001_a, led_t002_b, led_t003_c", tables, err)
	}
}

// TestMigrationStepIsAtomic: a step that fails (an error, a panic, or SQL
// outside the module's tables) leaves neither a ledger row nor anything it
// created; the steps before it stay applied.
func TestMigrationStepIsAtomic(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		up   func(ctx context.Context, mc sdk.MigrationContext) error
		want string
	}{
		{"error after a create", func(ctx context.Context, mc sdk.MigrationContext) error {
			if _, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table("half")+` (x)`); err != nil {
				return err
			}
			return errors.New("step broke")
		}, "step broke"},
		{"panic after a create", func(ctx context.Context, mc sdk.MigrationContext) error {
			if _, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table("half")+` (x)`); err != nil {
				return err
			}
			panic("step panicked")
		}, "panic: step panicked"},
		{"core table", func(ctx context.Context, mc sdk.MigrationContext) error {
			if _, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table("half")+` (x)`); err != nil {
				return err
			}
			_, err := mc.Tx.ExecContext(ctx, `DELETE FROM kimi_sessions`)
			return err
		}, "not authorized"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			module := "atom" + strings.ReplaceAll(tt.name, " ", "")
			_, err := f.m.Migrate(ctx, module, sdk.Permissions{}, []sdk.Migration{createTable("base"), {Name: "002_half", Up: tt.up}})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "migration '002_half' failed") {
				t.Fatalf("Migrate = %v, want %q", err, tt.want)
			}
			var ledger []string
			rows, err := f.st.Reader().QueryContext(ctx, `SELECT name FROM kimi_module_migrations WHERE module = ? ORDER BY position`, module)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var n string
				_ = rows.Scan(&n)
				ledger = append(ledger, n)
			}
			rows.Close()
			if strings.Join(ledger, ",") != "001_create_base" {
				t.Errorf("ledger = %v, want only the step before", ledger)
			}
			var half int
			if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = ?`, hostkit.TablePrefix(module)+"_half").Scan(&half); err != nil || half != 0 {
				t.Errorf("the failed step's table exists (%d, %v)", half, err)
			}
			var sessions int
			if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_sessions`).Scan(&sessions); err != nil || sessions != 1 {
				t.Errorf("sessions = %d, %v", sessions, err)
			}
		})
	}
	if err := f.st.SetSetting(ctx, "after", "migrations"); err != nil {
		t.Fatalf("core write after failed migrations: %v", err)
	}
}

// TestReaderPoolIsolation: a module holding every connection of its reader
// pool (rows it never closes) starves only itself: the store's reader (the
// admin UI's queries) and other modules still answer.
func TestReaderPoolIsolation(t *testing.T) {
	f := newFixture(t, Options{ReadConns: 2})
	ctx := context.Background()
	for range 2 {
		rows, err := f.kudos.Reader().QueryContext(ctx, `SELECT id FROM kudos_points`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close() // leaked until the test ends
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := f.kudos.Reader().QueryContext(short, `SELECT id FROM kudos_points`); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third query on the exhausted module pool = %v, want it to wait", err)
	}
	err := bounded(t, "admin queries beside an exhausted module pool", func() error {
		for range 8 { // more than the store's reader pool holds at once
			if _, _, err := f.st.Setting(ctx, "worldtree.key"); err != nil {
				return err
			}
			if _, _, err := f.st.ListAudit(ctx, store.AuditFilter{}); err != nil {
				return err
			}
		}
		rows, err := f.other.Reader().QueryContext(ctx, `SELECT id FROM other_data`)
		if err != nil {
			return err
		}
		return rows.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestClosedPortRefuses: after Close every call fails clearly.
func TestClosedPortRefuses(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	p, err := f.m.Open(ctx, "gone", sdk.Permissions{RawStorage: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteTx(ctx, func(context.Context, *sql.Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteTx = %v", err)
	}
	if _, err := p.Reader().QueryContext(ctx, `SELECT 1`); err == nil {
		t.Error("Reader answered after Close")
	}
	if p.Raw() != nil {
		t.Error("Raw after Close is not nil")
	}
	if _, err := p.Tables(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Tables = %v", err)
	}
	if err := f.m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Open(ctx, "late", sdk.Permissions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Manager.Close = %v", err)
	}
	if _, err := f.kudos.Reader().QueryContext(ctx, `SELECT 1`); err == nil {
		t.Error("a port's Reader answered after Manager.Close")
	}
	if got := f.kudos.Table("points"); got != `"kudos_points"` {
		t.Errorf("Table = %s", got)
	}
}

// TestConfinedMigrationMayDeclareKeysAndUniques: a PRIMARY KEY on a TEXT
// column or a UNIQUE constraint makes SQLite create its own
// sqlite_autoindex_<table>_<n>; a confined migration may (the reference
// module's result_receipts table was refused: "authorization denied"), but
// an index of that shape on another module's table may not.
func TestConfinedMigrationMayDeclareKeysAndUniques(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	exec := func(sql string) sdk.Migration {
		return sdk.Migration{Name: "001", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
			_, err := mc.Tx.ExecContext(ctx, fmt.Sprintf(sql, mc.Table("receipts")))
			return err
		}}
	}
	if _, err := f.m.Migrate(ctx, "keys", sdk.Permissions{},
		[]sdk.Migration{exec(`CREATE TABLE %s (id TEXT PRIMARY KEY, code TEXT UNIQUE, n REAL NOT NULL)`)}); err != nil {
		t.Fatalf("a table with a TEXT primary key and a UNIQUE column: %v", err)
	}
	if _, err := f.m.Migrate(ctx, "other", sdk.Permissions{},
		[]sdk.Migration{exec(`CREATE TABLE %s (x); CREATE UNIQUE INDEX other_x ON keys_receipts (code)`)}); err == nil {
		t.Fatal("a module created an index on another module's table")
	}
}

// TestSequenceOnlyThroughOwnDrop: SQLite's own sqlite_sequence holds the
// AUTOINCREMENT counters of the core tables too. A confined module may drop
// its own tables (plain, AUTOINCREMENT, with a trigger and an index, with
// sqlite_stat1 present; the counter row goes with the table) and views,
// but never delete from sqlite_sequence (or sqlite_stat1) itself — bare,
// with a WHERE, or right after dropping one of its tables.
func TestSequenceOnlyThroughOwnDrop(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	write := func(stmts ...string) error {
		return bounded(t, "WriteTx", func() error {
			return f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
				for _, q := range stmts {
					if _, err := tx.ExecContext(ctx, q); err != nil {
						return fmt.Errorf("%s: %w", q, err)
					}
				}
				return nil
			})
		})
	}
	counters := func(like string) int {
		var n int
		if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM sqlite_sequence WHERE name LIKE ? ESCAPE '\'`, like).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The core's ANALYZE creates sqlite_stat1: every DROP TABLE then also
	// deletes the dropped table's statistics.
	if _, err := f.st.Writer().ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	core := counters(`kimi\_%`)
	if core == 0 {
		t.Fatal("the fixture has no core AUTOINCREMENT counters: the attacks below would prove nothing")
	}
	for _, tt := range []struct {
		name   string
		create []string
		drop   []string
		ok     bool
	}{
		{"drop own plain table", []string{`CREATE TABLE kudos_plain (v)`}, []string{`DROP TABLE kudos_plain`}, true},
		{"drop own AUTOINCREMENT table", []string{`CREATE TABLE kudos_ai (id INTEGER PRIMARY KEY AUTOINCREMENT, v)`, `INSERT INTO kudos_ai (v) VALUES (1)`}, []string{`DROP TABLE kudos_ai`}, true},
		{"drop own table with trigger and index", []string{`CREATE TABLE kudos_tr (id INTEGER PRIMARY KEY AUTOINCREMENT, v)`, `CREATE INDEX kudos_tr_v ON kudos_tr (v)`, `CREATE TRIGGER kudos_tr_t AFTER INSERT ON kudos_tr BEGIN UPDATE kudos_tr SET v = 1 WHERE id = new.id; END`, `INSERT INTO kudos_tr (v) VALUES (1)`}, []string{`DROP TABLE kudos_tr`}, true},
		{"drop own view", []string{`CREATE VIEW kudos_vw AS SELECT v FROM kudos_points`}, []string{`DROP VIEW kudos_vw`}, true},
		{"bare delete", nil, []string{`DELETE FROM sqlite_sequence`}, false},
		{"delete a core counter", nil, []string{`DELETE FROM sqlite_sequence WHERE name = 'kimi_audit_log'`}, false},
		{"update a core counter", nil, []string{`UPDATE sqlite_sequence SET seq = 0`}, false},
		{"delete after an own drop", []string{`CREATE TABLE kudos_d (v)`}, []string{`DROP TABLE kudos_d`, `DELETE FROM sqlite_sequence`}, false},
		{"delete after an own AUTOINCREMENT drop", []string{`CREATE TABLE kudos_d2 (id INTEGER PRIMARY KEY AUTOINCREMENT, v)`, `INSERT INTO kudos_d2 (v) VALUES (1)`}, []string{`DROP TABLE kudos_d2`, `DELETE FROM sqlite_sequence`}, false},
		{"stat delete after an own drop", []string{`CREATE TABLE kudos_d4 (v)`}, []string{`DROP TABLE kudos_d4`, `DELETE FROM sqlite_stat1`}, false},
		{"delete after a refused drop", []string{`CREATE TABLE kudos_d3 (v)`}, []string{`DROP TABLE IF EXISTS kimi_settings`, `DELETE FROM sqlite_sequence`}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.create) > 0 {
				if err := write(tt.create...); err != nil {
					t.Fatalf("create: %v", err)
				}
			}
			err := write(tt.drop...)
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatalf("allowed: %q", tt.drop)
			}
			if got := counters(`kimi\_%`); got != core {
				t.Fatalf("core counters %d → %d", core, got)
			}
			if tt.ok && counters(`kudos\_%`) != 0 {
				t.Errorf("the dropped table's counter row is left")
			}
		})
	}
}

// TestLateTablesAreNotCounted: a table created after the module's port
// took its name snapshot (by another module's WriteTx, or the core) is not
// readable through a count(*) either, while the module's own CTEs — named
// with its prefix or without "_" — still work.
func TestLateTablesAreNotCounted(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if err := f.other.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE other_late (v); INSERT INTO other_late VALUES (1), (2)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Writer().ExecContext(ctx, `CREATE TABLE latecomer_data (v); INSERT INTO latecomer_data VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		q  string
		ok bool
	}{
		{`SELECT count(*) FROM other_late`, false},
		{`SELECT count(*) FROM latecomer_data`, false},
		{`SELECT 1 FROM other_late`, false},
		{`SELECT EXISTS (SELECT 1 FROM latecomer_data)`, false},
		{`WITH recent AS (SELECT v FROM kudos_points) SELECT count(*) FROM recent`, true},
		{`WITH kudos_recent AS (SELECT v FROM kudos_points) SELECT count(*) FROM kudos_recent`, true},
		{`WITH recent(x) AS (SELECT 1) SELECT x FROM recent`, true},
		{`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT 3) SELECT count(*) FROM n`, true},
		{`SELECT count(*) FROM kudos_points`, true},
	} {
		t.Run(tt.q, func(t *testing.T) {
			var n int
			err := f.kudos.Reader().QueryRowContext(ctx, tt.q).Scan(&n)
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatalf("allowed (%d)", n)
			}
		})
	}
}

// TestRawIsAPoolOfItsOwn: RawStorage's handle is not the store's writer: a
// module that closes it or changes its limits leaves the core's writes and
// the other modules' WriteTx working; a write through it serializes with
// them on SQLite's lock; the port closes it.
func TestRawIsAPoolOfItsOwn(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		abuse func(*sql.DB)
	}{
		{"closed by the module", func(db *sql.DB) { db.Close() }},
		{"limits changed by the module", func(db *sql.DB) { db.SetMaxOpenConns(1); db.SetConnMaxLifetime(time.Nanosecond) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := f.m.Open(ctx, "rawmod", sdk.Permissions{RawStorage: true})
			if err != nil {
				t.Fatal(err)
			}
			raw := p.Raw()
			if raw == nil {
				t.Fatal("Raw is nil with RawStorage")
			}
			if raw == f.st.Writer() || raw == f.st.Reader() {
				t.Errorf("Raw = %p, the store's writer is %p: not a pool of its own", raw, f.st.Writer())
			}
			if _, err := raw.ExecContext(ctx, `INSERT INTO other_data (v) VALUES ('raw')`); err != nil {
				t.Fatalf("raw write: %v", err)
			}
			tt.abuse(raw)
			if err := bounded(t, "core write", func() error { return f.st.SetSetting(ctx, "after.raw", "ok") }); err != nil {
				t.Fatalf("core write after the module's abuse: %v", err)
			}
			if err := bounded(t, "WriteTx", func() error {
				return f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('after raw')`)
					return err
				})
			}); err != nil {
				t.Fatalf("module write after the abuse: %v", err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if err := raw.PingContext(ctx); err == nil {
				t.Error("the raw pool still answers after the port closed")
			}
		})
	}
}
