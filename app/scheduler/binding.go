package scheduler

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Hooks connect a binding to its module instance in the host.
type Hooks struct {
	// Invoke runs a handler contained (the host's callback: recover,
	// timeout, health); nil runs it directly.
	Invoke func(ctx context.Context, key string, fn func(context.Context) error) error
	// Health sets (or, with sdk.HealthHealthy and "", clears) a constraint
	// on the module's health under source; nil ignores health.
	Health func(source string, state sdk.HealthState, detail string)
	// Live returns an error once the module instance is revoked; nil: always live.
	Live func() error
}

// Binding is one module instance's sdk.Scheduler. Its jobs outlive it;
// its handlers do not. It runs jobs only between Activate and Close.
type Binding struct {
	s      *Scheduler
	module string
	hooks  Hooks

	mu       sync.Mutex
	handlers map[string]sdk.JobHandler
	active   bool
	closed   bool
	// missing are the jobs marked "has no handler" (key → handler name).
	missing map[string]string
}

var _ sdk.Scheduler = (*Binding)(nil)

// Bind returns the scheduler port of a module instance, replacing the
// module's previous binding (whose handlers are dropped).
func (s *Scheduler) Bind(module string, hooks Hooks) *Binding {
	b := &Binding{s: s, module: module, hooks: hooks, handlers: map[string]sdk.JobHandler{}, missing: map[string]string{}}
	s.mu.Lock()
	old := s.mods[module]
	s.mods[module] = b
	known, active := s.known, s.active
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if known && !active {
		b.reportRunner(false)
	}
	return b
}

// Activate lets the runner claim the module's jobs (call it once the
// module has started and registered its handlers).
func (b *Binding) Activate() {
	b.mu.Lock()
	b.active = !b.closed
	b.mu.Unlock()
	b.s.touch(b.module)
}

// Close drops the handlers; the module's jobs stay. A running job is
// cancelled by the host's close of the module; its lease is released when
// it returns.
func (b *Binding) Close() {
	b.mu.Lock()
	b.closed, b.active = true, false
	b.handlers = map[string]sdk.JobHandler{}
	b.mu.Unlock()
	b.s.mu.Lock()
	if b.s.mods[b.module] == b {
		delete(b.s.mods, b.module)
	}
	b.s.mu.Unlock()
}

func (b *Binding) isActive() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.active && !b.closed
}

func (b *Binding) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

func (b *Binding) handler(name string) sdk.JobHandler {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.handlers[name]
}

func (b *Binding) invoke(ctx context.Context, key string, fn func(context.Context) error) error {
	if b.hooks.Invoke == nil {
		return fn(ctx)
	}
	return b.hooks.Invoke(ctx, key, fn)
}

func (b *Binding) health(source string, state sdk.HealthState, detail string) {
	if b.hooks.Health != nil {
		b.hooks.Health(source, state, detail)
	}
}

// noHandler degrades the module for a job whose handler is not registered.
func (b *Binding) noHandler(key, handler string) {
	b.mu.Lock()
	b.missing[key] = handler
	b.mu.Unlock()
	b.health("scheduler:"+key, sdk.HealthDegraded, "scheduled job "+repr(key)+" has no handler")
}

func (b *Binding) clearMissing(match func(key, handler string) bool) {
	b.mu.Lock()
	var keys []string
	for k, h := range b.missing {
		if match(k, h) {
			keys = append(keys, k)
			delete(b.missing, k)
		}
	}
	b.mu.Unlock()
	for _, k := range keys {
		b.health("scheduler:"+k, sdk.HealthHealthy, "")
	}
}

func (b *Binding) reportRunner(active bool) {
	if active {
		b.health(SourceRunner, sdk.HealthHealthy, "")
	} else {
		b.health(SourceRunner, sdk.HealthDegraded, StandbyDetail)
	}
}

func (b *Binding) live() error {
	if b.hooks.Live != nil {
		if err := b.hooks.Live(); err != nil {
			return err
		}
	}
	if b.isClosed() {
		return fmt.Errorf("scheduler: module %s: the scheduler port is closed", repr(b.module))
	}
	return nil
}

// Register binds a handler name to a function and clears the "has no
// handler" health of the jobs that name it.
func (b *Binding) Register(handlerName string, handler sdk.JobHandler) error {
	if err := hostkit.ValidateHandlerName(handlerName); err != nil {
		return err
	}
	if handler == nil {
		return &sdk.ModuleContractError{Message: "handler " + repr(handlerName) + " is nil"}
	}
	if err := b.live(); err != nil {
		return err
	}
	b.mu.Lock()
	b.handlers[handlerName] = handler
	b.mu.Unlock()
	b.clearMissing(func(_, h string) bool { return h == handlerName })
	b.s.touch(b.module)
	return nil
}

