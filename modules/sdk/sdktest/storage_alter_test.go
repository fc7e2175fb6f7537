package sdktest

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
	"github.com/kimiapp/kimi/modules/sdk/hostkit/altercases"
)

// TestStorageMigrationsAlterLikeTheHost: the fake's migrations allow and
// refuse the host's table of ALTER TABLE migrations (altercases) alike,
// with the same messages, the ledger row absent and the schema unchanged
// on a refusal; its WriteTx still cannot alter.
func TestStorageMigrationsAlterLikeTheHost(t *testing.T) {
	ctx := context.Background()
	const module = "alt-mod"
	p := hostkit.TablePrefix(module)
	open := func(t *testing.T) *Storage {
		s := OpenStorage(t, module)
		// Another module's table and a core one, as on the appliance.
		if _, err := s.Writer().Exec(`CREATE TABLE other_data (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE kimi_settings (key TEXT PRIMARY KEY, value TEXT)`); err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := sdk.Migration{Name: "001_base", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
		return altercases.Exec(altercases.Base)(ctx, mc.Tx, p)
	}}
	step := func(up altercases.Step) sdk.Migration {
		return sdk.Migration{Name: "002_alter", Up: func(ctx context.Context, mc sdk.MigrationContext) error { return up(ctx, mc.Tx, p) }}
	}
	value := func(t *testing.T, s *Storage, q string, args ...any) string {
		t.Helper()
		var v sql.NullString
		if err := s.Writer().QueryRowContext(ctx, q, args...).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v.String
	}
	for _, tt := range altercases.Works {
		t.Run("works/"+tt.Name, func(t *testing.T) {
			s := open(t)
			if err := s.Migrate(ctx, []sdk.Migration{base, step(tt.Up)}); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			if got, want := value(t, s, altercases.Prefixed(tt.Check, p)), altercases.Prefixed(tt.Want, p); got != want {
				t.Fatalf("%s = %q, want %q", tt.Check, got, want)
			}
		})
	}
	schema := func(t *testing.T, s *Storage) string {
		return value(t, s, `SELECT group_concat(type || ' ' || name || ' ' || tbl_name || ' ' || coalesce(sql, ''), char(10)) FROM (SELECT * FROM sqlite_master ORDER BY name)`)
	}
	for _, tt := range altercases.Refused {
		t.Run("refused/"+tt.Name, func(t *testing.T) {
			s := open(t)
			if err := s.Migrate(ctx, []sdk.Migration{base}); err != nil {
				t.Fatal(err)
			}
			before := schema(t, s)
			err := s.Migrate(ctx, []sdk.Migration{base, step(tt.Up)})
			if err == nil || !strings.Contains(err.Error(), tt.Want) || !strings.Contains(err.Error(), "module "+module+" migration 002_alter") {
				t.Fatalf("Migrate = %v; want a refusal naming the module and migration, with %q", err, tt.Want)
			}
			if after := schema(t, s); after != before {
				t.Errorf("the schema changed:\n%s\nwas\n%s", after, before)
			}
			if n := value(t, s, `SELECT count(*) FROM sdktest_module_migrations WHERE name = '002_alter'`); n != "0" {
				t.Errorf("ledger rows for the refused step: %s", n)
			}
		})
	}
	t.Run("WriteTx still cannot alter", func(t *testing.T) {
		s := open(t)
		if err := s.Migrate(ctx, []sdk.Migration{base}); err != nil {
			t.Fatal(err)
		}
		err := s.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `ALTER TABLE `+p+`_a ADD COLUMN z`)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "authorization denied") {
			t.Fatalf("WriteTx ALTER = %v, want authorization denied", err)
		}
	})
}
