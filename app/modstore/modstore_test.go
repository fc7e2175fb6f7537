package modstore

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
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
	return newFixtureStore(t, store.Options{}, opts)
}

// newFixtureStore is newFixture with the store opened on sopts.
func newFixtureStore(t *testing.T, sopts store.Options, opts Options) *fixture {
	t.Helper()
	ctx := context.Background()
	if sopts.Logger == nil {
		sopts.Logger = slog.New(slog.DiscardHandler)
	}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), sopts)
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
