// Package scheduler is the durable job scheduler behind the SDK's Scheduler
// port (reference/kimi-agent-host.md §2.3): jobs are rows of
// kimi_scheduler_jobs that survive restarts and kill -9, claimed under a
// lease with a token, heartbeaten while they run and settled under that
// token and the job's definition revision.
//
// It is event-driven, not polled: an enqueue or a completion signals the
// one runner goroutine, which settles every completion that is waiting,
// claims up to the free slots (at most one running job per module, four
// overall) and renews its leases in a single write transaction, then arms
// one timer for the earliest moment anything can change (the next due row,
// a lease expiring, the lease renewal). A single-runner lease in
// kimi_scheduler_runner makes a second process on the same database stand
// by until the first one's lease expires.
package scheduler

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kimiapp/kimi/app/internal/stmtcache"
	"github.com/kimiapp/kimi/app/internal/wake"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Defaults (reference §2.3).
const (
	// DefaultLease is how long a claim or the runner lease lasts; both are
	// renewed at half of it.
	DefaultLease = 60 * time.Second
	// DefaultMaxRunning bounds the jobs running at once across modules.
	DefaultMaxRunning = 4
	// DefaultCancelGrace is how long Close waits for cancelled jobs.
	DefaultCancelGrace = 5 * time.Second
	// UnhandledRetry is how long a job whose handler is not registered waits.
	UnhandledRetry = 60 * time.Second
)

// Audit actions of the admin's job controls.
const (
	ActionJobRunNow = "scheduler.run_now"
	ActionJobCancel = "scheduler.cancel"
)

// Health sources and details the scheduler reports on a module.
const (
	// SourceRunner is the constraint a standby runner puts on every bound module.
	SourceRunner = "scheduler:runner"
	// StandbyDetail is its detail.
	StandbyDetail = "another scheduler runner holds the lease; jobs paused"
)

// ErrClosed is returned by calls on a closed scheduler.
var ErrClosed = errors.New("scheduler: closed")

// ErrInterrupted, wrapped in a Hooks.Invoke error, says the run was cut
// short by its module's close: the job is released, not failed.
var ErrInterrupted = errors.New("scheduler: run interrupted")

// ErrNoJob reports a job that does not exist.
var ErrNoJob = errors.New("scheduler: no such job")

// Options configures New. The zero value (with a Store) is ready to use.
type Options struct {
	Store  *store.Store
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Lease, MaxRunning and CancelGrace default to the Default* constants.
	Lease       time.Duration
	MaxRunning  int
	CancelGrace time.Duration
	// Holder names this process in lease_holder (default "<host>:<pid>").
	Holder string
}

// Scheduler runs the jobs of every bound module. Create it with New, bind
// each module instance with Bind, Start it, and Close it before the store
// closes.
type Scheduler struct {
	st     *store.Store
	log    *slog.Logger
	now    func() time.Time
	lease  time.Duration
	max    int
	grace  time.Duration
	holder string
	token  string // this process's runner token

	wake     wake.Signal
	done     chan completion
	stop     chan struct{}
	loopDone chan struct{}
	runCtx   context.Context
	runStop  context.CancelFunc
	// stepCtx is the runner's statements' context: runCtx, which Close
	// cancels only once the runner stopped, without its cancellation, so
	// that the driver does not watch it statement by statement (a
	// goroutine and an interrupt handler each).
	stepCtx  context.Context
	execs    sync.WaitGroup
	started  bool
	stopOnce sync.Once

	mu        sync.Mutex
	mods      map[string]*Binding
	running   map[string]*execution // by module
	active    bool
	known     bool   // active/standby decided at least once
	other     string // the holder while standby
	otherTill time.Time
	renewed   time.Time // last runner-lease renewal
	beat      time.Time // last job-lease heartbeat
	closed    bool
	// nextLook is, per module, when its jobs next need a look (the next
	// run_at_ms, a crashed process's lease expiry; the zero time: no
	// row) as the last scan of it found; a module missing from it (or in
	// dirty) is scanned on the next step. Every path that changes a
	// module's rows through this process (its bindings, RunNow,
	// CancelJob, a settle) marks it dirty; a change from outside (another
	// process on the database) is seen by the full scan each lease
	// renewal runs (at half the lease).
	nextLook map[string]time.Time
	dirty    map[string]bool
	// ahead is, per module, the due jobs its last scan read after the one
	// it claimed, in order (ahead.go): claimed next without a scan.
	ahead   map[string][]aheadJob
	pending []completion

	// stmts: see stx (runner goroutine only).
	stmts *stmtcache.Cache
	// fails is the run of failed steps (runner goroutine only).
	fails *wake.Failures

	// stepped is closed (and replaced) at the end of every step (s.mu):
	// WaitIdle's signal. begun counts the steps begun; quietAfter is the
	// number of the last step that ended with nothing launched and nothing
	// running (s.mu).
	stepped    chan struct{}
	begun      int64
	quietAfter int64

	steps   atomic.Int64 // finished steps, for tests that wait for the runner
	commits atomic.Int64 // write transactions committed, for the benchmark's commits/job
	scans   atomic.Int64 // scan queries run, for tests of the kept jobs
}

