package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestModuleTablesPassTheSchemaCheck: tables, indexes, triggers and views a
// module's migrations create (`<prefix>_<name>` on module tables) do not
// make the database look foreign to start-up, doctor or restore.
func TestModuleTablesPassTheSchemaCheck(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	for _, stmt := range []string{
		`CREATE TABLE kudos_points (user_id INTEGER PRIMARY KEY, n INTEGER NOT NULL) STRICT`,
		`CREATE TABLE kudos_log (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER, note TEXT UNIQUE)`,
		`CREATE INDEX kudos_log_at ON kudos_log (at)`,
		`CREATE TRIGGER kudos_log_count AFTER INSERT ON kudos_log BEGIN UPDATE kudos_points SET n = n + 1; END`,
		`CREATE VIEW kudos_top AS SELECT user_id FROM kudos_points ORDER BY n DESC LIMIT 10`,
		`INSERT INTO kudos_log (at) VALUES (1)`,
	} {
		if _, err := s.Writer().ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := verifySchema(ctx, s.Reader()); err != nil {
		t.Fatalf("schema check with module tables: %v", err)
	}
	rep, err := Check(ctx, genuineBackup(t, s))
	if err != nil || !rep.OK() {
		t.Fatalf("Check of a backup with module tables = %+v, %v", rep, err)
	}
}

// TestWriteRefusesAMarkedContext: a write with the context of a module's
// write transaction fails at once instead of waiting for the writer that
// transaction holds.
func TestWriteRefusesAMarkedContext(t *testing.T) {
	s := migratedStore(t)
	ctx := MarkWrite(context.Background(), "kudos")
	if m, ok := WriteMark(ctx); !ok || m != "kudos" {
		t.Fatalf("WriteMark = %q, %v", m, ok)
	}
	conn, err := s.Writer().Conn(context.Background()) // the writer is taken
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	done := make(chan error, 1)
	go func() { done <- s.SetSetting(ctx, "k", "v") }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNestedWrite) || !strings.Contains(err.Error(), `"kudos"`) {
			t.Fatalf("Write with a marked ctx = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Write with a marked ctx waited for the writer")
	}
	if _, ok := WriteMark(context.Background()); ok {
		t.Error("an unmarked ctx reports a mark")
	}
}

// TestOpenReadPool: the extra pool is query-only, bounded, separate from
// the store's reader, and its setup hook runs on every new connection (an
// error refuses the connection).
func TestOpenReadPool(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	var setups atomic.Int32
	pool, err := s.OpenReadPool(ctx, 2, func(driver.Conn) error { setups.Add(1); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.ExecContext(ctx, `INSERT INTO kimi_settings (key, value, updated_at) VALUES ('x', 'y', 0)`); err == nil {
		t.Error("the read pool wrote")
	}
	a, _ := pool.Conn(ctx)
	b, _ := pool.Conn(ctx)
	defer a.Close()
	defer b.Close()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if c, err := pool.Conn(short); err == nil {
		c.Close()
		t.Error("a third connection opened in a pool of 2")
	}
	if _, _, err := s.Setting(ctx, "absent"); err != nil {
		t.Errorf("store reader while the pool is exhausted: %v", err)
	}
	if n := setups.Load(); n != 2 {
		t.Errorf("setup ran %d times, want 2", n)
	}
	refused, err := s.OpenReadPool(ctx, 1, func(driver.Conn) error { return errors.New("no") })
	if err == nil || !strings.Contains(err.Error(), "set up connection: no") {
		t.Errorf("OpenReadPool with a failing hook = %v", err)
	}
	if refused != nil {
		refused.Close()
	}
}
