package scheduler

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// clock is an injectable clock the test advances.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openStore(t testing.TB, path string) *store.Store {
	t.Helper()
	ctx := context.Background()
	if path == "" {
		path = filepath.Join(t.TempDir(), "kimi.db")
	}
	st, err := store.Open(ctx, path, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return st
}

// healthLog records the health constraints a binding sets.
type healthLog struct {
	mu  sync.Mutex
	set map[string]string // source → detail ("" cleared)
}

func (h *healthLog) hook(source string, state sdk.HealthState, detail string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.set == nil {
		h.set = map[string]string{}
	}
	if state == sdk.HealthHealthy {
		delete(h.set, source)
		return
	}
	h.set[source] = string(state) + ": " + detail
}

func (h *healthLog) get(source string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.set[source]
}

type rig struct {
	t   *testing.T
	st  *store.Store
	clk *clock
	s   *Scheduler
}

func newRig(t *testing.T, opts ...func(*Options)) *rig {
	t.Helper()
	st := openStore(t, "")
	return newRigOn(t, st, opts...)
}

func newRigOn(t *testing.T, st *store.Store, opts ...func(*Options)) *rig {
	t.Helper()
	clk := newClock()
	o := Options{Store: st, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), Now: clk.Now}
	for _, f := range opts {
		f(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return &rig{t: t, st: st, clk: clk, s: s}
}

// advance moves the clock and wakes the runner (the timer is real time).
func (r *rig) advance(d time.Duration) {
	r.clk.Advance(d)
	r.s.signal()
}

// quiesce lets the runner finish two whole steps started after the call,
// so "nothing ran" is an observation, not a race.
func (r *rig) quiesce() {
	for range 2 {
		n := r.s.steps.Load()
		r.s.signal()
		eventually(r.t, "a runner step", func() bool { return r.s.steps.Load() > n })
	}
}

// eventually waits (generously) for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type row struct {
	handler   string
	runAt     int64
	attempt   int
	lastError sql.NullString
	token     sql.NullString
	revision  string
}

func (r *rig) row(module, key string) (row, bool) {
	r.t.Helper()
	var x row
	err := r.st.Reader().QueryRow(`SELECT handler, run_at_ms, attempt, last_error, lease_token, revision FROM kimi_scheduler_jobs WHERE module = ? AND job_key = ?`,
		module, key).Scan(&x.handler, &x.runAt, &x.attempt, &x.lastError, &x.token, &x.revision)
	if errors.Is(err, sql.ErrNoRows) {
		return x, false
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return x, true
}

// settled: the job's lease is gone (or the job is).
func (r *rig) settled(module, key string) bool {
	x, ok := r.row(module, key)
	return !ok || !x.token.Valid
}

type runLog struct {
	mu   sync.Mutex
	runs []sdk.JobRun
}

func (l *runLog) add(run sdk.JobRun) {
	l.mu.Lock()
	l.runs = append(l.runs, run)
	l.mu.Unlock()
}

func (l *runLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs)
}

func (l *runLog) last() sdk.JobRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[len(l.runs)-1]
}

func TestScheduleValidation(t *testing.T) {
	r := newRig(t)
	b := r.s.Bind("m", Hooks{})
	ctx := context.Background()
	long := strings.Repeat("k", 129)
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"empty key", func() error { return b.RunAt(ctx, "", r.clk.Now(), "h", nil) }, "invalid job key"},
		{"long key", func() error { return b.RunAt(ctx, long, r.clk.Now(), "h", nil) }, "invalid job key"},
		{"empty handler", func() error { return b.RunAt(ctx, "k", r.clk.Now(), "", nil) }, "invalid handler name"},
		{"zero interval", func() error { return b.RunEvery(ctx, "k", 0, "h", nil, sdk.EveryOptions{}) }, "interval"},
		{"bad backoff", func() error {
			return b.RunEvery(ctx, "k", time.Second, "h", nil, sdk.EveryOptions{Backoff: &sdk.Backoff{Base: time.Second, Max: time.Second, Multiplier: 0.5}})
		}, "backoff multiplier must be at least 1"},
		{"payload not an object", func() error { return b.RunAt(ctx, "k", r.clk.Now(), "h", []int{1}) }, "payload"},
		{"nil handler", func() error { return b.Register("h", nil) }, "handler 'h' is nil"},
		{"bad handler name", func() error {
			return b.Register(strings.Repeat("h", 65), func(context.Context, sdk.JobRun) error { return nil })
		}, "invalid handler name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if jobs, _ := b.List(ctx); len(jobs) != 0 {
		t.Fatalf("refused definitions stored jobs: %+v", jobs)
	}
}

