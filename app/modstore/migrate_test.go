package modstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

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