type execution struct {
	b                  *Binding
	module, key, token string
	revision           string
	cancel             context.CancelFunc
}

type completion struct {
	ex  *execution
	err string // "" on success
	// failed is true for a failure (err may still be "" for an empty message).
	failed bool
	at     time.Time
	// interrupted: the run was cancelled by Close or the module's close.
	interrupted bool
}

// New returns a stopped scheduler on opts.Store.
func New(opts Options) (*Scheduler, error) {
	if opts.Store == nil {
		return nil, errors.New("scheduler: a store is required")
	}
	s := &Scheduler{
		st: opts.Store, log: opts.Logger, now: opts.Now, lease: opts.Lease, max: opts.MaxRunning,
		grace: opts.CancelGrace, holder: opts.Holder,
		wake: wake.NewSignal(), done: make(chan completion, 64), stop: make(chan struct{}),
		loopDone: make(chan struct{}), mods: map[string]*Binding{}, running: map[string]*execution{},
		nextLook: map[string]time.Time{}, dirty: map[string]bool{}, ahead: map[string][]aheadJob{},
		stepped: make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.lease <= 0 {
		s.lease = DefaultLease
	}
	if s.max <= 0 {
		s.max = DefaultMaxRunning
	}
	if s.grace <= 0 {
		s.grace = DefaultCancelGrace
	}
	if s.holder == "" {
		host, _ := os.Hostname()
		s.holder = host + ":" + strconv.Itoa(os.Getpid())
	}
	s.token = newToken()
	s.fails = wake.NewFailures(s.now)
	s.stmts = stmtcache.New(s.st.Writer(), s.log)
	s.runCtx, s.runStop = context.WithCancel(context.Background())
	s.stepCtx = context.WithoutCancel(s.runCtx)
	return s, nil
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Start launches the runner goroutine.
func (s *Scheduler) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return
	}
	s.started = true
	go s.loop()
}

// write runs fn in one store write transaction and counts the commit.
func (s *Scheduler) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := s.st.Write(ctx, fn); err != nil {
		return err
	}
	s.commits.Add(1)
	return nil
}

// stx is a runner transaction whose statements reuse the runner's
// prepared statements (app/internal/stmtcache; only the runner goroutine,
// and Close after it stopped, uses them).
type stx = stmtcache.Tx

// signal wakes the runner; it never blocks.
func (s *Scheduler) signal() { s.wake.Notify() }

// Wake makes the runner look at the jobs again now: for a clock that a
// test moves (Options.Now), whose moves no timer sees.
func (s *Scheduler) Wake() { s.signal() }

// WaitIdle returns once a step begun after the call has ended with
// nothing to launch and nothing running — every job due by the clock's
// present has run and been settled — or with ctx's error (ErrClosed once
// the scheduler closed): a test that moves the clock waits for the runs
// of the present moment to finish at it before it moves the clock again.
func (s *Scheduler) WaitIdle(ctx context.Context) error {
	s.mu.Lock()
	after := s.begun
	s.mu.Unlock()
	s.signal() // a step to look, begun after the call; completions signal the rest
	for {
		s.mu.Lock()
		quiet, closed, stepped := s.quietAfter > after, s.closed, s.stepped
		s.mu.Unlock()
		switch {
		case quiet:
			return nil
		case closed:
			return ErrClosed
		}
		select {
		case <-stepped:
		case <-s.loopDone:
			return ErrClosed
		case <-ctx.Done():
			return fmt.Errorf("scheduler: wait for the due jobs: %w", context.Cause(ctx))
		}
	}
}

