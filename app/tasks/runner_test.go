package tasks

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// syncClock is a test clock safe for the scheduler's goroutines.
type syncClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *syncClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *syncClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// runnerWorld is a store with the tasks and results services, a real
// scheduler on the same store (on the fake clock), a fake Poster and, once
// start is called, a started Runner.
type runnerWorld struct {
	st    *store.Store
	res   *results.Service
	svc   *Service
	clk   *syncClock
	chk   *fakeChecker
	p     *fakePoster
	d     *Deliverer
	sched *scheduler.Scheduler
	r     *Runner
}

func newRunnerWorld(t *testing.T, st *store.Store, start time.Time, deliver DeliverOptions) *runnerWorld {
	t.Helper()
	if st == nil {
		st = openStore(t)
	}
	logger := slog.New(slog.DiscardHandler)
	res, err := results.New(results.Options{Store: st, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	clk := &syncClock{t: start}
	svc, err := New(Options{Store: st, Results: res, Logger: logger, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	p := &fakePoster{}
	if deliver.Poster == nil {
		deliver.Poster = p
	}
	deliver.RetryDelay = time.Nanosecond
	d, err := NewDeliverer(svc, deliver)
	if err != nil {
		t.Fatal(err)
	}
	b := res.Bind("kudos", results.Hooks{Declared: []string{"reports"}})
	if err := b.Subscribe(context.Background(), "reports", testGuild, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return &runnerWorld{st: st, res: res, svc: svc, clk: clk, chk: newChecker(), p: p, d: d}
}

// start starts a runner (opts' Service, Deliverer and Jobs filled in) and
// its scheduler; both are closed at the test's end.
func (w *runnerWorld) start(t *testing.T, opts RunnerOptions) {
	t.Helper()
	if err := w.tryStart(t, opts); err != nil {
		t.Fatal(err)
	}
}

// tryStart is start returning the runner's Start error (the runner and
// the scheduler run either way).
func (w *runnerWorld) tryStart(t *testing.T, opts RunnerOptions) error {
	t.Helper()
	ctx := context.Background()
	sched, err := scheduler.New(scheduler.Options{Store: w.st, Logger: slog.New(slog.DiscardHandler), Now: w.clk.now})
	if err != nil {
		t.Fatal(err)
	}
	opts.Service, opts.Deliverer, opts.Jobs = w.svc, w.d, sched
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r, err := NewRunner(opts)
	if err != nil {
		t.Fatal(err)
	}
	startErr := r.Start(ctx)
	sched.Start()
	w.sched, w.r = sched, r
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = r.Close(cctx)
		_ = sched.Close(cctx)
	})
	return startErr
}

// advance sets the clock and wakes the scheduler's runner (its timer is
// real time; Activate is idempotent and signals it).
func (w *runnerWorld) advance(at time.Time) {
	w.clk.set(at)
	w.r.binding().Activate()
}

func (w *runnerWorld) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := w.st.Reader().QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// job returns the runner's job of key (ok false: none).
func (w *runnerWorld) job(t *testing.T, key string) (scheduler.Job, bool) {
	t.Helper()
	jobs, err := w.sched.Jobs(context.Background(), JobModule)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Key == key {
			return j, true
		}
	}
	return scheduler.Job{}, false
}

func (w *runnerWorld) task(t *testing.T, id string) Task {
	t.Helper()
	got, err := w.svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func (w *runnerWorld) create(t *testing.T, edit func(*Definition)) Task {
	t.Helper()
	def := validDef()
	if edit != nil {
		edit(&def)
	}
	task, err := w.svc.Create(context.Background(), "alice", enabled, w.chk, def)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// runsOf returns task id's runs' "status" (or "skipped:N"), oldest first.
func (w *runnerWorld) runsOf(t *testing.T, id string) []string {
	t.Helper()
	runs, err := w.svc.Runs(context.Background(), id, MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(runs) - 1; i >= 0; i-- {
		s := string(runs[i].Status)
		if runs[i].Status == RunSkipped {
			s += ":" + strconv.FormatInt(runs[i].SkippedCount, 10)
		}
		out = append(out, s)
	}
	return out
}

// waitFor waits (generously: the machine is shared) for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// interval is an every-minute schedule anchored at t0 with the late policy.
func interval(late string) func(*Definition) { return every("1m", late) }

// every is an interval schedule anchored at t0.
func every(period, late string) func(*Definition) {
	return func(d *Definition) {
		d.Schedule = map[string]string{FieldKind: "interval", FieldEvery: period, FieldTimezone: "UTC", FieldAnchor: t0.Format(time.RFC3339), FieldLate: late}
	}
}

// TestRunnerIntervalRunsRepeatedly: a due task's job runs it (a completed
// run posting to every destination), and the handler's re-RunAt of its own
// key survives the scheduler's settle: the job is due at the next
// occurrence, and runs again there.
func TestRunnerIntervalRunsRepeatedly(t *testing.T) {
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	task := w.create(t, interval("catch_up"))
	w.start(t, RunnerOptions{})
	if j, ok := w.job(t, task.ID); !ok || !j.NextRunAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("job after Start = %+v, %v; want due at %s", j, ok, t0.Add(time.Minute))
	}
	for i := 1; i <= 3; i++ {
		w.advance(t0.Add(time.Duration(i) * time.Minute))
		waitFor(t, "run "+strconv.Itoa(i)+" completed", func() bool {
			return w.count(t, `SELECT count(*) FROM kimi_task_runs WHERE task_id = ? AND status = 'completed'`, task.ID) == i
		})
		next := t0.Add(time.Duration(i+1) * time.Minute)
		waitFor(t, "the job rescheduled and released", func() bool {
			j, ok := w.job(t, task.ID)
			return ok && j.NextRunAt.Equal(next) && j.LeaseHolder == ""
		})
	}
	if got := len(w.p.contents()); got != 3*3 {
		t.Fatalf("posted %d messages, want 9 (3 runs × 3 destinations)", got)
	}
	if got := w.runsOf(t, task.ID); strings.Join(got, ",") != "completed,completed,completed" {
		t.Fatalf("runs = %v", got)
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_result_publications`); n != 3 {
		t.Fatalf("%d publications, want 3", n)
	}
}

// TestRunnerJobFollowsState: pausing cancels the task's job, resuming
// schedules it at the next occurrence, an update moves it, deleting
// cancels it; a restart's reconcile drops a job whose task is gone.
func TestRunnerJobFollowsState(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	w.start(t, RunnerOptions{})
	task := w.create(t, interval("catch_up"))
	if _, ok := w.job(t, task.ID); !ok {
		t.Fatal("no job after Create")
	}
	if _, err := w.svc.SetPaused(ctx, "alice", task.ID, true); err != nil {
		t.Fatal(err)
	}
	if j, ok := w.job(t, task.ID); ok {
		t.Fatalf("a paused task's job is still scheduled: %+v", j)
	}
	w.clk.set(t0.Add(90 * time.Second))
	if _, err := w.svc.SetPaused(ctx, "alice", task.ID, false); err != nil {
		t.Fatal(err)
	}
	if j, ok := w.job(t, task.ID); !ok || !j.NextRunAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("job after resume = %+v, %v", j, ok)
	}
	def := validDef()
	def.Schedule = map[string]string{FieldKind: "interval", FieldEvery: "10m", FieldTimezone: "UTC", FieldAnchor: t0.Format(time.RFC3339)}
	if _, err := w.svc.Update(ctx, "alice", task.ID, enabled, w.chk, def); err != nil {
		t.Fatal(err)
	}
	if j, ok := w.job(t, task.ID); !ok || !j.NextRunAt.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("job after update = %+v, %v", j, ok)
	}
	if err := w.svc.Delete(ctx, "alice", task.ID); err != nil {
		t.Fatal(err)
	}
	if j, ok := w.job(t, task.ID); ok {
		t.Fatalf("a deleted task's job is still scheduled: %+v", j)
	}
	// A stray job (its task gone while the runner was down) is cancelled
	// by the next Start's reconcile.
	stray := strings.Repeat("ab", 16)
	if err := w.r.binding().RunAt(ctx, stray, t0.Add(time.Hour), handlerDue, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.r.reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.job(t, stray); ok {
		t.Fatal("reconcile kept the job of a task that does not exist")
	}
}

// TestRunnerCatchUpAndSkipAfterDowntime: the runner starts 52.5 minutes
// after two every-5-minutes tasks were created (the latest occurrence is
// 2.5 minutes late, beyond LateTolerance): the catch-up task runs once (a
// catch-up run) with the 9 earlier occurrences in one skipped row; the
// skip task runs nothing and records all 10 as skipped; both are due next
// at 55 minutes.
func TestRunnerCatchUpAndSkipAfterDowntime(t *testing.T) {
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	catch := w.create(t, every("5m", "catch_up"))
	skip := w.create(t, func(d *Definition) { every("5m", "skip")(d); d.Name = "Skipper" })
	w.clk.set(t0.Add(52*time.Minute + 30*time.Second))
	w.start(t, RunnerOptions{})
	next := t0.Add(55 * time.Minute)
	for _, id := range []string{catch.ID, skip.ID} {
		waitFor(t, "the task advanced past the outage", func() bool { return w.task(t, id).NextDue.Equal(next) })
	}
	waitFor(t, "the catch-up run completed", func() bool {
		return strings.Join(w.runsOf(t, catch.ID), ",") == "skipped:9,completed"
	})
	if got := w.runsOf(t, skip.ID); strings.Join(got, ",") != "skipped:10" {
		t.Fatalf("skip task's runs = %v, want one skipped row of 10", got)
	}
	runs, _ := w.svc.Runs(context.Background(), catch.ID, 10)
	if runs[0].Status != RunCompleted || !strings.Contains(runs[0].Detail, "catch-up") || !runs[0].Due.Equal(t0.Add(50*time.Minute)) {
		t.Fatalf("catch-up run = %+v", runs[0])
	}
	for _, id := range []string{catch.ID, skip.ID} {
		waitFor(t, "the job due at "+next.String(), func() bool {
			j, ok := w.job(t, id)
			return ok && j.NextRunAt.Equal(next) && j.LeaseHolder == ""
		})
	}
}

// small is a two-post output to destinations 100 and 101.
func small() Output {
	return Output{Posts: []Post{{ChannelID: 100, Content: "one"}, {ChannelID: 101, Content: "two"}}}
}

func (w *runnerWorld) runStatus(t *testing.T, id string) RunStatus {
	t.Helper()
	var s string
	if err := w.st.Reader().QueryRow(`SELECT status FROM kimi_task_runs WHERE id = ?`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return RunStatus(s)
}

func (w *runnerWorld) waitRun(t *testing.T, id string, want RunStatus) {
	t.Helper()
	waitFor(t, "run "+id+" "+string(want), func() bool { return w.runStatus(t, id) == want })
}

// TestRunnerComposeFailure: a composer's error fails that run only, with
// the reason on the run and in the log line; the task keeps its schedule.
func TestRunnerComposeFailure(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	w.start(t, RunnerOptions{Compose: func(Task, Definition) Composer { return failingComposer{} }})
	task := w.create(t, func(d *Definition) { d.LogChannelID = 102 })
	runID, err := w.r.RunNow(ctx, "bob", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	w.waitRun(t, runID, RunFailed)
	runs, _ := w.svc.Runs(ctx, task.ID, 1)
	if !strings.Contains(runs[0].Detail, "the model is asleep") {
		t.Fatalf("run detail = %q", runs[0].Detail)
	}
	waitFor(t, "the log line posted", func() bool { return len(w.p.contents()) == 1 })
	if c := w.p.contents()[0]; !strings.HasPrefix(c, "Task Morning digest: failed.") || !strings.Contains(c, "the model is asleep") {
		t.Fatalf("log line = %q", c)
	}
	if got := w.task(t, task.ID); got.State != StateActive || !got.NextDue.Equal(task.NextDue) {
		t.Fatalf("task after a compose failure = %+v", got)
	}
}

type failingComposer struct{}

func (failingComposer) Compose(context.Context, RunContext) (Output, error) {
	return Output{}, errors.New("the model is asleep")
}

// ctxPoster blocks every Post until its ctx ends (entered is signalled
// first).
type ctxPoster struct{ entered chan struct{} }

func (p *ctxPoster) Post(ctx context.Context, _, _ uint64, _ PostChunk) (uint64, string, error) {
	p.entered <- struct{}{}
	<-ctx.Done()
	return 0, "", ctx.Err()
}

// TestRunnerCloseCutsDelivery: Close waits for the deliveries until its
// ctx ends, then cancels them; the row cut mid-send stays sending, and
// the next Start on the same store makes it uncertain (its run uncertain,
// its task needs_attention) rather than posting it again.
func TestRunnerCloseCutsDelivery(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	cp := &ctxPoster{entered: make(chan struct{}, 1)}
	w := newRunnerWorld(t, st, t0, DeliverOptions{Poster: cp})
	w.start(t, RunnerOptions{})
	task := w.create(t, nil)
	runID, err := w.r.RunNow(ctx, "bob", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-cp.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery never posted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel() // Close's deadline is already over
	if err := w.r.Close(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want its ctx's error", err)
	}
	if _, err := w.r.RunNow(ctx, "bob", task.ID); !errors.Is(err, ErrNotRunnable) {
		t.Fatalf("RunNow after Close = %v", err)
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_task_posts WHERE run_id = ? AND seq = 1 AND status = 'sending'`, runID); n != 1 {
		t.Fatal("the row cut mid-send is not left sending")
	}
	_ = w.sched.Close(ctx)

	w2 := newRunnerWorld(t, st, t0, DeliverOptions{})
	w2.start(t, RunnerOptions{})
	if got := w2.runStatus(t, runID); got != RunUncertain {
		t.Fatalf("run after restart is %s, want uncertain", got)
	}
	if got := w2.task(t, task.ID).State; got != StateNeedsAttention {
		t.Fatalf("task after restart is %s", got)
	}
	if n := len(w2.p.contents()); n != 0 {
		t.Fatalf("the restart posted %d messages", n)
	}
}

// TestWatchersNotified: every commit that changes a task, a run or a
// post signals Watch: create, advance, prepare, each delivered row.
func TestWatchersNotified(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	ch := w.svc.Watch(ctx)
	drain := func() {
		select {
		case <-ch:
		default:
		}
	}
	expect := func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("no signal after %s", what)
		}
	}
	task := w.create(t, nil)
	expect("Create")
	drain()
	adv, err := w.svc.Advance(ctx, task.ID, task.NextDue)
	if err != nil {
		t.Fatal(err)
	}
	expect("Advance")
	drain()
	if err := w.svc.PrepareRun(ctx, adv.RunID, small()); err != nil {
		t.Fatal(err)
	}
	expect("PrepareRun")
	drain()
	w.p.fail = func(n int, _ PostChunk) error {
		if n == 1 {
			drain() // the claim's commit does not count: the record's does
		}
		return nil
	}
	if _, err := w.d.Deliver(ctx, adv.RunID); err != nil {
		t.Fatal(err)
	}
	expect("Deliver's records")
}

// preparedRun advances task to its next occurrence and prepares the run
// with small()'s output (no runner: the test delivers it).
func (w *runnerWorld) preparedRun(t *testing.T, task Task) Advanced {
	t.Helper()
	adv, err := w.svc.Advance(context.Background(), task.ID, task.NextDue)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.svc.PrepareRun(context.Background(), adv.RunID, small()); err != nil {
		t.Fatal(err)
	}
	return adv
}

// uncertainRun starts the runner, creates a task and runs it now with
// its first post ending uncertain (a connection reset after the send);
// it returns the task and the run, once uncertain.
func (w *runnerWorld) uncertainRun(t *testing.T) (Task, string) {
	t.Helper()
	w.p.fail = func(n int, _ PostChunk) error {
		if n == 1 {
			return errors.New("connection reset")
		}
		return nil
	}
	w.start(t, RunnerOptions{})
	task := w.create(t, nil)
	runID, err := w.r.RunNow(context.Background(), "bob", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	w.waitRun(t, runID, RunUncertain)
	return task, runID
}

// TestLastRuns: the newest run (by due time) of each task asked for, in
// one query; a task without runs and one not asked for are absent.
func TestLastRuns(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	a, b, none, other := w.create(t, nil), w.create(t, nil), w.create(t, nil), w.create(t, nil)
	insert := func(id, task string, due time.Time, status RunStatus) {
		t.Helper()
		if _, err := w.st.Writer().Exec(`INSERT INTO kimi_task_runs (id, task_id, revision, due_ms, status, created_ms) VALUES (?, ?, 1, ?, ?, ?)`,
			id, task, due.UnixMilli(), string(status), t0.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	insert(strings.Repeat("1", 32), a.ID, t0.Add(time.Hour), RunCompleted)
	insert(strings.Repeat("2", 32), a.ID, t0.Add(2*time.Hour), RunFailed)
	insert(strings.Repeat("3", 32), a.ID, t0, RunSkipped)
	insert(strings.Repeat("4", 32), b.ID, t0.Add(time.Hour), RunUncertain)
	insert(strings.Repeat("5", 32), other.ID, t0.Add(time.Hour), RunCompleted)
	got, err := w.svc.LastRuns(ctx, []string{a.ID, b.ID, none.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[a.ID].ID != strings.Repeat("2", 32) || got[a.ID].Status != RunFailed || got[b.ID].Status != RunUncertain {
		t.Fatalf("LastRuns = %+v", got)
	}
	if m, err := w.svc.LastRuns(ctx, nil); err != nil || len(m) != 0 {
		t.Fatalf("LastRuns(nil) = %v, %v", m, err)
	}
}