func TestUpsertRules(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	b := r.s.Bind("m", Hooks{})
	b.Activate() // no handlers: nothing is claimed, but "no handler" marks rows
	later := r.clk.Now().Add(time.Hour)
	if err := b.RunAt(ctx, "a", later, "h1", map[string]any{"x": 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.RunEvery(ctx, "b", time.Minute, "h2", nil, sdk.EveryOptions{}); err != nil {
		t.Fatal(err)
	}
	// "b" is due now without a handler: it is marked and pushed 60 s.
	eventually(t, "no handler mark", func() bool {
		x, _ := r.row("m", "b")
		return x.lastError.String == "no handler 'h2'"
	})
	x, _ := r.row("m", "b")
	if want := r.clk.Now().Add(UnhandledRetry).UnixMilli(); x.runAt != want {
		t.Fatalf("unhandled run_at = %d, want now+60s %d", x.runAt, want)
	}
	rev := x.revision
	// Replacing resets attempt and last_error, changes the definition and revision.
	if err := b.RunAt(ctx, "b", later, "h3", map[string]any{"y": 2}); err != nil {
		t.Fatal(err)
	}
	x, _ = r.row("m", "b")
	if x.handler != "h3" || x.lastError.Valid || x.attempt != 0 || x.revision == rev || x.runAt != later.UnixMilli() {
		t.Fatalf("replacement row = %+v", x)
	}
	jobs, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].Key != "a" || jobs[1].Key != "b" || jobs[1].Interval != 0 || jobs[1].Handler != "h3" {
		t.Fatalf("List = %+v, want a then b (first-scheduled order), b one-shot now", jobs)
	}
	// A second module's jobs are its own.
	other := r.s.Bind("n", Hooks{})
	if jobs, _ := other.List(ctx); len(jobs) != 0 {
		t.Fatalf("module n sees %+v", jobs)
	}
	if ok, err := other.Cancel(ctx, "a"); ok || err != nil {
		t.Fatalf("n cancelled m's job: %v %v", ok, err)
	}
	if ok, err := b.Cancel(ctx, "a"); !ok || err != nil {
		t.Fatalf("Cancel(a) = %v, %v", ok, err)
	}
	if ok, _ := b.Cancel(ctx, "a"); ok {
		t.Fatal("second Cancel reported a job")
	}
}

func TestSettlement(t *testing.T) {
	boom := errors.New(strings.Repeat("é", 400))
	tests := []struct {
		name     string
		periodic bool
		jitter   time.Duration
		err      error
		backoff  *sdk.Backoff
		attempts int // runs before checking
		check    func(t *testing.T, x row, ok bool, now time.Time)
	}{
		{name: "one-shot success deletes", check: func(t *testing.T, x row, ok bool, _ time.Time) {
			if ok {
				t.Fatalf("one-shot job kept: %+v", x)
			}
		}},
		{name: "periodic success reschedules from completion", periodic: true, check: func(t *testing.T, x row, ok bool, now time.Time) {
			if !ok || x.runAt != now.Add(time.Minute).UnixMilli() || x.attempt != 0 || x.lastError.Valid || x.token.Valid {
				t.Fatalf("row = %+v ok=%v, want run_at now+1m, attempt 0, no error, no lease", x, ok)
			}
		}},
		{name: "periodic jitter within bounds", periodic: true, jitter: 10 * time.Second, check: func(t *testing.T, x row, ok bool, now time.Time) {
			lo, hi := now.Add(time.Minute).UnixMilli(), now.Add(time.Minute+10*time.Second).UnixMilli()
			if !ok || x.runAt < lo || x.runAt > hi {
				t.Fatalf("run_at %d outside [%d, %d]", x.runAt, lo, hi)
			}
		}},
		{name: "one-shot failure retried after backoff, error truncated", err: boom, check: func(t *testing.T, x row, ok bool, now time.Time) {
			want := strings.Repeat("é", sdk.MaxJobErrorLength)
			if !ok || x.attempt != 1 || x.lastError.String != want || x.runAt != now.Add(30*time.Second).UnixMilli() {
				t.Fatalf("row = %+v, want attempt 1, error 300 runes, run_at now+30s", x)
			}
		}},
		{name: "periodic failures keep the attempt and grow the delay", periodic: true, err: errors.New("nope"),
			backoff: &sdk.Backoff{Base: time.Second, Max: 5 * time.Second, Multiplier: 2}, attempts: 4,
			check: func(t *testing.T, x row, ok bool, now time.Time) {
				// attempts 1..4 wait 1, 2, 4, then min(5, 8) = 5 s
				if !ok || x.attempt != 4 || x.lastError.String != "nope" || x.runAt != now.Add(5*time.Second).UnixMilli() {
					t.Fatalf("row = %+v, want attempt 4, error nope, run_at now+5s", x)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			ctx := context.Background()
			var runs runLog
			b := r.s.Bind("m", Hooks{})
			if err := b.Register("h", func(ctx context.Context, run sdk.JobRun) error { runs.add(run); return tt.err }); err != nil {
				t.Fatal(err)
			}
			b.Activate()
			var err error
			if tt.periodic {
				err = b.RunEvery(ctx, "k", time.Minute, "h", map[string]any{"p": 1}, sdk.EveryOptions{Jitter: tt.jitter, Backoff: tt.backoff})
			} else {
				err = b.RunAt(ctx, "k", r.clk.Now(), "h", map[string]any{"p": 1})
			}
			if err != nil {
				t.Fatal(err)
			}
			n := max(tt.attempts, 1)
			for i := 1; i <= n; i++ {
				eventually(t, fmt.Sprintf("run %d", i), func() bool { return runs.len() >= i && r.settled("m", "k") })
				if got := runs.last(); got.Attempt != i && tt.err != nil || got.Attempt != 1 && tt.err == nil {
					t.Fatalf("run %d: attempt %d", i, got.Attempt)
				}
				if i < n {
					x, _ := r.row("m", "k")
					r.advance(time.UnixMilli(x.runAt).Sub(r.clk.Now()))
				}
			}
			got := runs.last()
			if got.JobID != "m:k" || string(got.Payload) != `{"p":1}` {
				t.Fatalf("run = %+v", got)
			}
			x, ok := r.row("m", "k")
			tt.check(t, x, ok, r.clk.Now())
		})
	}
}

func TestNoHandlerDegradesAndRegisterClears(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	var hl healthLog
	var runs runLog
	b := r.s.Bind("m", Hooks{Health: hl.hook})
	b.Activate()
	if err := b.RunAt(ctx, "k", r.clk.Now(), "late", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "degraded", func() bool { return hl.get("scheduler:k") != "" })
	if got := hl.get("scheduler:k"); got != "degraded: scheduled job 'k' has no handler" {
		t.Fatalf("health = %q", got)
	}
	x, _ := r.row("m", "k")
	if x.attempt != 0 || x.lastError.String != "no handler 'late'" {
		t.Fatalf("row = %+v: the job must not fail (attempt stays 0)", x)
	}
	if err := b.Register("late", func(_ context.Context, run sdk.JobRun) error { runs.add(run); return nil }); err != nil {
		t.Fatal(err)
	}
	if got := hl.get("scheduler:k"); got != "" {
		t.Fatalf("health after Register = %q", got)
	}
	r.advance(UnhandledRetry)
	eventually(t, "run after register", func() bool { _, ok := r.row("m", "k"); return !ok && runs.len() == 1 })
}

func TestConcurrencyLimits(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	release := make(chan struct{})
	var mu sync.Mutex
	running := map[string]int{}
	peak, peakPer := 0, 0
	total := 0
	for i := range 6 {
		mod := fmt.Sprintf("m%d", i)
		b := r.s.Bind(mod, Hooks{})
		_ = b.Register("h", func(ctx context.Context, run sdk.JobRun) error {
			mu.Lock()
			running[mod]++
			total++
			cur := 0
			for _, n := range running {
				cur += n
			}
			peak, peakPer = max(peak, cur), max(peakPer, running[mod])
			mu.Unlock()
			<-release
			mu.Lock()
			running[mod]--
			mu.Unlock()
			return nil
		})
		b.Activate()
		for k := range 3 {
			if err := b.RunAt(ctx, fmt.Sprintf("k%d", k), r.clk.Now(), "h", nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, "4 running", func() bool { mu.Lock(); defer mu.Unlock(); return total == 4 })
	// Nothing more starts while the four block (let the runner try).
	r.quiesce()
	st, _ := r.s.Status(ctx)
	mu.Lock()
	if total != 4 || st.Running != 4 {
		t.Fatalf("started %d, running %d: want 4 (the overall cap)", total, st.Running)
	}
	mu.Unlock()
	close(release)
	eventually(t, "all 18 ran", func() bool { mu.Lock(); defer mu.Unlock(); return total == 18 })
	mu.Lock()
	defer mu.Unlock()
	if peak > 4 || peakPer > 1 {
		t.Fatalf("peak %d overall, %d in one module: want ≤ 4 and 1", peak, peakPer)
	}
}

// TestFullSlotsDoNotSpin: while every slot is taken and more jobs are due,
// the runner waits for a completion instead of arming a timer at now (it
// used to run a write transaction in a loop, one per wake, until a slot
// freed). The completion that frees a slot still starts the next job.
func TestFullSlotsDoNotSpin(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	release := make(chan struct{})
	var started atomic.Int64
	for i := range 6 {
		b := r.s.Bind(fmt.Sprintf("m%d", i), Hooks{})
		_ = b.Register("h", func(ctx context.Context, run sdk.JobRun) error {
			started.Add(1)
			<-release
			return nil
		})
		b.Activate()
		if err := b.RunAt(ctx, "k", r.clk.Now(), "h", nil); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "4 running", func() bool { return started.Load() == 4 })
	r.quiesce()
	commits, steps := r.s.commits.Load(), r.s.steps.Load()
	// Nothing can change until a job completes: no step may run. A spinning
	// runner does hundreds in this window; an idle one none, however slow
	// the machine.
	time.Sleep(300 * time.Millisecond)
	if dc, ds := r.s.commits.Load()-commits, r.s.steps.Load()-steps; dc != 0 || ds != 0 {
		t.Fatalf("with every slot busy the runner ran %d steps (%d commits); want none until a completion", ds, dc)
	}
	close(release)
	eventually(t, "the other 2 ran", func() bool { return started.Load() == 6 })
}

func TestReplacedWhileRunningKeepsReplacement(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	b := r.s.Bind("m", Hooks{})
	_ = b.Register("h", func(context.Context, sdk.JobRun) error {
		close(started)
		<-release
		return errors.New("old run failed")
	})
	b.Activate()
	if err := b.RunAt(ctx, "k", r.clk.Now(), "h", nil); err != nil {
		t.Fatal(err)
	}
	<-started
	later := r.clk.Now().Add(time.Hour)
	if err := b.RunAt(ctx, "k", later, "h2", map[string]any{"v": 2}); err != nil {
		t.Fatal(err)
	}
	x, _ := r.row("m", "k")
	if !x.token.Valid {
		t.Fatal("the upsert dropped the running lease")
	}
	close(release)
	eventually(t, "stale settle", func() bool { return r.settled("m", "k") })
	x, ok := r.row("m", "k")
	if !ok || x.handler != "h2" || x.attempt != 0 || x.lastError.Valid || x.runAt != later.UnixMilli() {
		t.Fatalf("row = %+v: the old run's settle clobbered the replacement", x)
	}
}

func TestLeases(t *testing.T) {
	tests := []struct {
		name        string
		leasedUntil time.Duration // relative to now
		wantRunNow  bool
	}{
		{"expired lease from a crashed process is claimed again", -time.Second, true},
		{"live lease is never run twice", 30 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			ctx := context.Background()
			var runs runLog
			b := r.s.Bind("m", Hooks{})
			_ = b.Register("h", func(_ context.Context, run sdk.JobRun) error { runs.add(run); return nil })
			// A row a dead process leased (attempt 1 already counted).
			if err := b.RunAt(ctx, "k", r.clk.Now().Add(-time.Minute), "h", nil); err != nil {
				t.Fatal(err)
			}
			// and a second job of the same module: at most one per module, so
			// it waits for the live lease too
			if err := b.RunAt(ctx, "k2", r.clk.Now().Add(-time.Minute), "h", nil); err != nil {
				t.Fatal(err)
			}
			if err := r.st.Write(ctx, func(tx *sql.Tx) error {
				_, err := tx.Exec(`UPDATE kimi_scheduler_jobs SET leased_until_ms = ?, lease_token = 'dead', lease_holder = 'dead:1', attempt = 1 WHERE job_key = 'k'`,
					r.clk.Now().Add(tt.leasedUntil).UnixMilli())
				return err
			}); err != nil {
				t.Fatal(err)
			}
			b.Activate()
			if tt.wantRunNow {
				eventually(t, "both run", func() bool { return runs.len() == 2 })
				for _, run := range runs.runs {
					if run.Key == "k" && run.Attempt != 2 {
						t.Fatalf("reclaimed run attempt %d, want 2", run.Attempt)
					}
				}
				return
			}
			// Let the runner take a look; nothing may start.
			r.quiesce()
			if n := runs.len(); n != 0 {
				t.Fatalf("%d runs under a live lease", n)
			}
			// The dead process's settle, with its stale token, would change
			// nothing; once the lease expires, both run.
			r.advance(tt.leasedUntil + time.Millisecond)
			eventually(t, "both run after expiry", func() bool { return runs.len() == 2 })
		})
	}
}

func TestRunnerLeaseStandbyAndTakeover(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kimi.db")
	st1, st2 := openStore(t, path), openStore(t, path)
	ctx := context.Background()
	lease := func(o *Options) { o.Lease = 2 * time.Second }
	a := newRigOn(t, st1, lease, func(o *Options) { o.Holder = "a"; o.Now = time.Now })
	var ranA, ranB runLog
	ba := a.s.Bind("m", Hooks{})
	_ = ba.Register("h", func(_ context.Context, run sdk.JobRun) error { ranA.add(run); return nil })
	ba.Activate()
	eventually(t, "a active", func() bool { s, _ := a.s.Status(ctx); return s.Active })

	var hl healthLog
	b := newRigOn(t, st2, lease, func(o *Options) { o.Holder = "b"; o.Now = time.Now })
	bb := b.s.Bind("m", Hooks{Health: hl.hook})
	_ = bb.Register("h", func(_ context.Context, run sdk.JobRun) error { ranB.add(run); return nil })
	bb.Activate()
	eventually(t, "b standby", func() bool { s, _ := b.s.Status(ctx); return s.Standby })
	if s, _ := b.s.Status(ctx); s.Holder != "a" {
		t.Fatalf("standby holder = %q", s.Holder)
	}
	if got := hl.get(SourceRunner); got != "degraded: "+StandbyDetail {
		t.Fatalf("standby health = %q", got)
	}
	for i := range 20 {
		if err := bb.RunAt(ctx, fmt.Sprintf("k%d", i), time.Now(), "h", nil); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "a ran all", func() bool { return ranA.len() == 20 })
	if ranB.len() != 0 {
		t.Fatalf("the standby ran %d jobs", ranB.len())
	}
	// a "dies" without releasing: stop its runner, keep the lease row.
	a.s.stopOnce.Do(func() { close(a.s.stop) })
	<-a.s.loopDone
	if err := bb.RunAt(ctx, "after", time.Now(), "h", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b takes over after the lease", func() bool { return ranB.len() == 1 })
	eventually(t, "b active, health restored", func() bool { s, _ := b.s.Status(ctx); return s.Active && hl.get(SourceRunner) == "" })
}

func TestCloseCancelsRunsAndKeepsJobs(t *testing.T) {
	r := newRig(t, func(o *Options) { o.CancelGrace = 10 * time.Second })
	ctx := context.Background()
	started := make(chan struct{})
	b := r.s.Bind("m", Hooks{})
	_ = b.Register("h", func(ctx context.Context, _ sdk.JobRun) error { close(started); <-ctx.Done(); return ctx.Err() })
	b.Activate()
	if err := b.RunEvery(ctx, "k", time.Hour, "h", nil, sdk.EveryOptions{}); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := r.s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	x, ok := r.row("m", "k")
	if !ok || x.token.Valid || x.lastError.Valid {
		t.Fatalf("after Close: row = %+v ok=%v, want the job kept, lease released, no error", x, ok)
	}
	var token sql.NullString
	if err := r.st.Reader().QueryRow(`SELECT token FROM kimi_scheduler_runner`).Scan(&token); err != nil || token.Valid {
		t.Fatalf("runner lease not released: %v %v", token, err)
	}
}

// TestCloseStopsWaitingWhenItsCtxEnds: a job that ignores its
// cancellation is waited for only until Close's ctx ends (not the whole
// cancel grace), and the runner's lease is still released.
func TestCloseStopsWaitingWhenItsCtxEnds(t *testing.T) {
	r := newRig(t, func(o *Options) { o.CancelGrace = time.Minute })
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	b := r.s.Bind("m", Hooks{})
	_ = b.Register("h", func(context.Context, sdk.JobRun) error { close(started); <-release; return nil })
	b.Activate()
	if err := b.RunEvery(context.Background(), "k", time.Hour, "h", nil, sdk.EveryOptions{}); err != nil {
		t.Fatal(err)
	}
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.s.Close(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited past its ctx for a job that ignores cancellation (its grace is a minute)")
	}
	var token sql.NullString
	if err := r.st.Reader().QueryRow(`SELECT token FROM kimi_scheduler_runner`).Scan(&token); err != nil || token.Valid {
		t.Fatalf("runner lease not released: %v %v", token, err)
	}
}

func TestEnqueueWakesWithoutTimer(t *testing.T) {
	// A long lease means the runner's own renewal timer is 30 s away: a job
	// due now runs only because the enqueue signals the runner.
	r := newRig(t, func(o *Options) { o.Now = time.Now })
	ctx := context.Background()
	var runs runLog
	b := r.s.Bind("m", Hooks{})
	_ = b.Register("h", func(_ context.Context, run sdk.JobRun) error { runs.add(run); return nil })
	b.Activate()
	eventually(t, "active", func() bool { s, _ := r.s.Status(ctx); return s.Active })
	for i := range 5 {
		if err := b.RunAt(ctx, fmt.Sprintf("k%d", i), time.Now(), "h", nil); err != nil {
			t.Fatal(err)
		}
		eventually(t, "run", func() bool { return runs.len() == i+1 })
	}
}

func TestAdminRunNowAndCancelAreAudited(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	var runs runLog
	b := r.s.Bind("m", Hooks{})
	_ = b.Register("h", func(_ context.Context, run sdk.JobRun) error { runs.add(run); return nil })
	b.Activate()
	if err := b.RunAt(ctx, "k", r.clk.Now().Add(time.Hour), "h", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.RunAt(ctx, "c", r.clk.Now().Add(time.Hour), "h", nil); err != nil {
		t.Fatal(err)
	}
	if err := r.s.RunNow(ctx, "m", "k", "alice"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "run now", func() bool { return runs.len() == 1 })
	if err := r.s.RunNow(ctx, "m", "missing", "alice"); !errors.Is(err, ErrNoJob) {
		t.Fatalf("RunNow(missing) = %v", err)
	}
	if ok, err := r.s.CancelJob(ctx, "m", "c", "alice"); !ok || err != nil {
		t.Fatalf("CancelJob = %v %v", ok, err)
	}
	entries, _, err := r.st.ListAudit(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Action+" "+e.Target+" "+e.Actor)
	}
	want := []string{ActionJobCancel + " m:c alice", ActionJobRunNow + " m:k alice"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("audit = %q, want %q", got, want)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestLaunchWithoutHandlerReleasesTheJob: if a module's binding closes
// between the claim and the launch, its handler is gone; the launch must
// release the job, not call a nil handler (a panic the host's containment
// only catches when Hooks.Invoke is set — here it is not, so a nil call
// would crash the test binary).
func TestLaunchWithoutHandlerReleasesTheJob(t *testing.T) {
	r := newRig(t)
	b := r.s.Bind("gone", Hooks{})
	r.s.mu.Lock()
	r.s.launch(claim{b: b, h: "vanished", run: sdk.JobRun{Key: "k"}, ex: &execution{b: b, module: "gone", key: "k", token: "t"}})
	r.s.mu.Unlock()
	r.quiesce()
}