type definition struct {
	key, handler string
	runAt        time.Time
	interval     time.Duration
	jitter       time.Duration
	backoff      sdk.Backoff
	payload      []byte
}

func (b *Binding) define(ctx context.Context, key, handlerName string, payload any, opts sdk.EveryOptions) (definition, error) {
	if err := hostkit.ValidateJobKey(key); err != nil {
		return definition{}, err
	}
	if err := hostkit.ValidateHandlerName(handlerName); err != nil {
		return definition{}, err
	}
	raw, err := hostkit.EncodeJobPayload(payload)
	if err != nil {
		return definition{}, err
	}
	backoff := sdk.DefaultBackoff()
	if opts.Backoff != nil {
		if err := opts.Backoff.Validate(); err != nil {
			return definition{}, err
		}
		backoff = *opts.Backoff
	}
	return definition{key: key, handler: handlerName, jitter: max(opts.Jitter, 0), backoff: backoff, payload: raw}, nil
}

// upsert stores a definition: a fresh revision, attempt 0, no last error;
// an existing lease is kept (its settle will only release it).
func (b *Binding) upsert(ctx context.Context, d definition) error {
	if err := b.live(); err != nil {
		return err
	}
	now := b.s.now().UnixMilli()
	err := b.s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kimi_scheduler_jobs
			(module, job_key, handler, run_at_ms, interval_ns, jitter_ns, backoff_base_ns, backoff_max_ns, backoff_mult,
			 payload, revision, attempt, last_error, created_ms, updated_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, ?, ?)
			ON CONFLICT (module, job_key) DO UPDATE SET handler = excluded.handler, run_at_ms = excluded.run_at_ms,
			 interval_ns = excluded.interval_ns, jitter_ns = excluded.jitter_ns, backoff_base_ns = excluded.backoff_base_ns,
			 backoff_max_ns = excluded.backoff_max_ns, backoff_mult = excluded.backoff_mult, payload = excluded.payload,
			 revision = excluded.revision, attempt = 0, last_error = NULL, updated_ms = excluded.updated_ms`,
			b.module, d.key, d.handler, d.runAt.UnixMilli(), int64(d.interval), int64(d.jitter),
			int64(d.backoff.Base), int64(d.backoff.Max), d.backoff.Multiplier, string(d.payload), newToken(), now, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("scheduler: schedule %s: %w", repr(d.key), err)
	}
	b.s.touch(b.module)
	return nil
}

// RunAt schedules (or replaces) a one-shot job due at when.
func (b *Binding) RunAt(ctx context.Context, key string, when time.Time, handlerName string, payload any) error {
	d, err := b.define(ctx, key, handlerName, payload, sdk.EveryOptions{})
	if err != nil {
		return err
	}
	d.runAt = when
	return b.upsert(ctx, d)
}

// RunEvery schedules (or replaces) a periodic job that first runs now.
func (b *Binding) RunEvery(ctx context.Context, key string, interval time.Duration, handlerName string, payload any, opts sdk.EveryOptions) error {
	if err := hostkit.ValidateInterval(interval); err != nil {
		// key and handler are checked first, as in the reference
		if _, derr := b.define(ctx, key, handlerName, payload, opts); derr != nil {
			return derr
		}
		return err
	}
	d, err := b.define(ctx, key, handlerName, payload, opts)
	if err != nil {
		return err
	}
	d.runAt, d.interval = b.s.now(), interval
	return b.upsert(ctx, d)
}

// Cancel deletes a job; false when there was none.
func (b *Binding) Cancel(ctx context.Context, key string) (bool, error) {
	if err := b.live(); err != nil {
		return false, err
	}
	ok, err := b.s.deleteJob(ctx, b.module, key, nil)
	if err != nil {
		return false, err
	}
	b.clearMissing(func(k, _ string) bool { return k == key })
	return ok, nil
}

// List returns the module's jobs in first-scheduled order.
func (b *Binding) List(ctx context.Context) ([]sdk.JobInfo, error) {
	if err := b.live(); err != nil {
		return nil, err
	}
	jobs, err := b.s.Jobs(ctx, b.module)
	if err != nil {
		return nil, err
	}
	out := make([]sdk.JobInfo, len(jobs))
	for i, j := range jobs {
		out[i] = j.JobInfo
	}
	return out, nil
}

// Job is a job as the admin sees it.
type Job struct {
	sdk.JobInfo
	// LeaseHolder is the process running it ("" when not leased or the
	// lease has expired) until LeasedUntil.
	LeaseHolder string
	LeasedUntil time.Time
}

// Running reports a live lease at now.
func (j Job) Running(now time.Time) bool { return j.LeaseHolder != "" && j.LeasedUntil.After(now) }

// Jobs lists a module's jobs in first-scheduled order.
func (s *Scheduler) Jobs(ctx context.Context, module string) ([]Job, error) {
	rows, err := s.st.Reader().QueryContext(ctx, `SELECT job_key, handler, run_at_ms, interval_ns, attempt,
		coalesce(last_error, ''), coalesce(lease_holder, ''), coalesce(leased_until_ms, 0)
		FROM kimi_scheduler_jobs WHERE module = ? ORDER BY created_ms, rowid`, module)
	if err != nil {
		return nil, fmt.Errorf("scheduler: list jobs: %w", err)
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		var j Job
		var runAt, interval, leased int64
		if err := rows.Scan(&j.Key, &j.Handler, &runAt, &interval, &j.Attempt, &j.LastError, &j.LeaseHolder, &leased); err != nil {
			return nil, fmt.Errorf("scheduler: list jobs: %w", err)
		}
		j.NextRunAt, j.Interval = time.UnixMilli(runAt), time.Duration(interval)
		if leased > 0 {
			j.LeasedUntil = time.UnixMilli(leased)
		} else {
			j.LeaseHolder = ""
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scheduler: list jobs: %w", err)
	}
	return out, nil
}

// Status is the runner's standing for the admin and /readyz.
type Status struct {
	// Active: this process runs jobs. Standby: another holds the lease.
	Active, Standby bool
	// Holder is the lease holder while standby.
	Holder string
	// Running counts the jobs this process runs now.
	Running int
	// Overdue counts jobs due (not leased) at least a second ago.
	Overdue int
}

// Status reports the runner's standing and the overdue jobs.
func (s *Scheduler) Status(ctx context.Context) (Status, error) {
	s.mu.Lock()
	st := Status{Active: s.known && s.active && !s.closed, Standby: s.known && !s.active && !s.closed, Running: len(s.running)}
	if st.Standby {
		st.Holder = s.other
	}
	s.mu.Unlock()
	now := s.now().UnixMilli()
	if err := s.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_scheduler_jobs
		WHERE run_at_ms <= ? AND (leased_until_ms IS NULL OR leased_until_ms <= ?)`, now-1000, now).Scan(&st.Overdue); err != nil {
		return st, fmt.Errorf("scheduler: count overdue jobs: %w", err)
	}
	return st, nil
}

