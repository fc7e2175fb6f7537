package modstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestNestedWriteFailsAtOnce: inside a WriteTx, a nested WriteTx (its own
// or another port's) and a core write with fn's ctx fail with a contract
// error instead of waiting for the writer the transaction holds.
func TestNestedWriteFailsAtOnce(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	var nested []error
	err := bounded(t, "WriteTx with nested writes", func() error {
		return f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			nested = append(nested,
				f.kudos.WriteTx(ctx, func(context.Context, *sql.Tx) error { return nil }),
				f.other.WriteTx(ctx, func(context.Context, *sql.Tx) error { return nil }),
				f.st.SetSetting(ctx, "k", "v"),
			)
			_, err := f.m.Migrate(ctx, "kudos", sdk.Permissions{}, nil)
			nested = append(nested, err)
			_, err = tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('kept')`)
			return err
		})
	})
	if err != nil {
		t.Fatalf("outer WriteTx: %v", err)
	}
	for i, err := range nested {
		if !errors.Is(err, store.ErrNestedWrite) {
			t.Errorf("nested write %d = %v, want ErrNestedWrite", i, err)
		}
		if i != 2 && (!errors.Is(err, sdk.ErrContract) || !strings.Contains(err.Error(), "module 'kudos' started a write inside its own write transaction")) {
			t.Errorf("nested write %d = %v, want the contract error", i, err)
		}
	}
	var n int
	if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kudos_points WHERE v = 'kept'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("outer write committed %d rows, %v", n, err)
	}
}

// TestOverlongWriteIsRolledBack: a write transaction held past
// MaxWriteHold is rolled back and reported, whether fn honours its ctx, runs
// a statement that never ends, or ignores its ctx entirely; the writer is
// free again at once.
func TestOverlongWriteIsRolledBack(t *testing.T) {
	f := newFixture(t, Options{MaxWriteHold: 300 * time.Millisecond})
	ctx := context.Background()
	release := make(chan struct{})
	defer close(release)
	for _, tt := range []struct {
		name string
		fn   func(ctx context.Context, tx *sql.Tx) error
	}{
		{"waits on its ctx", func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('lost')`); err != nil {
				return err
			}
			<-ctx.Done()
			_, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('lost')`)
			return err
		}},
		{"endless statement", func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('lost')`); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`)
			return err
		}},
		{"ignores its ctx", func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('lost')`); err != nil {
				return err
			}
			<-release
			return nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := f.kudos.Stats().RolledBackOverlong
			err := bounded(t, "overlong WriteTx", func() error { return f.kudos.WriteTx(ctx, tt.fn) })
			if !errors.Is(err, ErrWriteHeldTooLong) || !strings.Contains(err.Error(), "module 'kudos' held the writer past 300ms; rolled back") {
				t.Fatalf("WriteTx = %v, want ErrWriteHeldTooLong", err)
			}
			if got := f.kudos.Stats().RolledBackOverlong - before; got != 1 {
				t.Errorf("RolledBackOverlong grew by %d", got)
			}
			if err := bounded(t, "core write after an overlong module write", func() error { return f.st.SetSetting(ctx, "free", tt.name) }); err != nil {
				t.Fatalf("writer after the rollback: %v", err)
			}
			var n int
			if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kudos_points WHERE v = 'lost'`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d rows of the rolled-back write committed (%v)", n, err)
			}
		})
	}
}

// TestWriteTxErrorAndPanicRollBack: fn's error is returned and its writes
// are rolled back; a panic rolls back and propagates to the caller; the
// stats count every write with its wait and hold times.
func TestWriteTxErrorAndPanicRollBack(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	insert := func(ctx context.Context, tx *sql.Tx) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('undone')`); err != nil {
			t.Error(err)
		}
	}
	boom := errors.New("boom")
	if err := f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error { insert(ctx, tx); return boom }); !errors.Is(err, boom) {
		t.Fatalf("WriteTx = %v, want fn's error", err)
	}
	func() {
		defer func() {
			if p := recover(); p != "kaboom" {
				t.Fatalf("recovered %v, want the panic", p)
			}
		}()
		_ = f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error { insert(ctx, tx); panic("kaboom") })
	}()
	if err := f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('kept')`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var undone, kept int
	if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE v = 'undone'), count(*) FILTER (WHERE v = 'kept') FROM kudos_points`).Scan(&undone, &kept); err != nil {
		t.Fatal(err)
	}
	if undone != 0 || kept != 1 {
		t.Errorf("undone %d kept %d, want 0 and 1", undone, kept)
	}
	s := f.kudos.Stats()
	if s.Writes != 3 || s.HoldTotal <= 0 || s.HoldMax <= 0 || s.HoldMax > s.HoldTotal || s.WaitMax > s.WaitTotal || s.RolledBackOverlong != 0 {
		t.Errorf("Stats = %+v", s)
	}
	tables, err := f.kudos.Tables(ctx)
	if err != nil || len(tables) != 1 || tables[0] != (TableInfo{Name: "kudos_points", Rows: 1}) {
		t.Errorf("Tables = %+v, %v", tables, err)
	}
}

