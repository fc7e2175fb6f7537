package modstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
	"github.com/kimiapp/kimi/modules/sdk/hostkit/altercases"
)

// TestModuleMigrationsAlterOwnTables: a confined module's migrations run
// ALTER TABLE on its own tables — add, rename and drop columns, rename
// tables within its prefix, rebuild a table as SQLite documents — and
// keep every other route to SQLite's schema, another module's or the
// core's tables refused, with the ledger row absent and nothing changed.
func TestModuleMigrationsAlterOwnTables(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	base := func(p string) sdk.Migration {
		return sdk.Migration{Name: "001_base", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
			return altercases.Exec(altercases.Base)(ctx, mc.Tx, p)
		}}
	}
	step := func(up altercases.Step, p string) sdk.Migration {
		return sdk.Migration{Name: "002_alter", Up: func(ctx context.Context, mc sdk.MigrationContext) error { return up(ctx, mc.Tx, p) }}
	}
	value := func(t *testing.T, q string, args ...any) string {
		t.Helper()
		var s sql.NullString
		if err := f.st.Reader().QueryRowContext(ctx, q, args...).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return s.String
	}
	for i, tt := range altercases.Works {
		t.Run("works/"+tt.Name, func(t *testing.T) {
			module := fmt.Sprintf("alt%d", i)
			p := hostkit.TablePrefix(module)
			if _, err := f.m.Migrate(ctx, module, sdk.Permissions{}, []sdk.Migration{base(p), step(tt.Up, p)}); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			if got := value(t, altercases.Prefixed(tt.Check, p)); got != altercases.Prefixed(tt.Want, p) {
				t.Fatalf("%s = %q, want %q", tt.Check, got, tt.Want)
			}
		})
	}
	schema := func(t *testing.T) string {
		return value(t, `SELECT group_concat(type || ' ' || name || ' ' || tbl_name || ' ' || coalesce(sql, ''), char(10)) FROM (SELECT * FROM sqlite_master ORDER BY name)`)
	}
	for i, tt := range altercases.Refused {
		t.Run("refused/"+tt.Name, func(t *testing.T) {
			module := fmt.Sprintf("ref%d", i)
			p := hostkit.TablePrefix(module)
			if _, err := f.m.Migrate(ctx, module, sdk.Permissions{}, []sdk.Migration{base(p)}); err != nil {
				t.Fatal(err)
			}
			before := schema(t)
			_, err := f.m.Migrate(ctx, module, sdk.Permissions{}, []sdk.Migration{base(p), step(tt.Up, p)})
			if err == nil || !strings.Contains(err.Error(), tt.Want) || !strings.Contains(err.Error(), "module '"+module+"' migration '002_alter'") {
				t.Fatalf("Migrate = %v; want a refusal naming the module and migration, with %q", err, tt.Want)
			}
			if after := schema(t); after != before {
				t.Errorf("the schema changed:\n%s\nwas\n%s", after, before)
			}
			if n := value(t, `SELECT count(*) FROM kimi_module_migrations WHERE module = ? AND name = '002_alter'`, module); n != "0" {
				t.Errorf("ledger rows for the refused step: %s", n)
			}
		})
	}
	t.Run("refused/rename a table another module's view names", func(t *testing.T) {
		// SQLite rewrites every view and trigger naming a renamed table:
		// other's view would change, so the migration rolls back.
		const module = "refview"
		p := hostkit.TablePrefix(module)
		if _, err := f.m.Migrate(ctx, module, sdk.Permissions{}, []sdk.Migration{base(p)}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.st.Writer().ExecContext(ctx, `CREATE VIEW other_v AS SELECT v FROM `+p+`_a`); err != nil {
			t.Fatal(err)
		}
		_, err := f.m.Migrate(ctx, module, sdk.Permissions{}, []sdk.Migration{base(p), step(altercases.Exec(`ALTER TABLE P_a RENAME TO P_b`), p)})
		if err == nil || !strings.Contains(err.Error(), "view 'other_v', which is not the module's own, changed") {
			t.Fatalf("Migrate = %v, want the other module's view named", err)
		}
		if got := value(t, `SELECT sql FROM sqlite_master WHERE name = 'other_v'`); got != `CREATE VIEW other_v AS SELECT v FROM `+p+`_a` {
			t.Fatalf("other's view is now %q", got)
		}
	})
	t.Run("a runtime WriteTx drops its own index and trigger, and no more", func(t *testing.T) {
		// DROP INDEX and DROP TRIGGER open the drop window, unarmed too:
		// the next statement's first action closes it.
		write := func(q string) error {
			return bounded(t, "WriteTx", func() error {
				return f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
					rows, err := tx.QueryContext(ctx, q)
					if err != nil {
						return err
					}
					defer rows.Close()
					for rows.Next() {
					}
					return rows.Err()
				})
			})
		}
		if err := write(`CREATE INDEX kudos_points_v ON kudos_points (v); CREATE TRIGGER kudos_points_t AFTER INSERT ON kudos_points BEGIN SELECT 1; END`); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`DROP INDEX kudos_points_v; SELECT sql FROM sqlite_master`,
			`DROP TRIGGER kudos_points_t; SELECT sql FROM sqlite_master`,
			`DROP INDEX kudos_points_v; DELETE FROM sqlite_sequence`,
		} {
			if err := write(q); err == nil || !strings.Contains(err.Error(), "authorization denied") {
				t.Errorf("%s = %v, want authorization denied", q, err)
			}
		}
		if err := write(`DROP INDEX kudos_points_v; DROP TRIGGER kudos_points_t`); err != nil {
			t.Fatalf("dropping its own index and trigger: %v", err)
		}
		if n := value(t, `SELECT count(*) FROM sqlite_master WHERE name IN ('kudos_points_v', 'kudos_points_t')`); n != "0" {
			t.Fatalf("%s of the dropped objects remain", n)
		}
	})
	t.Run("a runtime WriteTx still cannot alter", func(t *testing.T) {
		err := bounded(t, "WriteTx", func() error {
			return f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `ALTER TABLE kudos_points ADD COLUMN z`)
				return err
			})
		})
		if err == nil || !strings.Contains(err.Error(), "authorization denied") {
			t.Fatalf("WriteTx ALTER = %v, want authorization denied", err)
		}
	})
	if err := f.st.SetSetting(ctx, "after", "alters"); err != nil {
		t.Fatalf("core write after the module migrations: %v", err)
	}
}
