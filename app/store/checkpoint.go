package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"

	"github.com/kimiapp/kimi/app/internal/ratelog"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Checkpoints run off the writer's path. SQLite's automatic checkpoint
// (wal_autocheckpoint) runs inside whichever commit takes the WAL past
// 1,000 frames, so one acknowledged write in every few hundred paid for
// copying the whole WAL into kimi.db and two fsyncs. The writer's
// connection has it off; instead it counts the frames each commit wrote
// (SQLITE_DBSTATUS_CACHE_WRITE, read after the commit on the connection
// itself) and, every DefaultCheckpointFrames of them, wakes the
// checkpointer: a goroutine with a connection of its own that runs a
// PASSIVE checkpoint, which never waits for and never blocks a reader or
// the writer. A reader that holds an old snapshot can keep a passive
// checkpoint from finishing; when the WAL then holds more than
// WALHardLimit, the checkpointer runs a RESTART checkpoint, which waits
// (at most checkpointBusyWait) for those readers and holds new writers
// meanwhile, so the WAL cannot grow without bound under sustained writes
// (Options.CheckpointFrames and Options.WALLimit change both thresholds).
// Close stops the checkpointer and then checkpoints (TRUNCATE) into
// kimi.db as before. A crash at any moment loses nothing acknowledged: a
// checkpoint only copies committed frames, and the WAL stays the record
// until a later writer restarts it.
const (
	// DefaultCheckpointFrames is how many WAL frames the writer writes
	// between two background checkpoints (SQLite's own default
	// automatic checkpoint threshold).
	DefaultCheckpointFrames = 1000
	// WALHardLimit is the WAL size past which the checkpointer runs a
	// RESTART checkpoint, waiting for readers (journal_size_limit, the
	// size a reset WAL is truncated to, is the same).
	WALHardLimit = 64 << 20
	// checkpointBusyWait bounds a RESTART checkpoint's wait for readers
	// (and so the writers' wait behind it).
	checkpointBusyWait = time.Second
	// checkpointQuiet is how long after frames the threshold did not
	// reach the checkpointer copies them anyway (a timer, armed by the
	// first such frames).
	checkpointQuiet = 200 * time.Millisecond
)

// CheckpointStats is what the background checkpointer did.
type CheckpointStats struct {
	// Passive and Restart count the checkpoints run of each kind; Failed
	// the ones that failed (each logged, one line a minute).
	Passive, Restart, Failed int64
	// WALFrames is the WAL's frames after the last checkpoint (0 when it
	// was copied whole), Copied how many of them are in kimi.db.
	WALFrames, Copied int64
}

// checkpointer runs the background checkpoints on its own connection.
type checkpointer struct {
	store     *Store  // its writer runs the RESTART checkpoints
	db        *sql.DB // the passive checkpoints' own connection
	log       *slog.Logger
	limit     *ratelog.Limiter
	threshold int64
	walLimit  int64        // bytes: past it, RESTART
	frames    atomic.Int64 // written since the last checkpoint began
	armed     atomic.Bool  // the quiet timer runs
	running   atomic.Bool  // a checkpoint runs (tests wait for it)
	wake      chan struct{}
	stop      chan struct{}
	done      chan struct{}

	restartAt int64 // bytes: after a RESTART readers outlasted, the next one's size (loop only)
	walEst    int64 // frames in the WAL after the last run (0 after a RESTART that copied all; loop only)

	passive, restart, failed atomic.Int64
	walFrames, copied        atomic.Int64
}

// newCheckpointer opens the checkpointer's connection to path and starts it.
func newCheckpointer(ctx context.Context, st *Store, threshold int, walLimit int64) (*checkpointer, error) {
	path, log, limit := st.path, st.log, st.limit
	if threshold <= 0 {
		threshold = DefaultCheckpointFrames
	}
	if walLimit <= 0 {
		walLimit = WALHardLimit
	}
	db, err := sql.Open("sqlite", dsn(path, false, checkpointBusyWait.Milliseconds()))
	if err != nil {
		return nil, fmt.Errorf("store: open checkpointer: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open checkpointer: %w", err)
	}
	c := &checkpointer{store: st, db: db, log: log, limit: limit, threshold: int64(threshold), walLimit: walLimit,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c, nil
}

// note counts frames the writer wrote and wakes the checkpointer every
// threshold of them; below it, the first frames arm the quiet timer, so the
// last frames of a burst are copied too once the writes pause (and the
// next write starts the WAL over). It never blocks.
func (c *checkpointer) note(frames int64) {
	if frames <= 0 {
		return
	}
	if c.frames.Add(frames) >= c.threshold {
		c.signal()
		return
	}
	c.armQuiet()
}

// armQuiet starts the quiet timer unless it is already running.
func (c *checkpointer) armQuiet() {
	if !c.armed.Load() && c.armed.CompareAndSwap(false, true) {
		time.AfterFunc(checkpointQuiet, func() {
			c.armed.Store(false)
			c.signal()
		})
	}
}

// signal wakes the loop; it never blocks.
func (c *checkpointer) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
			c.running.Store(true)
			c.run()
			c.running.Store(false)
		}
	}
}

