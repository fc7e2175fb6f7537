package sdktest

import (
	"context"
	"database/sql"
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