// RunNow makes a job due now and wakes the runner, with an audit row.
func (s *Scheduler) RunNow(ctx context.Context, module, key, actor string) error {
	now := s.now().UnixMilli()
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE kimi_scheduler_jobs SET run_at_ms = ?, updated_ms = ? WHERE module = ? AND job_key = ?`,
			now, now, module, key)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNoJob
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: actor, Action: ActionJobRunNow, Target: module + ":" + key})
	})
	if err != nil {
		if errors.Is(err, ErrNoJob) {
			return fmt.Errorf("scheduler: run now %s: %w", repr(key), ErrNoJob)
		}
		return fmt.Errorf("scheduler: run now %s: %w", repr(key), err)
	}
	s.touch(module)
	return nil
}

// CancelJob deletes a job with an audit row; false when there was none.
func (s *Scheduler) CancelJob(ctx context.Context, module, key, actor string) (bool, error) {
	ok, err := s.deleteJob(ctx, module, key, &store.AuditEntry{Actor: actor, Action: ActionJobCancel, Target: module + ":" + key})
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	b := s.mods[module]
	s.mu.Unlock()
	if b != nil {
		b.clearMissing(func(k, _ string) bool { return k == key })
	}
	return ok, nil
}

func (s *Scheduler) deleteJob(ctx context.Context, module, key string, audit *store.AuditEntry) (bool, error) {
	var deleted bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM kimi_scheduler_jobs WHERE module = ? AND job_key = ?`, module, key)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		deleted = n == 1
		if deleted && audit != nil {
			return store.AuditTx(ctx, tx, *audit)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("scheduler: cancel %s: %w", repr(key), err)
	}
	if deleted {
		s.touch(module)
	}
	return deleted, nil
}

// Modules returns the names of the bound modules.
func (s *Scheduler) Modules() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.mods))
}

func repr(s string) string { return hostkit.Repr(s) }
