package modstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// leakWrites starts a goroutine that keeps running q on tx, with a ctx of
// its own, until tx is done: a module that goes on using its transaction
// after its migration or write function returned. It reports on the
// returned channel whether any attempt succeeded.
func leakWrites(tx *sql.Tx, q string) <-chan bool {
	out := make(chan bool, 1)
	go func() {
		won := false
		for {
			_, err := tx.ExecContext(context.Background(), q)
			if err == nil {
				won = true
			}
			if errors.Is(err, sql.ErrTxDone) {
				out <- won
				return
			}
		}
	}()
	return out
}

// TestLeakedStatementsAfterReturnStayConfined: statements a module's
// goroutine runs on its transaction after its Up or WriteTx function
// returned are confined until the transaction ends: none reaches a core
// table while the host checks, records and commits.
func TestLeakedStatementsAfterReturnStayConfined(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	const steal = `INSERT OR REPLACE INTO kimi_settings (key, value, updated_at, secret) VALUES ('leaked', 'yes', 0, 0)`
	t.Run("migration", func(t *testing.T) {
		for i := range 20 {
			var won <-chan bool
			_, err := f.m.Migrate(ctx, "leaky", sdk.Permissions{}, []sdk.Migration{{
				Name: fmt.Sprintf("%03d", i),
				Up: func(ctx context.Context, mc sdk.MigrationContext) error {
					won = leakWrites(mc.Tx, steal)
					return nil
				},
			}})
			if err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			if <-won {
				t.Fatalf("a leaked statement of a migration wrote kimi_settings")
			}
			// The ledger now names this migration; start a fresh module.
			if _, err := f.st.Writer().ExecContext(ctx, `DELETE FROM kimi_module_migrations WHERE module = 'leaky'`); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("WriteTx", func(t *testing.T) {
		for range 200 {
			var won <-chan bool
			if err := f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
				won = leakWrites(tx, steal)
				return nil
			}); err != nil {
				t.Fatalf("WriteTx: %v", err)
			}
			if <-won {
				t.Fatalf("a leaked statement of a WriteTx wrote kimi_settings")
			}
		}
	})
	if v, ok, err := f.st.Setting(ctx, "leaked"); err != nil || ok {
		t.Fatalf("kimi_settings leaked = %q, %v, %v", v, ok, err)
	}
}