// touch marks module's rows changed (scanned on the next step) and
// signals the runner.
func (s *Scheduler) touch(module string) {
	s.mu.Lock()
	s.dirty[module] = true
	delete(s.ahead, module)
	s.mu.Unlock()
	s.signal()
}

// loop is the runner goroutine: a step at once, then one after every
// signal (an enqueue, a completion) and at the moment the step returned,
// until Close (app/internal/wake).
func (s *Scheduler) loop() {
	defer close(s.loopDone)
	wake.Loop{Step: s.step, Wake: s.wake, Now: s.now}.Run(s.stop)
}

// complete hands a run's completion to the runner (settled by the next
// step, which drains s.done) and wakes it.
func (s *Scheduler) complete(c completion) {
	s.done <- c
	s.signal()
}

// drain moves every waiting completion to pending; s.mu held.
func (s *Scheduler) drain() {
	for {
		select {
		case c := <-s.done:
			s.pending = append(s.pending, c)
		default:
			return
		}
	}
}

// claim is one job the step leased.
type claim struct {
	b   *Binding
	run sdk.JobRun
	h   string
	ex  *execution
	job aheadJob // the row as it was read
	// kept: the job came from Scheduler.ahead, not this step's scan.
	kept bool
}

// unhandled is a job found without a handler.
type unhandled struct {
	b            *Binding
	key, handler string
}

