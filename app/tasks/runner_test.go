package tasks

import (
	"context"
	"errors"
	"fmt"
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

// TestRunnerRecovery: at Start, a row left sending (Kimi died mid-send)
// becomes uncertain with its detail, its run uncertain and its task
// needs_attention (and unscheduled); a run left delivering resumes from its
// first unsent row (a sent row is never re-posted); a run left pending is
// composed, prepared and delivered.
func TestRunnerRecovery(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	mk := func(name string, prepare bool) (Task, string) {
		task := w.create(t, func(d *Definition) { d.Name = name })
		adv, err := w.svc.Advance(ctx, task.ID, task.NextDue)
		if err != nil || adv.RunID == "" {
			t.Fatalf("Advance = %+v, %v", adv, err)
		}
		if prepare {
			if err := w.svc.PrepareRun(ctx, adv.RunID, small()); err != nil {
				t.Fatal(err)
			}
		}
		return task, adv.RunID
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := w.st.Writer().Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	taskA, runA := mk("A", true)
	exec(`UPDATE kimi_task_posts SET status = 'sent', message_id = 5 WHERE run_id = ? AND seq = 1`, runA)
	exec(`UPDATE kimi_task_posts SET status = 'sending', token = 'x', attempts = 1 WHERE run_id = ? AND seq = 2`, runA)
	taskB, runB := mk("B", true)
	exec(`UPDATE kimi_task_posts SET status = 'sent', message_id = 6 WHERE run_id = ? AND seq = 1`, runB)
	_, runC := mk("C", false)

	w.start(t, RunnerOptions{})
	w.waitRun(t, runB, RunCompleted)
	w.waitRun(t, runC, RunCompleted)
	if got := w.runStatus(t, runA); got != RunUncertain {
		t.Fatalf("run A is %s, want uncertain", got)
	}
	posts, err := w.svc.RunPosts(ctx, runA)
	if err != nil || len(posts) != 2 {
		t.Fatalf("RunPosts(A) = %+v, %v", posts, err)
	}
	if posts[0].Status != PostSent || posts[0].MessageID != 5 || posts[1].Status != PostUncertain || posts[1].Detail != recoveredDetail || posts[1].Content != "two" {
		t.Fatalf("run A's posts = %+v", posts)
	}
	if got := w.task(t, taskA.ID).State; got != StateNeedsAttention {
		t.Fatalf("task A is %s, want needs_attention", got)
	}
	if _, ok := w.job(t, taskA.ID); ok {
		t.Fatal("a task that needs attention has a job")
	}
	if _, ok := w.job(t, taskB.ID); !ok {
		t.Fatal("task B has no job")
	}
	// B resumed at its row 2 only; C posted its three destinations; A
	// nothing.
	// (B and C deliver at once: their posts interleave.)
	got := w.p.contents()
	twos, mornings := 0, 0
	for _, c := range got {
		switch {
		case c == "two":
			twos++
		case strings.HasPrefix(c, "Good morning"):
			mornings++
		}
	}
	if twos != 1 || mornings != 3 || len(got) != 4 {
		t.Fatalf("posted %q, want B's \"two\" and C's three posts, nothing of A", got)
	}
}

// TestRunNow: a run due now for the current revision, with its audit
// row, delivered, the schedule unchanged; a paused or needs-attention task
// refuses with ErrNotRunnable, an unknown one with ErrNotFound.
func TestRunNow(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	w.start(t, RunnerOptions{})
	task := w.create(t, nil)
	runID, err := w.r.RunNow(ctx, "bob", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	w.waitRun(t, runID, RunCompleted)
	if got := w.task(t, task.ID); !got.NextDue.Equal(task.NextDue) || !got.LastDue.Equal(task.LastDue) || got.State != StateActive {
		t.Fatalf("task after run now = %+v, want its schedule unchanged", got)
	}
	if j, ok := w.job(t, task.ID); !ok || !j.NextRunAt.Equal(task.NextDue) {
		t.Fatalf("job = %+v, %v", j, ok)
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_audit_log WHERE action = ? AND actor = 'bob' AND target = ?`, ActionRunNow, task.ID); n != 1 {
		t.Fatalf("%d run-now audit rows", n)
	}
	if n := len(w.p.contents()); n != 3 {
		t.Fatalf("posted %d, want 3", n)
	}
	if _, err := w.svc.SetPaused(ctx, "alice", task.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := w.r.RunNow(ctx, "bob", task.ID); !errors.Is(err, ErrNotRunnable) || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("RunNow of a paused task = %v", err)
	}
	if _, err := w.st.Writer().Exec(`UPDATE kimi_tasks SET state = 'needs_attention' WHERE id = ?`, task.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := w.r.RunNow(ctx, "bob", task.ID); !errors.Is(err, ErrNotRunnable) || !strings.Contains(err.Error(), "needs attention") {
		t.Fatalf("RunNow of a task that needs attention = %v", err)
	}
	if _, err := w.r.RunNow(ctx, "bob", strings.Repeat("0", 32)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("RunNow of no task = %v", err)
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_task_runs WHERE task_id = ?`, task.ID); n != 1 {
		t.Fatalf("%d runs after the refusals, want 1", n)
	}
}

// TestPreview: channel 0 renders the chunks without a row or audit;
// a postable channel outside the destinations gets every chunk as a
// preview run (audit row, no publication, the task untouched); a channel
// the owner cannot post in, or a forum, refuses.
func TestPreview(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	w.chk.kinds[106] = ChannelText
	w.start(t, RunnerOptions{Checker: w.chk})
	task := w.create(t, nil)
	p, err := w.r.Preview(ctx, "bob", task.ID, 0)
	if err != nil || p.RunID != "" || len(p.Chunks) != 3 || p.Chunks[0].ChannelID != 100 || !strings.HasPrefix(p.Chunks[0].Content, "Good morning") {
		t.Fatalf("Preview(0) = %+v, %v", p, err)
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_task_runs`); n != 0 {
		t.Fatalf("a render-only preview made %d runs", n)
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_audit_log WHERE action = ?`, ActionPreview); n != 0 {
		t.Fatalf("a render-only preview wrote %d audit rows", n)
	}
	for _, tc := range []struct {
		ch   uint64
		want string
	}{{104, "the owner cannot post in channel 104"}, {103, "is a forum"}, {105, "Kimi cannot post"}, {999, "not a channel of this server"}} {
		if _, err := w.r.Preview(ctx, "bob", task.ID, tc.ch); !errors.Is(err, ErrNotRunnable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Preview(%d) = %v, want ErrNotRunnable saying %q", tc.ch, err, tc.want)
		}
	}
	p, err = w.r.Preview(ctx, "bob", task.ID, 106)
	if err != nil || p.RunID == "" || len(p.Chunks) != 3 {
		t.Fatalf("Preview(106) = %+v, %v", p, err)
	}
	waitFor(t, "the preview posted", func() bool { return len(w.p.contents()) == 3 })
	waitFor(t, "the preview finished", func() bool {
		return w.count(t, `SELECT count(*) FROM kimi_task_runs WHERE id = ? AND finished_ms > 0`, p.RunID) == 1
	})
	for _, c := range w.p.calls {
		if c.channel != 106 {
			t.Fatalf("a preview post went to %d: %+v", c.channel, w.p.calls)
		}
	}
	if got := w.runStatus(t, p.RunID); got != RunPreview {
		t.Fatalf("preview run is %s", got)
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_result_publications`); n != 0 {
		t.Fatalf("a preview was published (%d)", n)
	}
	if got := w.task(t, task.ID); got.State != StateActive || !got.NextDue.Equal(task.NextDue) {
		t.Fatalf("task after a preview = %+v", got)
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_audit_log WHERE action = ? AND actor = 'bob' AND target = ?`, ActionPreview, task.ID); n != 1 {
		t.Fatalf("%d preview audit rows, want 1", n)
	}
	if err := w.r.RetryPost(ctx, "bob", p.RunID, 1); !errors.Is(err, ErrNotRunnable) {
		t.Fatalf("RetryPost of a preview = %v", err)
	}
}

// TestRetryPost: a post that ended uncertain is re-sent after the
// operator's retry: the row pending then sent, the run completed, the task
// active again with a fresh next occurrence and its job; refused for a
// row that is not uncertain, and ErrNotFound for no run.
func TestRetryPost(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	task, runID := w.uncertainRun(t)
	if got := w.task(t, task.ID).State; got != StateNeedsAttention {
		t.Fatalf("task is %s after an uncertain post", got)
	}
	waitFor(t, "the job cancelled", func() bool { _, ok := w.job(t, task.ID); return !ok })
	if err := w.r.RetryPost(ctx, "bob", runID, 2); !errors.Is(err, ErrNotRunnable) || !strings.Contains(err.Error(), "post 2 is pending") {
		t.Fatalf("RetryPost of a pending row = %v", err)
	}
	if err := w.r.RetryPost(ctx, "bob", strings.Repeat("0", 32), 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("RetryPost of no run = %v", err)
	}
	w.clk.set(t0.Add(48 * time.Hour))
	if err := w.r.RetryPost(ctx, "bob", runID, 1); err != nil {
		t.Fatal(err)
	}
	w.waitRun(t, runID, RunCompleted)
	posts, err := w.svc.RunPosts(ctx, runID)
	if err != nil || len(posts) != 3 || posts[0].Status != PostSent || posts[0].Attempts != 2 {
		t.Fatalf("posts = %+v, %v", posts, err)
	}
	got := w.task(t, task.ID)
	if got.State != StateActive || !got.NextDue.After(t0.Add(48*time.Hour)) {
		t.Fatalf("task after the retry = %+v", got)
	}
	if j, ok := w.job(t, task.ID); !ok || !j.NextRunAt.Equal(got.NextDue) {
		t.Fatalf("job after the retry = %+v, %v", j, ok)
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_audit_log WHERE action = ? AND actor = 'bob' AND target = ?`, ActionRetryPost, task.ID); n != 1 {
		t.Fatalf("%d retry audit rows, want 1", n)
	}
	if err := w.r.RetryPost(ctx, "bob", runID, 1); !errors.Is(err, ErrNotRunnable) {
		t.Fatalf("RetryPost of a sent row = %v", err)
	}
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

// TestPurgeExpired: the retention job is scheduled at the oldest ended
// run's expiry and, when it fires, deletes the expired runs with their
// posts and revokes their publications, keeps the recent ones and
// schedules itself at the next expiry; PurgeExpired works in batches.
func TestPurgeExpired(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	w.start(t, RunnerOptions{})
	task := w.create(t, nil)
	old, err := w.r.RunNow(ctx, "bob", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	w.waitRun(t, old, RunCompleted)
	waitFor(t, "the retention job", func() bool { j, ok := w.job(t, keyRetention); return ok && j.NextRunAt.Equal(t0.Add(Retention)) })
	if n := w.count(t, `SELECT count(*) FROM kimi_result_publications WHERE run_id = ?`, old); n != 1 {
		t.Fatalf("%d publications of the old run", n)
	}
	later := t0.Add(Retention + time.Minute)
	w.clk.set(later)
	recent, err := w.r.RunNow(ctx, "bob", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	w.waitRun(t, recent, RunCompleted)
	w.advance(later)
	waitFor(t, "the old run purged", func() bool { return w.count(t, `SELECT count(*) FROM kimi_task_runs WHERE id = ?`, old) == 0 })
	for q, want := range map[string]int{
		`SELECT count(*) FROM kimi_task_posts WHERE run_id = ?`:          0,
		`SELECT count(*) FROM kimi_result_publications WHERE run_id = ?`: 0,
	} {
		if n := w.count(t, q, old); n != want {
			t.Errorf("%s = %d, want %d", q, n, want)
		}
	}
	if w.runStatus(t, recent) != RunCompleted || w.count(t, `SELECT count(*) FROM kimi_result_publications WHERE run_id = ?`, recent) != 1 {
		t.Fatal("the recent run or its publication was purged")
	}
	waitFor(t, "the retention job at the recent run's expiry", func() bool {
		j, ok := w.job(t, keyRetention)
		return ok && j.NextRunAt.Equal(later.Add(Retention))
	})

	// Batches: 1,234 expired skipped rows go in three transactions.
	for i := range 1234 {
		id := fmt.Sprintf("%032x", 0x1000+i)
		if _, err := w.st.Writer().Exec(`INSERT INTO kimi_task_runs (id, task_id, revision, due_ms, status, skipped_count, created_ms, finished_ms)
			VALUES (?, ?, 1, ?, 'skipped', 1, ?, ?)`, id, task.ID, t0.UnixMilli(), t0.UnixMilli(), t0.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	n, err := w.svc.PurgeExpired(ctx, later.Add(time.Hour))
	if err != nil || n != 1234 {
		t.Fatalf("PurgeExpired = %d, %v; want 1234", n, err)
	}
	if w.runStatus(t, recent) != RunCompleted {
		t.Fatal("the recent run was purged")
	}
}

// refuser is an Authorizer refusing one channel.
type refuser struct{ channel uint64 }

func (r refuser) Authorize(_ context.Context, guild, owner, channel uint64, _ Needs) error {
	if guild != testGuild || owner != testOwner {
		return errors.New("wrong guild or owner asked")
	}
	if channel == r.channel {
		return errors.New("the owner's tier is below the server's minimum for scheduled tasks")
	}
	return nil
}

// needsRecorder is an Authorizer recording what each check asked.
type needsRecorder struct {
	mu    sync.Mutex
	asked []string // "channel:needs"
}

func (r *needsRecorder) Authorize(_ context.Context, _, _, channel uint64, needs Needs) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, fmt.Sprintf("%d:%d", channel, needs))
	return nil
}

// TestDeliverAuthorizesWhatEachChunkNeeds: the Authorizer is asked for
// what each message carries: the first chunk of a post with a file and an
// embed needs both, its next chunk and a text-only post neither (so an
// owner who may post text is not refused for permissions a message does
// not use).
func TestDeliverAuthorizesWhatEachChunkNeeds(t *testing.T) {
	ctx := context.Background()
	rec := &needsRecorder{}
	w := newRunnerWorld(t, nil, t0, DeliverOptions{Authorize: rec})
	task := w.create(t, nil)
	adv, err := w.svc.Advance(ctx, task.ID, task.NextDue)
	if err != nil {
		t.Fatal(err)
	}
	out := Output{Posts: []Post{
		{ChannelID: 100, Content: strings.Repeat("word ", MaxChunk/5+10), Embed: &Embed{Title: "Digest"}, Files: []Attachment{{Name: "agenda.txt", Data: []byte("agenda")}}},
		{ChannelID: 101, Content: "plain"},
	}}
	if err := w.svc.PrepareRun(ctx, adv.RunID, out); err != nil {
		t.Fatal(err)
	}
	if status, err := w.d.Deliver(ctx, adv.RunID); err != nil || status != RunCompleted {
		t.Fatalf("Deliver = %s, %v; want completed", status, err)
	}
	want := fmt.Sprintf("100:%d,100:0,101:0", NeedFiles|NeedEmbeds)
	if got := strings.Join(rec.asked, ","); got != want {
		t.Fatalf("asked %s, want %s", got, want)
	}
}

// TestDeliverAuthorizerRefusal: a refused row is failed with the
// refusal as its detail before anything is sent to its channel; the run
// fails and the task needs attention.
func TestDeliverAuthorizerRefusal(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{Authorize: refuser{channel: 101}})
	task := w.create(t, nil)
	adv := w.preparedRun(t, task)
	status, err := w.d.Deliver(ctx, adv.RunID)
	if err != nil || status != RunFailed {
		t.Fatalf("Deliver = %s, %v; want failed", status, err)
	}
	posts, _ := w.svc.RunPosts(ctx, adv.RunID)
	if len(posts) != 2 || posts[0].Status != PostSent || posts[1].Status != PostFailed || posts[1].Attempts != 0 ||
		posts[1].Detail != "the owner's tier is below the server's minimum for scheduled tasks" {
		t.Fatalf("posts = %+v", posts)
	}
	if got := w.p.contents(); strings.Join(got, ",") != "one" {
		t.Fatalf("posted %q, want only the authorized channel's", got)
	}
	if got := w.task(t, task.ID).State; got != StateNeedsAttention {
		t.Fatalf("task is %s", got)
	}
}

// TestDeliverLogLineTellsOutcome: a run whose post failed still posts its
// log line, saying failed and why (it was written as "completed" up front
// and stayed pending behind the failed row).
func TestDeliverLogLineTellsOutcome(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	w.p.fail = func(_ int, c PostChunk) error {
		if c.ChannelID == 100 {
			return &PostError{Status: 403, Err: errors.New("Missing Permissions")}
		}
		return nil
	}
	task := w.create(t, func(d *Definition) { d.LogChannelID = 102 })
	adv := w.preparedRun(t, task)
	status, err := w.d.Deliver(ctx, adv.RunID)
	if err != nil || status != RunFailed {
		t.Fatalf("Deliver = %s, %v; want failed", status, err)
	}
	posts, _ := w.svc.RunPosts(ctx, adv.RunID)
	if len(posts) != 3 || posts[0].Status != PostFailed || posts[1].Status != PostPending || !posts[2].Log || posts[2].Status != PostSent {
		t.Fatalf("posts = %+v", posts)
	}
	got := w.p.contents()
	if len(got) != 1 || !strings.HasPrefix(got[0], "Task Morning digest: failed.") || !strings.Contains(got[0], "Missing Permissions") {
		t.Fatalf("posted %q, want the log line telling the failure", got)
	}
	if w.p.calls[0].channel != 102 {
		t.Fatalf("log line went to %d", w.p.calls[0].channel)
	}
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

// TestPreviewOneAtATime: while a task's test preview is being posted, a
// second preview of it is refused (the original allows one per task);
// another task's preview is not; once the first ended, the task may be
// previewed again.
func TestPreviewOneAtATime(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	w.chk.kinds[106] = ChannelText
	w.p.gate, w.p.entered = make(chan struct{}), make(chan struct{}, 64)
	w.start(t, RunnerOptions{Checker: w.chk})
	// Registered after start's cleanup, so it runs first: a failed
	// assertion does not leave Close waiting on a held post.
	release := sync.OnceFunc(func() { close(w.p.gate) })
	t.Cleanup(release)
	a, b := w.create(t, nil), w.create(t, nil)
	first, err := w.r.Preview(ctx, "bob", a.ID, 106)
	if err != nil {
		t.Fatal(err)
	}
	<-w.p.entered // the first chunk is being sent
	if _, err := w.r.Preview(ctx, "bob", a.ID, 106); !errors.Is(err, ErrNotRunnable) || !strings.Contains(err.Error(), "still being posted") {
		t.Fatalf("a second preview while the first posts = %v, want ErrNotRunnable", err)
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_task_runs WHERE task_id = ?`, a.ID); n != 1 {
		t.Fatalf("%d preview runs of the task, want 1", n)
	}
	// Render-only previews and another task's preview are not held up.
	if _, err := w.r.Preview(ctx, "bob", a.ID, 0); err != nil {
		t.Fatalf("render-only preview = %v", err)
	}
	other, err := w.r.Preview(ctx, "bob", b.ID, 106)
	if err != nil {
		t.Fatalf("another task's preview = %v", err)
	}
	release()
	for _, id := range []string{first.RunID, other.RunID} {
		waitFor(t, "the preview finished", func() bool {
			return w.count(t, `SELECT count(*) FROM kimi_task_runs WHERE id = ? AND finished_ms > 0`, id) == 1
		})
	}
	waitFor(t, "the task's preview slot freed", func() bool {
		_, err := w.r.Preview(ctx, "bob", a.ID, 106)
		return err == nil
	})
}

// TestPurgeKeepsTheRunHoldingAttention: an uncertain run whose uncertain
// post holds its task in needs_attention outlives retention (the retry on
// its page is the operator's way out) and does not count as the oldest
// ended run (the retention job would fire for it again and again); once
// the task no longer needs attention, it is purged.
func TestPurgeKeepsTheRunHoldingAttention(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	task, _ := w.uncertainRun(t)
	if got := w.task(t, task.ID).State; got != StateNeedsAttention {
		t.Fatalf("task is %s", got)
	}
	late := t0.Add(2 * Retention)
	if n, err := w.svc.PurgeExpired(ctx, late); err != nil || n != 0 {
		t.Fatalf("PurgeExpired = %d, %v; want the held run kept", n, err)
	}
	if _, ok, err := w.svc.oldestEnded(ctx); err != nil || ok {
		t.Fatalf("oldestEnded = %v, %v; want none while the run is held", ok, err)
	}
	if _, err := w.svc.SetPaused(ctx, "bob", task.ID, true); err != nil {
		t.Fatal(err)
	}
	if n, err := w.svc.PurgeExpired(ctx, late); err != nil || n != 1 {
		t.Fatalf("PurgeExpired after the pause = %d, %v; want 1", n, err)
	}
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

// unavailableAuth answers ErrUnavailable for its first n checks (n < 0:
// always), then nil.
type unavailableAuth struct {
	mu sync.Mutex
	n  int
}

func (a *unavailableAuth) Authorize(context.Context, uint64, uint64, uint64, Needs) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == 0 {
		return nil
	}
	a.n--
	return Unavailable(errors.New("the owner's trust tier could not be read: discord: 503"))
}

// TestDeliverRetriesAnUnavailableCheck: a check that could not be made
// (Discord briefly unreachable) is made again after a wait instead of
// failing the row; one that stays unavailable fails the row after
// MaxAuthorizeWaits re-checks, with the error as its reason.
func TestDeliverRetriesAnUnavailableCheck(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		n          int
		want       RunStatus
		wantDetail string
	}{
		{"a brief outage", 2, RunCompleted, ""},
		{"an outage that lasts", -1, RunFailed, "the owner's trust tier could not be read: discord: 503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth := &unavailableAuth{n: tc.n}
			w := newRunnerWorld(t, nil, t0, DeliverOptions{Authorize: auth, RetryDelay: time.Millisecond})
			task := w.create(t, nil)
			adv := w.preparedRun(t, task)
			status, err := w.d.Deliver(ctx, adv.RunID)
			if err != nil || status != tc.want {
				t.Fatalf("Deliver = %s, %v; want %s", status, err, tc.want)
			}
			posts, _ := w.svc.RunPosts(ctx, adv.RunID)
			if tc.want == RunFailed && (posts[0].Status != PostFailed || posts[0].Detail != tc.wantDetail) {
				t.Fatalf("first post = %+v", posts[0])
			}
			if tc.want == RunFailed && auth.n != -1-(MaxAuthorizeWaits+1) {
				t.Fatalf("%d checks made, want %d", -1-auth.n, MaxAuthorizeWaits+1)
			}
		})
	}
}

// TestDuePreparesALeftOverRun: a run an earlier due handler made but
// could not prepare (Advance committed, then a store error) is prepared
// and delivered by the task's next due handler, not left pending until
// the next Start; preparing a run that was prepared (and delivered)
// meanwhile leaves it as it is.
func TestDuePreparesALeftOverRun(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	task := w.create(t, interval("catch_up"))
	w.start(t, RunnerOptions{})
	// The left-over: the first occurrence advanced without a prepare.
	adv, err := w.svc.Advance(ctx, task.ID, t0.Add(time.Minute))
	if err != nil || adv.RunID == "" {
		t.Fatalf("Advance = %+v, %v", adv, err)
	}
	if err := w.r.reschedule(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	w.advance(t0.Add(2 * time.Minute))
	waitFor(t, "both runs completed", func() bool {
		return w.count(t, `SELECT count(*) FROM kimi_task_runs WHERE task_id = ? AND status = 'completed'`, task.ID) == 2
	})
	if got := w.runStatus(t, adv.RunID); got != RunCompleted {
		t.Fatalf("the left-over run is %s", got)
	}
	// prepare of a run already prepared is a no-op, not a failure.
	if err := w.r.prepare(ctx, adv.RunID, 0); err != nil {
		t.Fatal(err)
	}
	if got := w.runStatus(t, adv.RunID); got != RunCompleted {
		t.Fatalf("a second prepare left the run %s", got)
	}
}

// TestStartProblemKeepsTheJobsRunning: a recovery step that fails at
// Start (here: a row left sending cannot be marked uncertain) is
// returned and kept as the runner's Problem for /tasks, and the jobs run
// anyway: a due task still runs and completes; the row left sending
// stays blocked, never re-sent.
func TestStartProblemKeepsTheJobsRunning(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	stuck := w.create(t, func(d *Definition) { d.Name = "stuck" })
	adv := w.preparedRun(t, stuck)
	for _, q := range []string{
		`UPDATE kimi_task_posts SET status = 'sending', token = 'x', attempts = 1 WHERE run_id = '` + adv.RunID + `' AND seq = 1`,
		`CREATE TRIGGER refuse_uncertain BEFORE UPDATE OF status ON kimi_task_posts WHEN NEW.status = 'uncertain' BEGIN SELECT RAISE(ABORT, 'refused'); END`,
	} {
		if _, err := w.st.Writer().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	task := w.create(t, interval("catch_up"))
	err := w.tryStart(t, RunnerOptions{})
	if err == nil || !strings.Contains(w.r.Problem(), "could not finish starting") || !strings.Contains(w.r.Problem(), "refused") {
		t.Fatalf("Start = %v, Problem %q; want the recovery's error in both", err, w.r.Problem())
	}
	w.advance(t0.Add(time.Minute))
	waitFor(t, "the due task completed", func() bool {
		return w.count(t, `SELECT count(*) FROM kimi_task_runs WHERE task_id = ? AND status = 'completed'`, task.ID) == 1
	})
	posts, _ := w.svc.RunPosts(ctx, adv.RunID)
	if posts[0].Status != PostSending || len(w.p.contents()) != 3 {
		t.Fatalf("the stuck row is %s and %d posts were sent; want it left sending and only the due task's 3", posts[0].Status, len(w.p.contents()))
	}
}

// TestRestartLeavesRightJobsAlone: a second Start over jobs that already
// match their tasks writes none of them again (the job's revision is
// unchanged), and still fixes one that does not match.
func TestRestartLeavesRightJobsAlone(t *testing.T) {
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	right := w.create(t, interval("catch_up"))
	wrong := w.create(t, interval("catch_up"))
	w.start(t, RunnerOptions{})
	rev := func(key string) string {
		t.Helper()
		var r string
		if err := w.st.Reader().QueryRow(`SELECT revision FROM kimi_scheduler_jobs WHERE module = ? AND job_key = ?`, JobModule, key).Scan(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	before, wrongBefore := rev(right.ID), rev(wrong.ID)
	if err := w.r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.Writer().Exec(`UPDATE kimi_scheduler_jobs SET run_at_ms = run_at_ms + 1000 WHERE module = ? AND job_key = ?`, JobModule, wrong.ID); err != nil {
		t.Fatal(err)
	}
	w.start(t, RunnerOptions{})
	if got := rev(right.ID); got != before {
		t.Errorf("a job that was right was written again at Start (revision %s → %s)", before, got)
	}
	if got := rev(wrong.ID); got == wrongBefore {
		t.Error("a job off its task's next occurrence was not fixed at Start")
	}
	if j, ok := w.job(t, wrong.ID); !ok || !j.NextRunAt.Equal(wrong.NextDue) {
		t.Errorf("the fixed job = %+v, %v; want due at %s", j, ok, wrong.NextDue)
	}
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
