package benchbase

import (
	"context"
	"database/sql/driver"
	"sync/atomic"
	"testing"

	"modernc.org/sqlite"

	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Counter counts what a store's SQLite connections do: the statements the
// writable connections run (each Exec, Query and prepared statement's run),
// the statements of the query_only ones (the read pool: reads, apart, so a
// benchmark's own polling reads do not blur the writes), the commits
// (SQLite's commit hook, so autocommit writes count too) and the WAL frames
// written (SQLITE_DBSTATUS_CACHE_WRITE: in WAL mode, the pages a connection
// writes to the WAL; read after each statement and commit). Pass its Wrap
// as store.Options.WrapConnector; Counts is safe to call at any time.
type Counter struct {
	statements atomic.Int64
	reads      atomic.Int64
	commits    atomic.Int64
	walFrames  atomic.Int64
}

// Counts is a Counter's totals at one moment.
type Counts struct {
	Statements, Reads, Commits, WALFrames int64
}

// Counts returns the totals so far.
func (c *Counter) Counts() Counts {
	return Counts{Statements: c.statements.Load(), Reads: c.reads.Load(), Commits: c.commits.Load(), WALFrames: c.walFrames.Load()}
}

// Sub is the counts from base to c.
func (c Counts) Sub(base Counts) Counts {
	return Counts{Statements: c.Statements - base.Statements, Reads: c.Reads - base.Reads,
		Commits: c.Commits - base.Commits, WALFrames: c.WALFrames - base.WALFrames}
}

// Report reports statements/op (the writer's), reads/op (the read pool's),
// commits/op and wal-frames/op: the counts since base divided by ops.
func (c *Counter) Report(b *testing.B, base Counts, ops int) {
	b.Helper()
	d := c.Counts().Sub(base)
	n := float64(max(ops, 1))
	b.ReportMetric(float64(d.Statements)/n, "statements/op")
	b.ReportMetric(float64(d.Reads)/n, "reads/op")
	b.ReportMetric(float64(d.Commits)/n, "commits/op")
	b.ReportMetric(float64(d.WALFrames)/n, "wal-frames/op")
}

// Wrap returns base with every connection counted.
func (c *Counter) Wrap(base driver.Connector) driver.Connector {
	return countingConnector{base: base, c: c}
}

type countingConnector struct {
	base driver.Connector
	c    *Counter
}

// Connect implements driver.Connector.
func (cc countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := cc.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	w := &countingConn{conn: conn, c: cc.c, stmts: &cc.c.statements}
	if queryOnly(ctx, conn) {
		w.stmts = &cc.c.reads
	}
	raw := hostkit.DriverConn(conn) // SQLite's own, under any other wrapper
	if h, ok := raw.(interface{ RegisterCommitHook(sqlite.CommitHookFn) }); ok {
		h.RegisterCommitHook(func() int32 { cc.c.commits.Add(1); return 0 })
	}
	w.status, _ = raw.(sqlite.DBStatus)
	w.noteFrames()
	return w, nil
}

// Driver implements driver.Connector.
func (cc countingConnector) Driver() driver.Driver { return cc.base.Driver() }

// countingConn forwards every interface modernc's connections implement
// (see sqlite.NewConnector's documentation), counting on the way.
type countingConn struct {
	conn   driver.Conn
	c      *Counter
	status sqlite.DBStatus
	frames int           // the connection's CACHE_WRITE last seen
	stmts  *atomic.Int64 // where its statements count: statements or reads
}

// queryOnly reports whether conn was opened with query_only on (the read
// pool's connections).
func queryOnly(ctx context.Context, conn driver.Conn) bool {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return false
	}
	rows, err := q.QueryContext(ctx, "PRAGMA query_only", nil)
	if err != nil {
		return false
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if rows.Next(v) != nil {
		return false
	}
	n, ok := v[0].(int64)
	return ok && n == 1
}

var _ interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
	driver.Pinger
} = (*countingConn)(nil)

// noteFrames adds the WAL frames the connection wrote since last seen.
func (w *countingConn) noteFrames() {
	if w.status == nil {
		return
	}
	cur, _, err := w.status.Status(sqlite.DBStatusCacheWrite, false)
	if err != nil {
		return
	}
	if cur > w.frames {
		w.c.walFrames.Add(int64(cur - w.frames))
	}
	w.frames = cur
}

// Unwrap returns the driver's connection (hostkit.DriverConn sees through).
func (w *countingConn) Unwrap() driver.Conn { return w.conn }

func (w *countingConn) Prepare(query string) (driver.Stmt, error) {
	return w.PrepareContext(context.Background(), query)
}

func (w *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := w.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &countingStmt{Stmt: s, w: w}, nil
}

func (w *countingConn) Close() error { return w.conn.Close() }

func (w *countingConn) Begin() (driver.Tx, error) {
	return w.BeginTx(context.Background(), driver.TxOptions{})
}

func (w *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := w.conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return countingTx{Tx: tx, w: w}, nil
}

func (w *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	w.stmts.Add(1)
	r, err := w.conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	w.noteFrames()
	return r, err
}

func (w *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	w.stmts.Add(1)
	return w.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (w *countingConn) ResetSession(ctx context.Context) error {
	return w.conn.(driver.SessionResetter).ResetSession(ctx)
}

func (w *countingConn) IsValid() bool { return w.conn.(driver.Validator).IsValid() }

func (w *countingConn) Ping(ctx context.Context) error { return w.conn.(driver.Pinger).Ping(ctx) }

type countingTx struct {
	driver.Tx
	w *countingConn
}

func (t countingTx) Commit() error {
	err := t.Tx.Commit()
	t.w.noteFrames()
	return err
}

type countingStmt struct {
	driver.Stmt
	w *countingConn
}

var _ interface {
	driver.StmtExecContext
	driver.StmtQueryContext
} = (*countingStmt)(nil)

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.w.stmts.Add(1)
	r, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	s.w.noteFrames()
	return r, err
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.w.stmts.Add(1)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}
