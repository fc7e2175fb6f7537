package assistant

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// The turn's writes run as statements prepared once on the writer's
// connection. Compiling a statement on a table with triggers compiles its
// triggers too (migrations 00014 to 00016 keep summaries and roll-ups on
// every table a turn writes), which was a third of a turn's CPU when each
// write compiled its statement afresh.

// maxPrepared bounds the statements kept prepared; past it a statement
// runs unprepared.
const maxPrepared = 64

// prepareTimeout bounds preparing the statements a transaction wanted.
const prepareTimeout = 5 * time.Second

// preparedSet is the writer's prepared statements by their text, and the
// texts transactions ran unprepared since (prepared after them: a
// statement cannot be prepared on the writer's one connection while a
// transaction holds it).
type preparedSet struct {
	mu     sync.RWMutex
	stmts  map[string]*sql.Stmt
	wanted map[string]bool
}

func (p *preparedSet) get(q string) *sql.Stmt {
	p.mu.RLock()
	s := p.stmts[q]
	p.mu.RUnlock()
	if s != nil {
		return s
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.stmts)+len(p.wanted) < maxPrepared {
		if p.wanted == nil {
			p.wanted = map[string]bool{}
		}
		p.wanted[q] = true
	}
	return nil
}

// prepareWanted prepares the statements transactions wanted on db.
func (p *preparedSet) prepareWanted(ctx context.Context, db *sql.DB) {
	p.mu.Lock()
	wanted := p.wanted
	p.wanted = nil
	p.mu.Unlock()
	if len(wanted) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), prepareTimeout)
	defer cancel()
	for q := range wanted {
		s, err := db.PrepareContext(ctx, q)
		if err != nil {
			continue // it runs unprepared, as before
		}
		p.mu.Lock()
		if p.stmts == nil {
			p.stmts = map[string]*sql.Stmt{}
		}
		if p.stmts[q] == nil {
			p.stmts[q], s = s, nil
		}
		p.mu.Unlock()
		if s != nil {
			s.Close()
		}
	}
}

// txn is a write transaction whose statements run prepared where they
// are (its ExecContext, QueryRowContext and QueryContext).
type txn struct {
	*sql.Tx
	p *preparedSet
}

// ExecContext runs q in the transaction.
func (t txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if s := t.p.get(q); s != nil {
		return t.Tx.StmtContext(ctx, s).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, q, args...)
}

// QueryRowContext runs q in the transaction for one row.
func (t txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if s := t.p.get(q); s != nil {
		return t.Tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, q, args...)
}

// QueryContext runs q in the transaction.
func (t txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s := t.p.get(q); s != nil {
		return t.Tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, q, args...)
}

// write runs fn in one write transaction of the store, its statements
// prepared once they have run (after the transaction: the next one runs
// them prepared).
func (c *Conversations) write(ctx context.Context, fn func(tx txn) error) error {
	err := c.st.Write(ctx, func(tx *sql.Tx) error { return fn(txn{Tx: tx, p: &c.prepared}) })
	c.prepared.prepareWanted(ctx, c.st.Writer())
	return err
}
