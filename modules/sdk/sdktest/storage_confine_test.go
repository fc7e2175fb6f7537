package sdktest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestStorageIsConfinedLikeTheHost: the fake's migrations and WriteTx run
// under the host's authorizer (hostkit.Confinement), so what the host
// refuses fails in a module's unit tests too, with the same "authorization
// denied", and the module's own work still passes.
func TestStorageIsConfinedLikeTheHost(t *testing.T) {
	ctx := context.Background()
	exec := func(stmts ...string) func(ctx context.Context, tx *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
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
		}
	}
	for _, tt := range []struct {
		name  string
		stmts []string
		ok    bool
	}{
		{"own table, index, trigger, rows", []string{
			`CREATE TABLE my_mod_items (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE)`,
			`CREATE INDEX my_mod_items_name ON my_mod_items (name)`,
			`CREATE TRIGGER my_mod_t AFTER INSERT ON my_mod_items BEGIN UPDATE my_mod_items SET name = name; END`,
			`INSERT INTO my_mod_items (name) VALUES ('a')`,
			`SELECT count(*) FROM my_mod_items`,
			`DROP TABLE my_mod_items`,
		}, true},
		{"a core table", []string{`CREATE TABLE kimi_evil (x)`}, false},
		{"another module's table", []string{`CREATE TABLE other_x (x)`, `SELECT * FROM other_x`}, false},
		{"the ledger", []string{`SELECT * FROM sdktest_module_migrations`}, false},
		{"the schema", []string{`SELECT sql FROM sqlite_master`}, false},
		{"raw pages", []string{`SELECT data FROM sqlite_dbpage`}, false},
		{"page statistics", []string{`SELECT count(*) FROM dbstat`}, false},
		{"writable_schema", []string{`PRAGMA writable_schema = 1`}, false},
		{"attach", []string{`ATTACH DATABASE ':memory:' AS x`}, false},
		{"commit", []string{`COMMIT`}, false},
	} {
		check := func(t *testing.T, err error) {
			t.Helper()
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), "authorization denied")) {
				t.Fatalf("allowed, or refused for another reason than the authorizer: %v", err)
			}
		}
		t.Run("migrate/"+tt.name, func(t *testing.T) {
			s := OpenStorage(t, "my-mod")
			fn := exec(tt.stmts...)
			err := s.Migrate(ctx, []sdk.Migration{{Name: "step", Up: func(ctx context.Context, mc sdk.MigrationContext) error { return fn(ctx, mc.Tx) }}})
			check(t, err)
			var n int
			if err := s.Writer().QueryRow(`SELECT count(*) FROM sdktest_module_migrations`).Scan(&n); err != nil || n != map[bool]int{true: 1, false: 0}[tt.ok] {
				t.Fatalf("ledger rows = %d, %v", n, err)
			}
		})
		t.Run("writetx/"+tt.name, func(t *testing.T) {
			s := OpenStorage(t, "my-mod")
			check(t, s.WriteTx(ctx, exec(tt.stmts...)))
			// The writer is unconfined again for fixtures.
			if _, err := s.Writer().Exec(`CREATE TABLE fixture_x (x)`); err != nil {
				t.Fatalf("fixture write after a WriteTx: %v", err)
			}
		})
	}
}

// TestReaderIsConfinedLikeTheHost: the read-only pool a module reads
// through carries the host reader's confinement (hostkit.Confinement,
// read-only) on every connection, so a module's unit test can read its own
// tables and nothing else: not the core's kimi_…, not another module's,
// not SQLite's own tables, as on the host. (app/modstore's
// TestReaderRefusalsMatchSdktest compares the two refusals' text.)
func TestReaderIsConfinedLikeTheHost(t *testing.T) {
	ctx := context.Background()
	s := OpenStorage(t, "my-mod")
	if err := s.Migrate(ctx, []sdk.Migration{{Name: "001_items", Up: createItems}}); err != nil {
		t.Fatal(err)
	}
	// The objects a module must not read exist (a fixture write, on the
	// unconfined writer), so a refusal is the authorizer's and not
	// "no such table".
	for _, q := range []string{`CREATE TABLE kimi_x (v)`, `CREATE TABLE other_x (v)`, `INSERT INTO kimi_x VALUES ('secret')`, `INSERT INTO my_mod_items (name) VALUES ('a')`} {
		if _, err := s.Writer().Exec(q); err != nil {
			t.Fatalf("fixture %s: %v", q, err)
		}
	}
	// The pool's four connections, each held at once: every one is
	// confined, not only the first.
	conns := make([]*sql.Conn, 4)
	for i := range conns {
		c, err := s.Reader().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	for _, tt := range []struct {
		name, query string
		ok          bool
	}{
		{"own table", `SELECT name FROM my_mod_items`, true},
		{"own table counted", `SELECT count(*) FROM my_mod_items`, true},
		{"own table's columns", `PRAGMA table_info(my_mod_items)`, true},
		{"a core table", `SELECT v FROM kimi_x`, false},
		{"a core table counted", `SELECT count(*) FROM kimi_x`, false},
		{"another module's table", `SELECT v FROM other_x`, false},
		{"another module's table counted", `SELECT count(*) FROM other_x`, false},
		{"the fake's ledger", `SELECT count(*) FROM sdktest_module_migrations`, false},
		{"the schema", `SELECT sql FROM sqlite_master`, false},
		{"raw pages", `SELECT data FROM sqlite_dbpage`, false},
		{"page statistics", `SELECT count(*) FROM dbstat`, false},
		{"a core table's columns", `PRAGMA table_info(kimi_x)`, false},
	} {
		for i, conn := range conns {
			t.Run(fmt.Sprintf("%s/conn %d", tt.name, i), func(t *testing.T) {
				err := drain(conn.QueryContext(ctx, tt.query))
				if tt.ok && err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !tt.ok && (err == nil || !strings.Contains(err.Error(), "authorization denied")) {
					t.Fatalf("allowed, or refused for another reason than the authorizer: %v", err)
				}
			})
		}
	}
}

// drain reads rows to the end and returns the first error.
func drain(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
	}
	return rows.Err()
}
