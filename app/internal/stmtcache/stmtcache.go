// Package stmtcache keeps a single goroutine's prepared statements on the
// store's one-connection writer, for a loop that runs the same few
// statements in every write transaction (the scheduler's runner, the
// results dispatcher): parsing them each time would cost as much as
// running them. A statement seen for the first time runs unprepared and is
// prepared after the transaction — the writer has one connection, which
// the transaction holds.
package stmtcache

import (
	"context"
	"database/sql"
	"log/slog"
)

// Cache holds the prepared statements. It is not safe for concurrent use:
// one goroutine (and Close, after it stopped) uses it.
type Cache struct {
	db         *sql.DB
	log        *slog.Logger
	stmts      map[string]*sql.Stmt
	unprepared map[string]bool
}

// New returns an empty cache for statements on db (the writer).
func New(db *sql.DB, log *slog.Logger) *Cache {
	return &Cache{db: db, log: log, stmts: map[string]*sql.Stmt{}, unprepared: map[string]bool{}}
}

// Tx is a write transaction whose statements go through the cache.
type Tx struct {
	*sql.Tx
	c *Cache
}

// Tx wraps tx.
func (c *Cache) Tx(tx *sql.Tx) Tx { return Tx{Tx: tx, c: c} }

func (t Tx) prepared(ctx context.Context, q string) *sql.Stmt {
	if p := t.c.stmts[q]; p != nil {
		return t.Tx.StmtContext(ctx, p)
	}
	t.c.unprepared[q] = true
	return nil
}

// ExecContext runs q through its prepared statement when there is one.
func (t Tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if p := t.prepared(ctx, q); p != nil {
		return p.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, q, args...)
}

// QueryContext runs q through its prepared statement when there is one.
func (t Tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if p := t.prepared(ctx, q); p != nil {
		return p.QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, q, args...)
}

// QueryRowContext runs q through its prepared statement when there is one.
func (t Tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if p := t.prepared(ctx, q); p != nil {
		return p.QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, q, args...)
}

// Pending reports whether statements wait to be prepared.
func (c *Cache) Pending() bool { return len(c.unprepared) > 0 }

// PrepareSeen prepares the statements the last transaction ran
// unprepared (call it with no transaction open); a failure only leaves
// them unprepared.
func (c *Cache) PrepareSeen(ctx context.Context) {
	for q := range c.unprepared {
		p, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			c.log.Warn("statement not prepared", "err", err)
			continue
		}
		c.stmts[q] = p
	}
	clear(c.unprepared)
}

// Close closes the prepared statements.
func (c *Cache) Close() {
	for q, p := range c.stmts {
		_ = p.Close()
		delete(c.stmts, q)
	}
}