// step runs one transaction (settle, renew, claim) and returns when to run
// the next one (zero: only on a signal).
func (s *Scheduler) step() time.Time {
	defer s.steps.Add(1)
	s.mu.Lock()
	s.begun++
	seq := s.begun
	s.mu.Unlock()
	launched := 0
	defer func() {
		s.mu.Lock()
		if launched == 0 && len(s.running) == 0 && len(s.done) == 0 && len(s.pending) == 0 {
			s.quietAfter = seq
		}
		close(s.stepped)
		s.stepped = make(chan struct{})
		s.mu.Unlock()
	}()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return time.Time{}
	}
	s.drain()
	settles := s.pending
	s.pending = nil
	settling := map[*execution]bool{}
	for _, c := range settles {
		settling[c.ex] = true
	}
	free := map[string]*Binding{}
	busy := 0
	for name, b := range s.mods {
		if ex := s.running[name]; ex != nil && !settling[ex] {
			continue
		}
		if b.isActive() {
			free[name] = b
		}
	}
	var tokens []string
	var beats []*execution
	for _, ex := range s.running {
		if !settling[ex] {
			busy++
			tokens = append(tokens, ex.token)
			beats = append(beats, ex)
		}
	}
	slots := s.max - busy
	now := s.now()
	beatDue := s.beat.IsZero() || !now.Before(s.beat.Add(s.lease/2))
	// The runner lease is renewed at half of it (with the heartbeat), not
	// on every step: until then this process holds it for sure.
	renewDue := !s.active || s.renewed.IsZero() || !now.Before(s.renewed.Add(s.lease/2))
	// Scan only the free modules whose rows changed or fell due; all of
	// them at each renewal (a change from outside this process). A module
	// with due jobs kept from its last scan claims the first of them.
	scan := map[string]*Binding{}
	kept := map[string][]aheadJob{}
	for name, b := range free {
		if !renewDue && !s.dirty[name] && len(s.ahead[name]) > 0 {
			kept[name] = s.ahead[name]
			continue
		}
		next, seen := s.nextLook[name]
		if renewDue || !seen || s.dirty[name] || (!next.IsZero() && !now.Before(next)) {
			scan[name] = b
			continue
		}
	}
	for name := range scan {
		delete(s.dirty, name)
		delete(s.ahead, name)
	}
	var skippedWake time.Time
	for name := range free {
		_, scanned := scan[name]
		if _, k := kept[name]; !scanned && !k {
			if next := s.nextLook[name]; !next.IsZero() && (skippedWake.IsZero() || next.Before(skippedWake)) {
				skippedWake = next
			}
		}
	}
	s.mu.Unlock()

	nowMs := now.UnixMilli()
	var (
		claims      []claim
		unhandledJs []unhandled
		wakeAt      time.Time
		active      bool
		other       string
		otherTill   time.Time
		looks       map[string]time.Time
		keep        map[string][]aheadJob // what ahead holds after the step (nil: nothing)
		gone        map[*execution]bool   // settles that deleted their row
		rescanned   map[string]*Binding
	)
	addWake := func(t time.Time) {
		if wakeAt.IsZero() || t.Before(wakeAt) {
			wakeAt = t
		}
	}
	err := s.write(s.stepCtx, func(raw *sql.Tx) error {
		tx := s.stmts.Tx(raw)
		claims, unhandledJs, wakeAt, looks = nil, nil, time.Time{}, nil
		keep, gone, rescanned = map[string][]aheadJob{}, map[*execution]bool{}, maps.Clone(scan)
		for _, c := range settles {
			deleted, err := s.settle(s.stepCtx, tx, c)
			if err != nil {
				return err
			}
			if deleted {
				gone[c.ex] = true
			}
		}
		active = true
		if renewDue {
			res, err := tx.ExecContext(s.stepCtx, `UPDATE kimi_scheduler_runner SET token = ?, holder = ?, leased_until_ms = ?
				WHERE id = 1 AND (token IS NULL OR token = ? OR leased_until_ms <= ?)`,
				s.token, s.holder, now.Add(s.lease).UnixMilli(), s.token, nowMs)
			if err != nil {
				return fmt.Errorf("scheduler: runner lease: %w", err)
			}
			n, _ := res.RowsAffected()
			active = n == 1
		}
		if !active {
			var till int64
			var holder sql.NullString
			if err := tx.QueryRowContext(s.stepCtx, `SELECT holder, leased_until_ms FROM kimi_scheduler_runner WHERE id = 1`).Scan(&holder, &till); err != nil {
				return fmt.Errorf("scheduler: read runner lease: %w", err)
			}
			other, otherTill = holder.String, time.UnixMilli(till)
			return nil
		}
		if beatDue && len(tokens) > 0 {
			// By primary key: the token alone has no index.
			for _, ex := range beats {
				if _, err := tx.ExecContext(s.stepCtx, `UPDATE kimi_scheduler_jobs SET leased_until_ms = ?
					WHERE module = ? AND job_key = ? AND lease_token = ?`,
					now.Add(s.lease).UnixMilli(), ex.module, ex.key, ex.token); err != nil {
					return fmt.Errorf("scheduler: heartbeat: %w", err)
				}
			}
		}
		// A settle that left its row (a recurring job, a backoff, a
		// release) may have put it before what was kept: scan the module.
		pre := maps.Clone(kept)
		for _, c := range settles {
			if _, k := pre[c.ex.module]; k && !gone[c.ex] {
				delete(pre, c.ex.module)
				rescanned[c.ex.module] = free[c.ex.module]
			}
		}
		if !skippedWake.IsZero() {
			addWake(skippedWake)
		}
		more, err := s.claimScanned(tx, free, rescanned, pre, slots, now, keep)
		for _, r := range more.rounds {
			unhandledJs = append(unhandledJs, r.uh...)
			if !r.wakeAt.IsZero() {
				addWake(r.wakeAt)
			}
			if looks == nil {
				looks = map[string]time.Time{}
			}
			maps.Copy(looks, r.looks)
		}
		claims = append(claims, more.claims...)
		return err
	})
	if s.stmts.Pending() && s.runCtx.Err() == nil {
		s.stmts.PrepareSeen(s.runCtx)
	}
	if err != nil {
		if s.runCtx.Err() == nil {
			delay := s.fails.Failed(s.runCtx, s.log, "scheduler step failed", store.Cause(err), err)
			// The completions are not lost: retry them on the next step.
			s.mu.Lock()
			s.pending = append(settles, s.pending...)
			for name := range scan {
				s.dirty[name] = true
			}
			for name := range kept {
				s.dirty[name] = true
				delete(s.ahead, name)
			}
			s.mu.Unlock()
			return now.Add(delay)
		}
		return time.Time{}
	}
	s.fails.Succeeded(s.log, "scheduler steps succeed again")
	s.mu.Lock()
	for name, list := range keep {
		if len(list) > 0 {
			s.ahead[name] = list
		} else {
			delete(s.ahead, name)
		}
	}
	for _, c := range settles {
		s.forget(c.ex)
		// Its module is free. A one-shot job's row is gone: the module's
		// kept jobs are still what a scan would find; otherwise its rows
		// changed.
		if !gone[c.ex] || len(s.ahead[c.ex.module]) == 0 {
			s.dirty[c.ex.module] = true
		}
	}
	for name, next := range looks {
		s.nextLook[name] = next
	}
	if !active {
		clear(s.nextLook) // standing by: look at everything once active
		clear(s.ahead)
	}
	s.mu.Unlock()
	s.setActive(active, other, otherTill, now)
	if !active {
		// Wait for the holder's lease to lapse (or a signal).
		return otherTill.Add(10 * time.Millisecond)
	}
	s.mu.Lock()
	if beatDue {
		s.beat = now
	}
	if renewDue {
		s.renewed = now
	}
	for _, c := range claims {
		if s.closed || s.running[c.b.module] != nil {
			continue
		}
		s.running[c.b.module] = c.ex
		launched++
		s.launch(c)
	}
	s.mu.Unlock()
	for _, u := range unhandledJs {
		u.b.noHandler(u.key, u.handler)
	}
	if launched > 0 {
		// Let the runs just launched start before the next step (their
		// goroutines are queued behind this one): a short handler is then
		// settled with the others in one transaction, not one by one.
		runtime.Gosched()
	}
	// Renew the runner lease (and heartbeat running jobs) at half the lease.
	addWake(now.Add(s.lease / 2))
	return wakeAt
}

