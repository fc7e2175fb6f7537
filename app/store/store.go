// Package store owns Kimi's SQLite database: one writer connection that
// serializes every write transaction (BEGIN IMMEDIATE), a small read-only pool,
// the core goose migrations, online backups and restores, the audit log and a
// key/value settings table.
//
// The connection settings follow reference/go-stack-notes.md §B1: busy_timeout
// first, WAL, synchronous NORMAL, foreign keys on, and `_txlock=immediate` on
// the writer so read-then-write transactions never fail with SQLITE_BUSY.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"github.com/kimiapp/kimi/app/internal/ratelog"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Sentinel errors callers may test with errors.Is.
var (
	// ErrNotFound reports a missing row.
	ErrNotFound = errors.New("store: not found")
	// ErrSchemaTooNew reports a database migrated by a newer Kimi than this binary.
	ErrSchemaTooNew = errors.New("store: database schema is newer than this binary")
	// ErrNotMigrated reports a database with pending core migrations.
	ErrNotMigrated = errors.New("store: database has pending migrations")
)

// Options tunes Open. The zero value is ready to use.
type Options struct {
	// Logger receives store messages; nil means slog.Default().
	Logger *slog.Logger
	// ReadConns bounds the read-only pool (default 4). Each SQLite connection
	// has its own page cache, so a small appliance wants few.
	ReadConns int
	// WriteWait bounds how long Write waits for the write lock, queueing
	// for the single writer included (default DefaultWriteWait); past it
	// Write fails with ErrBusy. It is also the writer connection's
	// busy_timeout, so statements on Writer() wait as long.
	WriteWait time.Duration
	// Now is the clock of the write health (nil: time.Now).
	Now func() time.Time
	// WrapConnector, when set, wraps the SQLite connector of the writer and
	// of the read pool (benchmarks count statements, commits and WAL
	// frames with it: benchbase.Counter). A wrapped connection must offer
	// Unwrap() driver.Conn so hostkit.DriverConn still reaches SQLite's.
	WrapConnector func(driver.Connector) driver.Connector
	// CheckpointFrames is how many WAL frames the writer writes between
	// two background checkpoints (0: DefaultCheckpointFrames; see
	// checkpoint.go). Tests lower it to checkpoint all the time.
	CheckpointFrames int
	// WALLimit is the WAL size past which a background checkpoint waits
	// for readers (RESTART; 0: WALHardLimit).
	WALLimit int64
}

// Store is an open Kimi database. It is safe for concurrent use.
type Store struct {
	path     string
	writer   *sql.DB
	reader   *sql.DB
	log      *slog.Logger
	migrated atomic.Bool
	closed   atomic.Bool

	writeWait time.Duration
	now       func() time.Time
	health    health
	limit     *ratelog.Limiter // disk-full lines: one a minute
	ckpt      *checkpointer    // background checkpoints (checkpoint.go)
}

// pragmas are applied to every connection through the DSN, never with Exec,
// so no pooled connection can miss them. busy_timeout (dsn adds it) must
// come first.
var pragmas = []string{
	"journal_mode(WAL)",
	"synchronous(NORMAL)",
	"foreign_keys(ON)",
	"temp_store(MEMORY)",
	"journal_size_limit(67108864)",
	"cache_size(-8000)",
}

// DSN returns the connection string for path. readOnly adds query_only;
// the writer gets `_txlock=immediate`.
func DSN(path string, readOnly bool) string { return dsn(path, readOnly, busyTimeoutMS) }

// dsn is DSN with busy_timeout busyMS (the writer's is its write budget).
func dsn(path string, readOnly bool, busyMS int64) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyMS, 10)+")")
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
	}
	q.Set("_time_format", "sqlite")
	return fileURI(path) + "?" + q.Encode()
}

// fileURI is path as an SQLite file: URI, with '?', '#', '%' and spaces
// escaped so a file name is never read as URI syntax.
func fileURI(path string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath()
}