// TestWriteWaitIsMeasured: a write queued behind another's reports the time
// it waited for the writer.
func TestWriteWaitIsMeasured(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	held, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = f.other.WriteTx(ctx, func(context.Context, *sql.Tx) error { close(held); <-release; return nil })
	}()
	<-held
	done := make(chan error, 1)
	go func() { done <- f.kudos.WriteTx(ctx, func(context.Context, *sql.Tx) error { return nil }) }()
	time.Sleep(50 * time.Millisecond) // let it queue; the assertion is on order, not duration
	close(release)
	if err := bounded(t, "queued WriteTx", func() error { return <-done }); err != nil {
		t.Fatal(err)
	}
	if s := f.kudos.Stats(); s.Writes != 1 || s.WaitTotal <= 0 || s.WaitTotal < s.HoldTotal {
		t.Errorf("Stats = %+v: the wait behind the other write is not measured", s)
	}
}

// TestClosedPortRefuses: after Close every call fails clearly.
func TestClosedPortRefuses(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	p, err := f.m.Open(ctx, "gone", sdk.Permissions{RawStorage: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteTx(ctx, func(context.Context, *sql.Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteTx = %v", err)
	}
	if _, err := p.Reader().QueryContext(ctx, `SELECT 1`); err == nil {
		t.Error("Reader answered after Close")
	}
	if p.Raw() != nil {
		t.Error("Raw after Close is not nil")
	}
	if _, err := p.Tables(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Tables = %v", err)
	}
	if err := f.m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Open(ctx, "late", sdk.Permissions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Manager.Close = %v", err)
	}
	if _, err := f.kudos.Reader().QueryContext(ctx, `SELECT 1`); err == nil {
		t.Error("a port's Reader answered after Manager.Close")
	}
	if got := f.kudos.Table("points"); got != `"kudos_points"` {
		t.Errorf("Table = %s", got)
	}
}

// TestLateTablesAreNotCounted: a table created after the module's port
// took its name snapshot (by another module's WriteTx, or the core) is not
// readable through a count(*) either, while the module's own CTEs — named
// with its prefix or without "_" — still work.
func TestLateTablesAreNotCounted(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	if err := f.other.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE other_late (v); INSERT INTO other_late VALUES (1), (2)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Writer().ExecContext(ctx, `CREATE TABLE latecomer_data (v); INSERT INTO latecomer_data VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		q  string
		ok bool
	}{
		{`SELECT count(*) FROM other_late`, false},
		{`SELECT count(*) FROM latecomer_data`, false},
		{`SELECT 1 FROM other_late`, false},
		{`SELECT EXISTS (SELECT 1 FROM latecomer_data)`, false},
		{`WITH recent AS (SELECT v FROM kudos_points) SELECT count(*) FROM recent`, true},
		{`WITH kudos_recent AS (SELECT v FROM kudos_points) SELECT count(*) FROM kudos_recent`, true},
		{`WITH recent(x) AS (SELECT 1) SELECT x FROM recent`, true},
		{`WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT 3) SELECT count(*) FROM n`, true},
		{`SELECT count(*) FROM kudos_points`, true},
	} {
		t.Run(tt.q, func(t *testing.T) {
			var n int
			err := f.kudos.Reader().QueryRowContext(ctx, tt.q).Scan(&n)
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatalf("allowed (%d)", n)
			}
		})
	}
}

// TestRawIsAPoolOfItsOwn: RawStorage's handle is not the store's writer: a
// module that closes it or changes its limits leaves the core's writes and
// the other modules' WriteTx working; a write through it serializes with
// them on SQLite's lock; the port closes it.
func TestRawIsAPoolOfItsOwn(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		abuse func(*sql.DB)
	}{
		{"closed by the module", func(db *sql.DB) { db.Close() }},
		{"limits changed by the module", func(db *sql.DB) { db.SetMaxOpenConns(1); db.SetConnMaxLifetime(time.Nanosecond) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := f.m.Open(ctx, "rawmod", sdk.Permissions{RawStorage: true})
			if err != nil {
				t.Fatal(err)
			}
			raw := p.Raw()
			if raw == nil {
				t.Fatal("Raw is nil with RawStorage")
			}
			if raw == f.st.Writer() || raw == f.st.Reader() {
				t.Errorf("Raw = %p, the store's writer is %p: not a pool of its own", raw, f.st.Writer())
			}
			if _, err := raw.ExecContext(ctx, `INSERT INTO other_data (v) VALUES ('raw')`); err != nil {
				t.Fatalf("raw write: %v", err)
			}
			tt.abuse(raw)
			if err := bounded(t, "core write", func() error { return f.st.SetSetting(ctx, "after.raw", "ok") }); err != nil {
				t.Fatalf("core write after the module's abuse: %v", err)
			}
			if err := bounded(t, "WriteTx", func() error {
				return f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, `INSERT INTO kudos_points (v) VALUES ('after raw')`)
					return err
				})
			}); err != nil {
				t.Fatalf("module write after the abuse: %v", err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if err := raw.PingContext(ctx); err == nil {
				t.Error("the raw pool still answers after the port closed")
			}
		})
	}
}