// run checkpoints PASSIVE and, when the WAL is past its limit, RESTART. A
// passive checkpoint beside the writes never catches their last frames,
// and SQLite starts the WAL over only when a write begins with the WAL
// copied whole; RESTART holds the next writes until it is.
func (c *checkpointer) run() {
	ctx := context.Background()
	pending := c.frames.Swap(0)
	var (
		busy        int
		log, copied int64
		err         error
		size        int64
	)
	// Known to be past the limit already (what the WAL held after the last
	// run and the frames written since): RESTART at once — a PASSIVE first
	// only lets sustained writes run further ahead while it copies.
	if est := (c.walEst + pending) * c.frameBytes(ctx); est > c.walLimit && est > c.restartAt {
		size = est
	} else {
		_, log, copied, err = c.checkpoint(ctx, "PASSIVE")
		c.passive.Add(1)
		size = log * c.frameBytes(ctx)
		if err == nil && size <= c.walLimit {
			c.restartAt = 0
		}
	}
	if err == nil && size > c.walLimit && size > c.restartAt {
		busy, log, copied, err = c.restartOnWriter(ctx)
		c.restart.Add(1)
		c.restartAt = 0
		if err == nil && busy != 0 {
			// Readers outlasted the wait, holding writers for it:
			// the next try waits until the WAL doubled, so a long
			// reader (a backup) costs a few waits, not one every
			// threshold.
			c.restartAt = 2 * size
		}
	}
	c.walEst = log
	if err == nil && busy == 0 && copied == log && size > c.walLimit {
		c.walEst = 0 // restarted whole: the next write starts the WAL over
	}
	if c.frames.Load() > 0 {
		c.armQuiet() // frames came meanwhile: copy them once writes pause
	}
	if err != nil {
		c.failed.Add(1)
		c.limit.Log(ctx, c.log, slog.LevelWarn, "checkpoint", "background checkpoint failed", "err", err)
		return
	}
	c.walFrames.Store(log)
	c.copied.Store(copied)
}

// checkpoint runs one wal_checkpoint of mode and returns whether it was
// kept from finishing (busy), the WAL's frames and those copied. A busy
// RESTART (readers past checkpointBusyWait) is no error.
func (c *checkpointer) checkpoint(ctx context.Context, mode string) (busy int, log, copied int64, err error) {
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &log, &copied); err != nil {
		return 0, 0, 0, fmt.Errorf("store: checkpoint %s: %w", mode, err)
	}
	return busy, log, copied, nil
}

// restartOnWriter runs the RESTART checkpoint on the writer's own
// connection, taken as a write takes it: a checkpoint on a connection of
// its own would wait for the write lock, which a writer busy without pause
// takes again the moment it lets it go, so it would never get it. The
// writes queue behind it meanwhile (within their own WriteWait); its wait
// for readers is bounded by checkpointBusyWait.
func (c *checkpointer) restartOnWriter(ctx context.Context) (busy int, log, copied int64, err error) {
	st := c.store
	acq, cancel := context.WithTimeout(ctx, st.writeWait)
	defer cancel()
	conn, err := st.writer.Conn(acq)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("store: checkpoint RESTART: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.FormatInt(checkpointBusyWait.Milliseconds(), 10)); err != nil {
		return 0, 0, 0, fmt.Errorf("store: checkpoint RESTART: %w", err)
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), st.budgetPragma()); rerr != nil && err == nil {
			err = fmt.Errorf("store: checkpoint RESTART: restore busy_timeout: %w", rerr)
		}
	}()
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &log, &copied); err != nil {
		return 0, 0, 0, fmt.Errorf("store: checkpoint RESTART: %w", err)
	}
	return busy, log, copied, nil
}

