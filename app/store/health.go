package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// Sentinel errors of a write that could not be made; each wraps the
// driver's *sqlite.Error (or the wait that ran out) as well.
var (
	// ErrDiskFull reports a write refused for lack of space: SQLite's
	// SQLITE_FULL ("database or disk is full"), which modernc also answers
	// when the filesystem under the WAL is full. Nothing was saved.
	ErrDiskFull = errors.New("store: the disk is full")
	// ErrBusy reports a write that could not get the database's write lock
	// within the write budget (Options.WriteWait), queueing for Kimi's single
	// writer included: another process holds the lock. Nothing was saved.
	ErrBusy = errors.New("store: the database is busy")
)

// DefaultWriteWait is the default Options.WriteWait.
const DefaultWriteWait = 5 * time.Second

// busyTimeoutMS is the busy_timeout of DSN's connections (the readers'; the
// writer's is its write budget).
const busyTimeoutMS = 10000

// narrowSlack is how far below the budget the time left must fall before a
// bounded BEGIN narrows the writer's busy_timeout: a write that did not
// queue (nearly all) begins without the two extra statements, overshooting
// its budget by at most this much.
const narrowSlack = 50 * time.Millisecond

// SQLite primary result codes (the low byte of an extended code).
const (
	sqliteBusy = 5
	sqliteFull = 13
)

