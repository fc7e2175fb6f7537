package modstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// TableInfo describes one of a module's tables for the admin UI.
type TableInfo struct {
	Name string // physical name
	Rows int64
}

// WriteStats are a module's write wait and hold times.
type WriteStats struct {
	Writes             uint64
	WaitTotal, WaitMax time.Duration // waiting for the single writer
	HoldTotal, HoldMax time.Duration // inside the write transaction
	RolledBackOverlong uint64        // writes rolled back past MaxWriteHold
}

// Port is one module's storage.
type Port struct {
	m      *Manager
	module string
	prefix string
	perms  sdk.Permissions
	reader *sql.DB
	raw    *sql.DB // RawStorage's own unconfined pool (nil without it)
	log    *slog.Logger
	closed atomic.Bool

	statsMu sync.Mutex
	stats   WriteStats
}

var _ sdk.Storage = (*Port)(nil)

// Table implements sdk.Storage.
func (p *Port) Table(name string) string { return hostkit.MustTableName(p.module, name) }

// Reader implements sdk.Storage: the module's own read-only, confined pool.
func (p *Port) Reader() *sql.DB { return p.reader }

// WriteTx implements sdk.Storage. A WriteTx (or any writing port) called
// with the ctx of a running WriteTx fails at once with a contract error
// instead of deadlocking the single writer.
func (p *Port) WriteTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if holder, ok := store.WriteMark(ctx); ok {
		return nestedError(holder)
	}
	out := p.writeTx(ctx, fn)
	// The store's write health (the banner, /readyz) and its logs hear a
	// module's writes as they hear Write's: a full disk or a lock is
	// ErrDiskFull or ErrBusy, and a commit clears them.
	return p.m.st.NoteWrite(out)
}

func (p *Port) writeTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	start := time.Now()
	// One bounded wait, the queueing for the writer included (as Write's).
	// The transaction is not bound to ctx (see applyStep): the select
	// below rolls back.
	conn, tx, err := p.m.st.BeginWrite(ctx, context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("modstore: %s write: begin: %w", p.module, err)
	}
	waited := time.Since(start)
	hold := p.m.opts.MaxWriteHold
	txCtx, cancel := context.WithTimeoutCause(ctx, hold, ErrWriteHeldTooLong)
	defer cancel()
	begun := time.Now()
	var hostRollback atomic.Bool
	rollback := func() { hostRollback.Store(true); _ = tx.Rollback() }
	c := newConfinement(p.prefix, true, p.m.existing, &hostRollback)
	if err := setAuthorizer(conn, authorizer(c)); err != nil {
		rollback()
		conn.Close()
		return fmt.Errorf("modstore: %s write: %w", p.module, err)
	}

	type result struct {
		err      error
		panicked bool
		panicVal any
	}
	done := make(chan result, 1)
	fnCtx := store.MarkWrite(txCtx, p.module)
	go func() {
		var r result
		defer func() {
			if v := recover(); v != nil {
				r = result{panicked: true, panicVal: v}
			}
			done <- r
		}()
		r.err = fn(fnCtx, tx)
	}()

	var r result
	returned, overlong := false, false
	select {
	case r = <-done:
		returned = true
	case <-txCtx.Done():
		// Held too long, or the caller gave up: roll back now and free the
		// writer; fn's later statements fail with sql.ErrTxDone. fn's
		// goroutine ends when fn does (a panic then is logged).
		overlong = errors.Is(context.Cause(txCtx), ErrWriteHeldTooLong)
		go func() {
			if late := <-done; late.panicked {
				p.log.Error("write transaction panicked after it was rolled back", "panic", fmt.Sprint(late.panicVal))
			}
		}()
	}
	finish := func() error {
		if err := setAuthorizer(conn, nil); err != nil {
			rollback()
			conn.Close()
			return fmt.Errorf("modstore: %s write: %w", p.module, err)
		}
		return nil
	}
	var out error
	switch {
	case !returned:
		rollback()
		if err := finish(); err != nil {
			out = err
		} else if overlong {
			out = fmt.Errorf("%w: module %s held the writer past %s; rolled back", ErrWriteHeldTooLong, hostkit.Repr(p.module), hold)
			p.log.Error("write transaction held too long; rolled back", "limit", hold)
		} else {
			out = fmt.Errorf("modstore: %s write: %w", p.module, context.Cause(txCtx))
		}
	case r.panicked:
		rollback()
		_ = finish()
	case r.err != nil:
		rollback()
		out = r.err
		if err := finish(); err != nil {
			out = errors.Join(r.err, err)
		}
	default:
		// The authorizer stays installed through COMMIT, and then lets
		// nothing else through: a goroutine fn started may still run
		// statements on tx.
		c.EndTransaction("COMMIT")
		err := tx.Commit()
		if ferr := finish(); ferr != nil {
			out = ferr
			break
		}
		if err != nil {
			if errors.Is(context.Cause(txCtx), ErrWriteHeldTooLong) {
				overlong = true
				out = fmt.Errorf("%w: module %s held the writer past %s; rolled back", ErrWriteHeldTooLong, hostkit.Repr(p.module), hold)
			} else {
				out = fmt.Errorf("modstore: %s write: commit: %w", p.module, err)
			}
		}
	}
	if err := conn.Close(); err != nil && out == nil {
		out = fmt.Errorf("modstore: %s write: release writer: %w", p.module, err)
	}
	p.record(waited, time.Since(begun), overlong)
	if r.panicked {
		panic(r.panicVal)
	}
	return out
}

