package scheduler

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// A claimed job's run: its goroutine, and the settle that records its outcome
// under the lease it was claimed with.

type tokenKey struct{}

// LeaseToken returns the lease token of the run whose handler got ctx
// ("" otherwise): tests and diagnostics record it to prove that no two
// runs of a job overlapped.
func LeaseToken(ctx context.Context) string {
	tok, _ := ctx.Value(tokenKey{}).(string)
	return tok
}

// launch runs a claimed job in its own goroutine; s.mu held.
func (s *Scheduler) launch(c claim) {
	ctx, cancel := context.WithCancel(context.WithValue(s.runCtx, tokenKey{}, c.ex.token))
	c.ex.cancel = cancel
	fn := c.b.handler(c.h)
	s.execs.Add(1)
	go func() {
		defer s.execs.Done()
		defer cancel()
		if fn == nil {
			// The module's binding closed (or its handler went) between the
			// claim and now: nothing to run; the job is released as it was.
			s.complete(completion{ex: c.ex, interrupted: true, failed: true, at: s.now()})
			return
		}
		var (
			recMu    sync.Mutex
			recorded string
			failed   bool
		)
		handlerFn := func(ctx context.Context) (err error) {
			defer func() {
				if v := recover(); v != nil {
					recMu.Lock()
					recorded, failed = fmt.Sprintf("panic: %v", v), true
					recMu.Unlock()
					panic(v) // the host's containment logs it with its stack
				}
			}()
			err = fn(ctx, c.run)
			if err != nil {
				recMu.Lock()
				recorded, failed = err.Error(), true
				recMu.Unlock()
			}
			return err
		}
		err := c.b.invoke(ctx, c.run.Key, handlerFn)
		recMu.Lock()
		msg, bad := recorded, failed
		recMu.Unlock()
		if err != nil && !bad {
			msg, bad = err.Error(), true
		}
		comp := completion{ex: c.ex, err: truncate(msg, sdk.MaxJobErrorLength), failed: bad, at: s.now()}
		if bad && (ctx.Err() != nil || c.b.isClosed() || errors.Is(err, ErrInterrupted)) {
			comp.interrupted = true
		}
		s.complete(comp)
	}()
}

// settle applies one completion, guarded by token and revision; true when
// it deleted the job's row (a one-shot job's success).
func (s *Scheduler) settle(ctx context.Context, tx stx, c completion) (bool, error) {
	ex := c.ex
	atMs := c.at.UnixMilli()
	var (
		res sql.Result
		err error
	)
	switch {
	case c.interrupted:
		// Close or the module's close cut the run short: the job stays as it
		// was, free to be claimed again at once.
		_, err = tx.ExecContext(ctx, `UPDATE kimi_scheduler_jobs SET leased_until_ms = NULL, lease_token = NULL, lease_holder = NULL
			WHERE module = ? AND job_key = ? AND lease_token = ?`, ex.module, ex.key, ex.token)
		if err != nil {
			return false, fmt.Errorf("scheduler: release: %w", err)
		}
		return false, nil
	case !c.failed:
		// A one-shot job (the common case) is deleted in one statement.
		res, err = tx.ExecContext(ctx, `DELETE FROM kimi_scheduler_jobs
			WHERE module = ? AND job_key = ? AND lease_token = ? AND revision = ? AND interval_ns = 0`,
			ex.module, ex.key, ex.token, ex.revision)
		if err != nil {
			return false, fmt.Errorf("scheduler: settle: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return true, nil
		}
		res = nil
		var interval, jitter int64
		err = tx.QueryRowContext(ctx, `SELECT interval_ns, jitter_ns FROM kimi_scheduler_jobs
			WHERE module = ? AND job_key = ? AND lease_token = ? AND revision = ?`, ex.module, ex.key, ex.token, ex.revision).Scan(&interval, &jitter)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil // replaced or stale: release below
			break
		}
		if err != nil {
			return false, fmt.Errorf("scheduler: settle: %w", err)
		}
		if interval == 0 {
			res, err = tx.ExecContext(ctx, `DELETE FROM kimi_scheduler_jobs WHERE module = ? AND job_key = ? AND lease_token = ? AND revision = ?`,
				ex.module, ex.key, ex.token, ex.revision)
		} else {
			next := c.at.Add(time.Duration(interval) + jitterOf(time.Duration(jitter)))
			res, err = tx.ExecContext(ctx, `UPDATE kimi_scheduler_jobs SET run_at_ms = ?, attempt = 0, last_error = NULL,
				leased_until_ms = NULL, lease_token = NULL, lease_holder = NULL, updated_ms = ?
				WHERE module = ? AND job_key = ? AND lease_token = ? AND revision = ?`,
				next.UnixMilli(), atMs, ex.module, ex.key, ex.token, ex.revision)
		}
	default:
		var base, maxB int64
		var mult float64
		var attempt int
		err = tx.QueryRowContext(ctx, `SELECT backoff_base_ns, backoff_max_ns, backoff_mult, attempt FROM kimi_scheduler_jobs
			WHERE module = ? AND job_key = ? AND lease_token = ? AND revision = ?`, ex.module, ex.key, ex.token, ex.revision).Scan(&base, &maxB, &mult, &attempt)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil // replaced or stale: release below
			break
		}
		if err != nil {
			return false, fmt.Errorf("scheduler: settle: %w", err)
		}
		delay := sdk.Backoff{Base: time.Duration(base), Max: time.Duration(maxB), Multiplier: mult}.Delay(attempt)
		res, err = tx.ExecContext(ctx, `UPDATE kimi_scheduler_jobs SET run_at_ms = ?, last_error = ?,
			leased_until_ms = NULL, lease_token = NULL, lease_holder = NULL, updated_ms = ?
			WHERE module = ? AND job_key = ? AND lease_token = ? AND revision = ?`,
			c.at.Add(delay).UnixMilli(), c.err, atMs, ex.module, ex.key, ex.token, ex.revision)
	}
	if err != nil {
		return false, fmt.Errorf("scheduler: settle: %w", err)
	}
	if res != nil {
		if n, _ := res.RowsAffected(); n == 1 {
			return false, nil
		}
	}
	// Stale token or replaced definition: only release our lease.
	if _, err := tx.ExecContext(ctx, `UPDATE kimi_scheduler_jobs SET leased_until_ms = NULL, lease_token = NULL, lease_holder = NULL
		WHERE module = ? AND job_key = ? AND lease_token = ?`, ex.module, ex.key, ex.token); err != nil {
		return false, fmt.Errorf("scheduler: release stale lease: %w", err)
	}
	return false, nil
}

// forget frees the module slot of a settled execution; s.mu held.
func (s *Scheduler) forget(ex *execution) {
	if s.running[ex.module] == ex {
		delete(s.running, ex.module)
	}
}