// Classify returns err wrapped in ErrDiskFull or ErrBusy when the driver
// error inside it says the disk is full or the database is locked, and err
// unchanged otherwise (nil stays nil).
func Classify(err error) error {
	if err == nil || errors.Is(err, ErrDiskFull) || errors.Is(err, ErrBusy) {
		return err
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqliteFull:
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	case sqliteBusy:
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
	return err
}

// Cause names err's class for rate-limited logging: "disk_full", "busy",
// or err's text for any other error.
func Cause(err error) string {
	switch err := Classify(err); {
	case errors.Is(err, ErrDiskFull):
		return "disk_full"
	case errors.Is(err, ErrBusy):
		return "busy"
	default:
		return err.Error()
	}
}

// WriteHealth is what the last writes said about the database's ability to
// save, updated by every write (never polled).
type WriteHealth struct {
	// DiskFullSince is when writes began failing for lack of space; zero
	// while the last such failure has been followed by a successful write.
	DiskFullSince time.Time
	// BusySince is when writes began failing on another process's lock;
	// zero once a write succeeded again.
	BusySince time.Time
}

// health is the Store's WriteHealth with the once-per-episode busy warning.
type health struct {
	mu sync.Mutex
	h  WriteHealth
	// lockWarned and queueWarned: this episode's warnings went out.
	lockWarned, queueWarned bool
}

// WriteHealth returns the current write health.
func (s *Store) WriteHealth() WriteHealth {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return s.health.h
}

// DataDir returns the directory holding the database file (and its WAL).
func (s *Store) DataDir() string { return filepath.Dir(s.path) }

// noteWrite classifies the outcome of a write, updates the write health and
// returns err classified. A nil err (a commit) ends both episodes; errors
// other than disk-full and busy (a caller's validation, a missing row)
// leave the health as it was.
func (s *Store) noteWrite(err error) error {
	err = Classify(err)
	now := s.now()
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	h := &s.health.h
	switch {
	case err == nil:
		if !h.DiskFullSince.IsZero() {
			s.log.Info("writes succeed again: the disk has room", "disk_full_since", h.DiskFullSince)
		}
		if !h.BusySince.IsZero() {
			s.log.Info("writes succeed again: the database lock was released", "busy_since", h.BusySince)
		}
		s.health.h, s.health.lockWarned, s.health.queueWarned = WriteHealth{}, false, false
	case errors.Is(err, ErrDiskFull):
		if h.DiskFullSince.IsZero() {
			h.DiskFullSince = now
		}
		s.limit.Log(context.Background(), s.log, slog.LevelWarn, "disk_full",
			"a write failed: the disk is full; nothing was saved", "data_dir", s.DataDir(), "err", err)
	case errors.Is(err, ErrBusy):
		if h.BusySince.IsZero() {
			h.BusySince = now
		}
		// Once per episode each: naming the cause once is what helps; each
		// refused request is answered 503 anyway. A wait that ended in
		// BEGIN is another connection's lock; one that ended in the queue
		// for the single writer is Kimi's own write holding it (usually one
		// that waits on that lock).
		queued := errors.Is(err, errQueueWait)
		switch {
		case !queued && !s.health.lockWarned:
			s.health.lockWarned = true
			s.log.Warn("the database is busy: another process holds a write lock on "+filepath.Base(s.path)+
				"; likely another kimi on the same data directory (serve or an admin command), a sqlite3 shell with an open transaction, "+
				"or a backup tool copying the file without SQLite's online backup API",
				"path", s.path, "wait", s.writeWait, "err", err)
		case queued && !s.health.queueWarned:
			s.health.queueWarned = true
			s.log.Warn("a write waited its whole budget for Kimi's single writer connection: another write held it that long "+
				"(one waiting on another program's lock, or a long transaction)", "wait", s.writeWait, "err", err)
		}
	}
	return err
}

// NoteWrite records the outcome of a write made on BeginWrite's
// transaction, as Write does for its own: it classifies err (ErrDiskFull,
// ErrBusy), updates the write health (nil, a commit, clears it) and logs a
// refusal as Write's are logged. It returns err classified.
func (s *Store) NoteWrite(err error) error { return s.noteWrite(err) }

// BeginWrite starts an IMMEDIATE transaction on the single writer
// connection within the same one bounded wait as Write (Options.WriteWait,
// the queueing for the writer included), for a caller that needs the
// connection itself (app/modstore installs its authorizer on it). The
// transaction is bound to txCtx. The caller commits or rolls back, closes
// conn, and reports the outcome with NoteWrite; a failure here is not yet
// noted.
func (s *Store) BeginWrite(ctx, txCtx context.Context) (*sql.Conn, *sql.Tx, error) {
	return s.beginOn(ctx, txCtx)
}

// beginBounded starts an IMMEDIATE transaction on the writer within one
// budget (s.writeWait) that starts now: the time spent queueing for the
// single writer connection counts, and SQLite's busy wait gets only what is
// left. The returned release puts the connection back after the transaction
// ends. Running out of budget is ErrBusy; ctx's own end is ctx's error.
func (s *Store) beginBounded(ctx context.Context) (*sql.Tx, func(), error) {
	conn, tx, err := s.beginOn(ctx, ctx)
	if err != nil {
		return nil, nil, err
	}
	return tx, func() { conn.Close() }, nil
}

// beginOn is beginBounded's wait with the transaction bound to txCtx.
func (s *Store) beginOn(ctx, txCtx context.Context) (*sql.Conn, *sql.Tx, error) {
	acq, cancel := context.WithTimeout(ctx, s.writeWait)
	defer cancel()
	deadline, _ := acq.Deadline()
	conn, err := s.writer.Conn(acq)
	if err != nil {
		return nil, nil, s.waitEnded(ctx, acq, err, errQueueWait)
	}
	left := time.Until(deadline)
	if left.Milliseconds() < 1 {
		conn.Close()
		return nil, nil, fmt.Errorf("%w (%w)", ErrBusy, errQueueWait)
	}
	// The writer's busy_timeout is the whole budget; a write that queued
	// (or whose ctx ends sooner) gets only what is left, then the budget
	// back.
	narrow := left < s.writeWait-narrowSlack
	if narrow {
		if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.FormatInt(left.Milliseconds(), 10)); err != nil {
			conn.Close()
			return nil, nil, err
		}
	}
	tx, err := conn.BeginTx(txCtx, nil)
	if err != nil {
		if narrow {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), s.budgetPragma())
		}
		conn.Close()
		return nil, nil, s.waitEnded(ctx, acq, err, errLockWait)
	}
	if narrow {
		if _, err := tx.ExecContext(ctx, s.budgetPragma()); err != nil {
			_ = tx.Rollback()
			conn.Close()
			return nil, nil, err
		}
	}
	return conn, tx, nil
}

// budgetPragma sets the writer's busy_timeout back to the whole budget.
func (s *Store) budgetPragma() string {
	return "PRAGMA busy_timeout = " + strconv.FormatInt(s.writeWait.Milliseconds(), 10)
}

// The two places a bounded wait can end, wrapped beside ErrBusy.
var (
	errQueueWait = errors.New("waited for the single writer connection")
	errLockWait  = errors.New("waited for the write lock")
)

// waitEnded names why waiting in phase (errQueueWait, errLockWait)
// stopped: the budget or ctx's deadline running out, or SQLite's busy
// wait giving up, is ErrBusy (a request's own timeout may be shorter than
// the budget); the caller giving up is err as it is.
func (s *Store) waitEnded(ctx, acq context.Context, err, phase error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	// ctx's own deadline counts too: a parent's cancel closes its Done
	// before it cancels acq, and the driver may have seen the first.
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(acq.Err(), context.DeadlineExceeded) || errors.Is(Classify(err), ErrBusy) {
		return fmt.Errorf("%w (%w after %s): %w", ErrBusy, phase, s.writeWait, err)
	}
	return err
}