// Open opens (creating if needed) the database at path with a single writer
// connection and a read-only pool. It does not migrate; call Migrate.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: open: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: open: create data directory: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	readConns := opts.ReadConns
	if readConns <= 0 {
		readConns = 4
	}
	writeWait := opts.WriteWait
	if writeWait <= 0 {
		writeWait = DefaultWriteWait
	}
	// The writer's connections are hostkit.StatementConns: they pass
	// everything through unless a module migration arms its statement
	// boundaries (app/modstore), which its ALTER TABLE needs.
	wrap := opts.WrapConnector
	if wrap == nil {
		wrap = func(c driver.Connector) driver.Connector { return c }
	}
	// The writer never checkpoints inside a commit (wal_autocheckpoint
	// off); it tells the checkpointer how many frames it wrote instead.
	base, err := sqlite.NewConnector(dsn(abs, false, writeWait.Milliseconds()) + "&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		return nil, fmt.Errorf("store: open writer: %w", err)
	}
	var ckpt *checkpointer
	frames := frameConnector{base: base, note: func(n int64) {
		if ckpt != nil {
			ckpt.note(n)
		}
	}}
	writer := sql.OpenDB(hostkit.NewStatementConnector(wrap(frames)))
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxIdleTime(0)
	// The writer connection creates the file and switches it to WAL before
	// any reader opens it (a query_only connection cannot change journal mode).
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, fmt.Errorf("store: open %s: %w", abs, err)
	}
	_ = os.Chmod(abs, 0o600)
	readBase, err := sqlite.NewConnector(DSN(abs, true))
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("store: open reader: %w", err)
	}
	reader := sql.OpenDB(wrap(readBase))
	reader.SetMaxOpenConns(readConns)
	reader.SetMaxIdleConns(readConns)
	if err := reader.PingContext(ctx); err != nil {
		writer.Close()
		reader.Close()
		return nil, fmt.Errorf("store: open reader %s: %w", abs, err)
	}
	st := &Store{path: abs, writer: writer, reader: reader, log: logger, writeWait: writeWait, now: opts.Now}
	if st.now == nil {
		st.now = time.Now
	}
	st.limit = ratelog.New(time.Minute, st.now)
	// The writer is one connection, opened above: the checkpointer is set
	// before any write can note frames.
	ckpt, err = newCheckpointer(ctx, st, opts.CheckpointFrames, opts.WALLimit)
	if err != nil {
		writer.Close()
		reader.Close()
		return nil, err
	}
	st.ckpt = ckpt
	return st, nil
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Writer returns the single writer connection pool. Prefer Write, which wraps
// a transaction; use Writer only for statements that cannot run in one.
func (s *Store) Writer() *sql.DB { return s.writer }

// Reader returns the read-only pool (query_only connections).
func (s *Store) Reader() *sql.DB { return s.reader }

// Write runs fn in one IMMEDIATE transaction on the writer connection and
// commits when fn returns nil; otherwise it rolls back and returns fn's error.
// A panic in fn rolls back and re-panics. Writes are serialized, so fn should
// be short: do slow work (network, bcrypt) before calling Write.
//
// Waiting for the write lock is bounded by Options.WriteWait from the call
// on (ErrBusy past it); a full disk fails with ErrDiskFull. Both update
// WriteHealth, as does every commit.
//
// A ctx marked by a module's running write transaction (MarkWrite) is
// refused at once with ErrNestedWrite: that transaction holds the writer.
func (s *Store) Write(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	if module, ok := WriteMark(ctx); ok {
		return fmt.Errorf("%w (module %q)", ErrNestedWrite, module)
	}
	tx, release, err := s.beginBounded(ctx)
	if err != nil {
		return s.noteWrite(fmt.Errorf("store: begin: %w", err))
	}
	defer release()
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return s.noteWrite(err)
	}
	if err := tx.Commit(); err != nil {
		return s.noteWrite(fmt.Errorf("store: commit: %w", err))
	}
	return s.noteWrite(nil)
}

// Ready reports whether the database answers, has exactly Kimi's schema and
// is fully migrated.
func (s *Store) Ready(ctx context.Context) error {
	if s.closed.Load() {
		return errors.New("store: closed")
	}
	if err := s.reader.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	if !s.migrated.Load() {
		// Until Migrate has passed, readiness needs the schema check too: a
		// refused database must never look ready.
		cur, err := verifySchema(ctx, s.reader)
		if err != nil {
			return err
		}
		latest, err := latestVersion()
		if err != nil {
			return err
		}
		if cur != latest {
			return fmt.Errorf("%w (version %d of %d)", ErrNotMigrated, cur, latest)
		}
		s.migrated.Store(true)
	}
	return nil
}

// Size returns the bytes used by the database file and its WAL.
func (s *Store) Size() (int64, error) {
	var total int64
	for _, p := range []string{s.path, s.path + "-wal"} {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("store: size: %w", err)
		}
		total += fi.Size()
	}
	return total, nil
}

// Close checkpoints the WAL into the main file, runs PRAGMA optimize and
// closes both pools. It is safe to call more than once.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	ctx := context.Background()
	var errs []error
	if err := s.reader.Close(); err != nil {
		errs = append(errs, fmt.Errorf("store: close reader: %w", err))
	}
	if err := s.ckpt.close(); err != nil {
		errs = append(errs, err)
	}
	if _, err := s.writer.ExecContext(ctx, "PRAGMA optimize"); err != nil {
		s.log.Warn("optimize on close", "err", err)
	}
	if _, err := s.writer.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		errs = append(errs, fmt.Errorf("store: checkpoint: %w", err))
	}
	if err := s.writer.Close(); err != nil {
		errs = append(errs, fmt.Errorf("store: close writer: %w", err))
	}
	return errors.Join(errs...)
}
