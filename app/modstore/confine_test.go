package modstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

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

// TestSQLiteTablesAreNobodys: whatever a confined module's prefix (even one
// validation now refuses, "sqlite", whose prefix once made every sqlite_*
// name its own), reading SQLite's own tables — the raw pages of the
// database through sqlite_dbpage, dbstat, the schema — is refused by the
// authorizer, on a reader and on the writer.
func TestSQLiteTablesAreNobodys(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if _, err := f.st.Writer().ExecContext(ctx, `ANALYZE`); err != nil { // creates sqlite_stat1
		t.Fatal(err)
	}
	queries := []string{
		`SELECT data FROM sqlite_dbpage`,
		`SELECT count(*) FROM sqlite_dbpage`,
		`SELECT name, pgsize FROM dbstat`,
		`SELECT count(*) FROM dbstat`,
		`SELECT count(*) FROM DBSTAT`,
		`SELECT sql FROM sqlite_master`,
		`SELECT count(*) FROM sqlite_schema`,
		`SELECT name FROM sqlite_sequence`,
		`SELECT * FROM sqlite_stat1`,
	}
	for _, prefix := range []string{"kudos", "sqlite", "sqlite_x", "SQLite"} {
		for _, write := range []bool{false, true} {
			for _, q := range queries {
				t.Run(fmt.Sprintf("%s/write=%v/%s", prefix, write, q), func(t *testing.T) {
					conn, err := f.st.Writer().Conn(ctx)
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close()
					if err := setAuthorizer(conn, confined(prefix, write, f.m.existing, nil)); err != nil {
						t.Fatal(err)
					}
					defer func() {
						if err := setAuthorizer(conn, nil); err != nil {
							t.Fatal(err)
						}
					}()
					rows, err := conn.QueryContext(ctx, q)
					if err == nil {
						for rows.Next() {
						}
						err = rows.Err()
						rows.Close()
					}
					if err == nil || !strings.Contains(err.Error(), "authorization denied") {
						t.Fatalf("allowed, or refused for another reason than the authorizer: %v", err)
					}
				})
			}
		}
	}
}

// TestEveryCoreTableIsOutOfReach: every kimi_ table the core migrations
// create (found in the schema, so a new migration's tables are covered
// without naming them here) refuses a confined module's read and write,
// on a reader and in a WriteTx.
func TestEveryCoreTableIsOutOfReach(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	rows, err := f.st.Reader().QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'kimi\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	if !slices.Contains(tables, "kimi_assistant_turns") || len(tables) < 10 {
		t.Fatalf("core tables found: %q", tables)
	}
	for _, table := range tables {
		t.Run(table, func(t *testing.T) {
			rows, err := f.kudos.Reader().QueryContext(ctx, `SELECT count(*) FROM `+table)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			if err == nil {
				t.Error("a confined reader counted its rows")
			}
			for _, q := range []string{`SELECT * FROM ` + table, `DELETE FROM ` + table, `DROP TABLE ` + table} {
				err := bounded(t, "WriteTx", func() error {
					return f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
						_, err := tx.ExecContext(ctx, q)
						return err
					})
				})
				if err == nil || !strings.Contains(err.Error(), "authoriz") {
					t.Errorf("%s in a WriteTx: %v, want refused by the authorizer", q, err)
				}
			}
		})
	}
}