// setActive records the runner's standing after a step and reports a
// change (log, module health).
func (s *Scheduler) setActive(active bool, other string, otherTill, now time.Time) {
	s.mu.Lock()
	changed := !s.known || s.active != active
	s.known, s.active, s.other, s.otherTill = true, active, other, otherTill
	var mods []*Binding
	for _, b := range s.mods {
		mods = append(mods, b)
	}
	var stopping []*execution
	if !active {
		for _, ex := range s.running {
			stopping = append(stopping, ex)
		}
	}
	s.mu.Unlock()
	for _, ex := range stopping {
		ex.cancel() // another runner took over: our runs are no longer leased to us
	}
	if !changed {
		return
	}
	if active {
		s.log.Info("scheduler runner active", "holder", s.holder)
	} else if s.holderGone(other) {
		s.log.Info("waiting for the lease of a process that is gone (killed without releasing it); jobs resume when it expires",
			"holder", other, "expires", otherTill.UTC().Format(time.RFC3339), "in", otherTill.Sub(now).Round(time.Second))
	} else {
		s.log.Error("Module scheduler paused: another scheduler runner holds the lease; jobs paused until it is released",
			"holder", other, "leased_until", otherTill)
	}
	for _, b := range mods {
		b.reportRunner(active)
	}
}

// jitterOf returns uniform(0, d).
func jitterOf(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return mrand.N(d)
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// Close stops the runner: running jobs are cancelled and given the grace
// period, their leases released (the jobs stay), and the runner lease is
// released (bounded by the grace period; otherwise it just expires).
func (s *Scheduler) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	started := s.started
	s.mu.Unlock()
	// Stop claiming: the loop exits; then cancel the runs.
	s.stopOnce.Do(func() { close(s.stop) })
	if started {
		<-s.loopDone
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.runStop()
	waited := make(chan struct{})
	go func() { s.execs.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(s.grace):
		s.log.Warn("scheduled jobs ignored cancellation past the grace period; their leases will expire", "grace", s.grace)
	case <-ctx.Done():
		s.log.Warn("scheduled jobs still running when the close ran out of time; their leases will expire", "err", context.Cause(ctx))
	}
	s.mu.Lock()
	s.drain()
	settles := s.pending
	s.pending = nil
	s.mu.Unlock()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.grace)
	defer cancel()
	defer s.stmts.Close()
	err := s.write(wctx, func(raw *sql.Tx) error {
		tx := s.stmts.Tx(raw)
		for _, c := range settles {
			if _, err := s.settle(wctx, tx, c); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(wctx, `UPDATE kimi_scheduler_runner SET token = NULL, holder = NULL, leased_until_ms = 0 WHERE id = 1 AND token = ?`, s.token)
		return err
	})
	if err != nil {
		return fmt.Errorf("scheduler: close: release leases: %w", err)
	}
	return nil
}
