package sdktest

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func createItems(ctx context.Context, mc sdk.MigrationContext) error {
	_, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table("items")+` (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`)
	return err
}

func TestStorageIsARealWALFileWithScopedTables(t *testing.T) {
	s := OpenStorage(t, "my-mod")
	if _, err := os.Stat(s.Path()); err != nil {
		t.Fatalf("database file: %v", err)
	}
	var mode string
	if err := s.Writer().QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode = %q, %v", mode, err)
	}
	if got := s.Table("items"); got != `"my_mod_items"` {
		t.Errorf("table = %s", got)
	}
	if s.Module() != "my-mod" {
		t.Errorf("module = %s", s.Module())
	}
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || err.Error() != "module 'my-mod' table name 'Bad' is not a valid identifier" {
			t.Errorf("invalid table name panicked with %v", r)
		}
	}()
	s.Table("Bad")
}

func TestStorageWriteTxCommitsRollsBackAndRefusesNesting(t *testing.T) {
	ctx := context.Background()
	s := OpenStorage(t, "mod")
	if err := s.Migrate(ctx, []sdk.Migration{{Name: "001_items", Up: createItems}}); err != nil {
		t.Fatal(err)
	}
	insert := func(name string) func(context.Context, *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+s.Table("items")+` (name) VALUES (?)`, name)
			return err
		}
	}
	if err := s.WriteTx(ctx, insert("kept")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := s.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := insert("rolled back")(ctx, tx); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("error = %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = s.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_ = insert("panicked")(ctx, tx)
			panic("kaboom")
		})
	}()
	err = s.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return s.WriteTx(ctx, insert("nested"))
	})
	if err == nil || !strings.Contains(err.Error(), "a writer must never start another writer") {
		t.Errorf("nested write = %v", err)
	}

	var names []string
	rows, err := s.Reader().Query(`SELECT name FROM ` + s.Table("items") + ` ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		names = append(names, n)
	}
	if strings.Join(names, ",") != "kept" {
		t.Errorf("rows = %v, want only the committed one", names)
	}
	if _, err := s.Reader().Exec(`INSERT INTO ` + s.Table("items") + ` (name) VALUES ('x')`); err == nil {
		t.Error("the reader pool accepted a write")
	}
}

func TestStorageMigrateKeepsALedger(t *testing.T) {
	ctx := context.Background()
	s := OpenStorage(t, "mod")
	runs := 0
	second := sdk.Migration{Name: "002_index", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
		runs++
		_, err := mc.Tx.ExecContext(ctx, `CREATE INDEX mod_items_name ON `+mc.Table("items")+` (name)`)
		return err
	}}
	first := sdk.Migration{Name: "001_items", Up: createItems}

	if err := s.Migrate(ctx, []sdk.Migration{first}); err != nil {
		t.Fatal(err)
	}
	// A restart with one more step applies only the new one.
	if err := s.Migrate(ctx, []sdk.Migration{first, second}); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx, []sdk.Migration{first, second}); err != nil || runs != 1 {
		t.Errorf("re-migrate = %v, step ran %d times", err, runs)
	}

	tests := []struct {
		name string
		list []sdk.Migration
		want string
	}{
		{"renamed", []sdk.Migration{{Name: "001_renamed", Up: createItems}, second}, "module 'mod' migration 1 was released as '001_items' and may not change to '001_renamed'"},
		{"removed", []sdk.Migration{first}, "module 'mod' migration '002_index' was applied but is no longer declared"},
		{"duplicate", []sdk.Migration{first, first}, "module 'mod' declares migration '001_items' twice"},
	}
	for _, tt := range tests {
		if err := s.Migrate(ctx, tt.list); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestStorageFailedMigrationStepRollsBack(t *testing.T) {
	ctx := context.Background()
	s := OpenStorage(t, "mod")
	failing := []sdk.Migration{
		{Name: "001_items", Up: createItems},
		{Name: "002_half", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
			if _, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table("half")+` (x)`); err != nil {
				return err
			}
			return errors.New("step failed")
		}},
		{Name: "003_never", Up: createItems},
	}
	if err := s.Migrate(ctx, failing); err == nil || !strings.Contains(err.Error(), "step failed") {
		t.Fatalf("migrate = %v", err)
	}
	var n int
	_ = s.Writer().QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'mod_half'`).Scan(&n)
	if n != 0 {
		t.Error("the failed step's table survived its rollback")
	}
	_ = s.Writer().QueryRow(`SELECT COUNT(*) FROM ` + migrationLedger).Scan(&n)
	if n != 1 {
		t.Errorf("ledger rows = %d, want only the first step", n)
	}
	panicking := []sdk.Migration{{Name: "001_items", Up: createItems}, {Name: "002_bad", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
		mc.Table("Not Valid")
		return nil
	}}}
	if err := s.Migrate(ctx, panicking); err == nil || !strings.Contains(err.Error(), "is not a valid identifier") {
		t.Errorf("panicking step = %v", err)
	}
}