// frameBytes is one WAL frame's size: the page and its 24-byte header.
func (c *checkpointer) frameBytes(ctx context.Context) int64 {
	var page int64
	if err := c.db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&page); err != nil || page <= 0 {
		page = 4096
	}
	return page + 24
}

// close stops the checkpointer (a checkpoint running ends first) and
// closes its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	if err := c.db.Close(); err != nil {
		return fmt.Errorf("store: close checkpointer: %w", err)
	}
	return nil
}

func (c *checkpointer) stats() CheckpointStats {
	return CheckpointStats{Passive: c.passive.Load(), Restart: c.restart.Load(), Failed: c.failed.Load(),
		WALFrames: c.walFrames.Load(), Copied: c.copied.Load()}
}

// Checkpoints returns what the background checkpointer did so far.
func (s *Store) Checkpoints() CheckpointStats {
	if s.ckpt == nil {
		return CheckpointStats{}
	}
	return s.ckpt.stats()
}

// frameConnector wraps the writer's SQLite connector: each connection
// tells the checkpointer the frames it wrote after every commit.
type frameConnector struct {
	base driver.Connector
	note func(frames int64)
}

// Connect implements driver.Connector.
func (fc frameConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := fc.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	status, ok := hostkit.DriverConn(conn).(sqlite.DBStatus)
	if !ok {
		return nil, errors.New("store: the writer's connection reports no DBSTATUS")
	}
	w := &frameConn{conn: conn, status: status, note: fc.note}
	w.frames, _, _ = status.Status(sqlite.DBStatusCacheWrite, false)
	return w, nil
}

// Driver implements driver.Connector.
func (fc frameConnector) Driver() driver.Driver { return fc.base.Driver() }

// frameConn forwards every interface modernc's connections implement.
type frameConn struct {
	conn   driver.Conn
	status sqlite.DBStatus
	note   func(frames int64)
	frames int // CACHE_WRITE last seen
	inTx   bool
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
} = (*frameConn)(nil)

// written tells the checkpointer the frames written since last seen.
func (w *frameConn) written() {
	cur, _, err := w.status.Status(sqlite.DBStatusCacheWrite, false)
	if err != nil {
		return
	}
	if d := cur - w.frames; d > 0 {
		w.note(int64(d))
	}
	w.frames = cur
}

// Unwrap returns the driver's connection (hostkit.DriverConn sees through).
func (w *frameConn) Unwrap() driver.Conn { return w.conn }

func (w *frameConn) Prepare(query string) (driver.Stmt, error) {
	return w.PrepareContext(context.Background(), query)
}

func (w *frameConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := w.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &frameStmt{Stmt: s, w: w}, nil
}

func (w *frameConn) Close() error { return w.conn.Close() }

func (w *frameConn) Begin() (driver.Tx, error) {
	return w.BeginTx(context.Background(), driver.TxOptions{})
}

func (w *frameConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := w.conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	w.inTx = true
	return frameTx{Tx: tx, w: w}, nil
}

func (w *frameConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := w.conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	if !w.inTx {
		w.written()
	}
	return r, err
}

func (w *frameConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return w.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (w *frameConn) ResetSession(ctx context.Context) error {
	return w.conn.(driver.SessionResetter).ResetSession(ctx)
}

func (w *frameConn) IsValid() bool { return w.conn.(driver.Validator).IsValid() }

func (w *frameConn) Ping(ctx context.Context) error { return w.conn.(driver.Pinger).Ping(ctx) }

type frameTx struct {
	driver.Tx
	w *frameConn
}

func (t frameTx) Commit() error {
	err := t.Tx.Commit()
	t.w.inTx = false
	t.w.written()
	return err
}

func (t frameTx) Rollback() error {
	err := t.Tx.Rollback()
	t.w.inTx = false
	return err
}

type frameStmt struct {
	driver.Stmt
	w *frameConn
}

var _ interface {
	driver.StmtExecContext
	driver.StmtQueryContext
} = (*frameStmt)(nil)

func (s *frameStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	if !s.w.inTx {
		s.w.written()
	}
	return r, err
}

func (s *frameStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}