// record adds one write's timings to the stats.
func (p *Port) record(wait, hold time.Duration, overlong bool) {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	s := &p.stats
	s.Writes++
	s.WaitTotal += wait
	s.WaitMax = max(s.WaitMax, wait)
	s.HoldTotal += hold
	s.HoldMax = max(s.HoldMax, hold)
	if overlong {
		s.RolledBackOverlong++
	}
}

// Raw is the unconfined handle for a module that declared RawStorage (nil
// otherwise), for sdk.Runtime.RawStorage: a pool of its own (one
// read-write connection), not the store's writer, closed with the port,
// so closing it or changing its limits touches nothing of the core. Its
// writes still serialize with every other write on SQLite's database lock
// (busy_timeout): a transaction held open on it holds the core's writes
// back, and a write on it from inside a WriteTx waits out the busy_timeout.
func (p *Port) Raw() *sql.DB {
	if !p.perms.RawStorage || p.closed.Load() {
		return nil
	}
	return p.raw
}

// Tables lists the module's tables with their row counts.
func (p *Port) Tables(ctx context.Context) ([]TableInfo, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	return p.m.Tables(ctx, p.module)
}

// Tables lists module's tables with their row counts, whether or not the
// module runs (its tables are kept while it is disabled).
func (m *Manager) Tables(ctx context.Context, module string) ([]TableInfo, error) {
	if err := hostkit.ValidateModuleName(module); err != nil {
		return nil, err
	}
	prefix := hostkit.TablePrefix(module)
	db := m.st.Reader()
	rows, err := db.QueryContext(ctx,
		`SELECT name FROM sqlite_schema WHERE type = 'table' AND substr(name, 1, ?) = ? ORDER BY name`,
		len(prefix)+1, prefix+"_")
	if err != nil {
		return nil, fmt.Errorf("modstore: %s tables: %w", module, err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("modstore: %s tables: %w", module, err)
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("modstore: %s tables: %w", module, err)
	}
	out := make([]TableInfo, 0, len(names))
	for _, n := range names {
		info := TableInfo{Name: n}
		q := `SELECT count(*) FROM "` + strings.ReplaceAll(n, `"`, `""`) + `"`
		if err := db.QueryRowContext(ctx, q).Scan(&info.Rows); err != nil {
			return nil, fmt.Errorf("modstore: %s tables: count %s: %w", module, n, err)
		}
		out = append(out, info)
	}
	return out, nil
}

// Stats returns the module's write timings.
func (p *Port) Stats() WriteStats {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	return p.stats
}

// Close revokes the port: later calls fail with a clear error (Reader's
// pool is closed: its queries fail with "sql: database is closed").
func (p *Port) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	p.m.mu.Lock()
	delete(p.m.ports, p)
	p.m.mu.Unlock()
	err := p.reader.Close()
	if p.raw != nil {
		err = errors.Join(err, p.raw.Close())
	}
	if err != nil {
		return fmt.Errorf("modstore: close %s: %w", p.module, err)
	}
	return nil
}

// nestedError is the contract error for a write started inside a write.
func nestedError(module string) error {
	return &sdk.ModuleContractError{
		Message: fmt.Sprintf("module %s started a write inside its own write transaction; a writer must never start another writer (it would wait for itself)", hostkit.Repr(module)),
		Err:     store.ErrNestedWrite,
	}
}

func contractf(format string, args ...any) error {
	return &sdk.ModuleContractError{Message: fmt.Sprintf(format, args...)}
}
