package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// runsOf collects the runs a handler sends, with a deadline per run.
type runsOf chan sdk.JobRun

func (ch runsOf) next(t *testing.T, what string) sdk.JobRun {
	t.Helper()
	select {
	case run := <-ch:
		return run
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		return sdk.JobRun{}
	}
}

// none checks that no run arrived, after the runner finished two steps.
func (ch runsOf) none(t *testing.T, r *rig) {
	t.Helper()
	r.quiesce()
	select {
	case run := <-ch:
		t.Fatalf("unexpected run of %q", run.Key)
	default:
	}
}

// keptRig binds module "m" with handler "h", which reports each run on the
// returned channel and, for the keys in block, waits for their release.
func keptRig(t *testing.T, block map[string]chan struct{}) (*rig, *Binding, runsOf) {
	t.Helper()
	r := newRig(t)
	runs := make(runsOf, 64)
	b := r.s.Bind("m", Hooks{})
	if err := b.Register("h", func(ctx context.Context, run sdk.JobRun) error {
		runs <- run
		if ch := block[run.Key]; ch != nil {
			select {
			case <-ch:
			case <-ctx.Done():
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return r, b, runs
}

// TestKeptJobsRunInOrderWithoutAScanEach: a module's due jobs are read by
// one scan and then claimed one after another from what it kept, in due
// order, each settled (deleted) before the next starts — not one scan
// query per job.
func TestKeptJobsRunInOrderWithoutAScanEach(t *testing.T) {
	r, b, runs := keptRig(t, nil)
	ctx := context.Background()
	const n = 20
	base := r.clk.Now().Add(-time.Hour)
	for i := range n {
		// Scheduled in reverse, due in key order.
		k := n - 1 - i
		if err := b.RunAt(ctx, fmt.Sprintf("job-%02d", k), base.Add(time.Duration(k)*time.Second), "h", nil); err != nil {
			t.Fatal(err)
		}
	}
	scans0 := r.s.scans.Load()
	b.Activate()
	for i := range n {
		run := runs.next(t, fmt.Sprintf("run %d", i))
		if want := fmt.Sprintf("job-%02d", i); run.Key != want {
			t.Fatalf("run %d is %q, want %q (due order)", i, run.Key, want)
		}
		if run.Attempt != 1 {
			t.Fatalf("%s: attempt %d, want 1", run.Key, run.Attempt)
		}
	}
	runs.none(t, r)
	eventually(t, "every job settled", func() bool { return r.settled("m", fmt.Sprintf("job-%02d", n-1)) })
	// One scan read them all; one more finds the module empty.
	if got := r.s.scans.Load() - scans0; got > 3 {
		t.Fatalf("%d scan queries for %d jobs of one module: the kept jobs were not used", got, n)
	}
	var left int
	if err := r.st.Reader().QueryRow(`SELECT count(*) FROM kimi_scheduler_jobs`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d jobs left", left)
	}
}

// TestKeptJobChangedBehindTheSchedulerIsReadAgain: jobs kept from a scan
// and then changed in the table by something other than this scheduler
// (another process on the database) are not run as they were read: a
// replaced one runs with its new payload, a deleted one does not run.
func TestKeptJobChangedBehindTheSchedulerIsReadAgain(t *testing.T) {
	release := make(chan struct{})
	r, b, runs := keptRig(t, map[string]chan struct{}{"a": release})
	ctx := context.Background()
	base := r.clk.Now().Add(-time.Minute)
	for i, k := range []string{"a", "b", "c", "d"} {
		if err := b.RunAt(ctx, k, base.Add(time.Duration(i)*time.Second), "h", map[string]int{"v": 1}); err != nil {
			t.Fatal(err)
		}
	}
	b.Activate()
	if run := runs.next(t, "a"); run.Key != "a" {
		t.Fatalf("first run %q, want a", run.Key)
	}
	r.s.mu.Lock()
	kept := len(r.s.ahead["m"])
	r.s.mu.Unlock()
	if kept != 3 {
		t.Fatalf("%d jobs kept while a runs, want 3", kept)
	}
	// Behind the scheduler's back (no binding call, so nothing marks the
	// module): b is replaced, d goes.
	if _, err := r.st.Writer().Exec(`UPDATE kimi_scheduler_jobs SET payload = '{"v":2}', revision = 'replaced' WHERE module = 'm' AND job_key = 'b'`); err != nil {
		t.Fatal(err)
	}
	if _, err := r.st.Writer().Exec(`DELETE FROM kimi_scheduler_jobs WHERE module = 'm' AND job_key = 'd'`); err != nil {
		t.Fatal(err)
	}
	close(release)
	bRun := runs.next(t, "b")
	if bRun.Key != "b" {
		t.Fatalf("after a: %q, want b", bRun.Key)
	}
	var p map[string]int
	if err := json.Unmarshal(bRun.Payload, &p); err != nil || p["v"] != 2 {
		t.Fatalf("b ran with payload %s (%v), want the replaced one", bRun.Payload, err)
	}
	if c := runs.next(t, "c"); c.Key != "c" {
		t.Fatalf("after b: %q, want c", c.Key)
	}
	// d was deleted: it does not run.
	runs.none(t, r)
}

// TestJobScheduledBeforeTheKeptOnesRunsFirst: a job its module schedules
// while the others wait in memory, due before them, runs next: the
// binding's write drops what was kept.
func TestJobScheduledBeforeTheKeptOnesRunsFirst(t *testing.T) {
	release := make(chan struct{})
	r, b, runs := keptRig(t, map[string]chan struct{}{"k1": release})
	ctx := context.Background()
	base := r.clk.Now().Add(-time.Minute)
	for i, k := range []string{"k1", "k2", "k3"} {
		if err := b.RunAt(ctx, k, base.Add(time.Duration(i)*time.Second), "h", nil); err != nil {
			t.Fatal(err)
		}
	}
	b.Activate()
	if run := runs.next(t, "k1"); run.Key != "k1" {
		t.Fatalf("first run %q, want k1", run.Key)
	}
	if err := b.RunAt(ctx, "early", base.Add(-time.Hour), "h", nil); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Cancel(ctx, "k3"); err != nil || !ok {
		t.Fatalf("cancel k3: %v, %v", ok, err)
	}
	close(release)
	for _, want := range []string{"early", "k2"} {
		if run := runs.next(t, want); run.Key != want {
			t.Fatalf("ran %q, want %q", run.Key, want)
		}
	}
	runs.none(t, r)
}

// TestRecurringJobBesideKeptJobs: a recurring job's settle keeps its row
// (an interval on), which makes the step read its module again; the
// one-shot jobs due beside it all run once, and the recurring one runs
// again when the clock reaches it.
func TestRecurringJobBesideKeptJobs(t *testing.T) {
	r, b, runs := keptRig(t, nil)
	ctx := context.Background()
	if err := b.RunEvery(ctx, "every", time.Minute, "h", nil, sdk.EveryOptions{}); err != nil {
		t.Fatal(err)
	}
	base := r.clk.Now().Add(-time.Minute)
	for i, k := range []string{"o1", "o2"} {
		if err := b.RunAt(ctx, k, base.Add(time.Duration(i)*time.Second), "h", nil); err != nil {
			t.Fatal(err)
		}
	}
	b.Activate()
	seen := map[string]bool{}
	for range 3 {
		seen[runs.next(t, "the due jobs").Key] = true
	}
	if !seen["every"] || !seen["o1"] || !seen["o2"] {
		t.Fatalf("ran %v, want every, o1 and o2", seen)
	}
	runs.none(t, r)
	r.advance(time.Minute)
	if run := runs.next(t, "the recurring job again"); run.Key != "every" {
		t.Fatalf("ran %q, want every", run.Key)
	}
}

// TestKeptPayloadsAreBounded: what a module keeps in memory is bounded by
// its payloads' size, not only by the count; the jobs past it still run,
// read by a later scan.
func TestKeptPayloadsAreBounded(t *testing.T) {
	release := make(chan struct{})
	r, b, runs := keptRig(t, map[string]chan struct{}{"big-00": release})
	ctx := context.Background()
	big := map[string]string{"v": strings.Repeat("x", 64<<10)}
	base := r.clk.Now().Add(-time.Minute)
	const n = 10
	for i := range n {
		if err := b.RunAt(ctx, fmt.Sprintf("big-%02d", i), base.Add(time.Duration(i)*time.Second), "h", big); err != nil {
			t.Fatal(err)
		}
	}
	b.Activate()
	runs.next(t, "the first job")
	r.s.mu.Lock()
	held := 0
	for _, j := range r.s.ahead["m"] {
		held += len(j.payload)
	}
	kept := len(r.s.ahead["m"])
	r.s.mu.Unlock()
	if held > aheadBytes || kept == 0 || kept >= n-1 {
		t.Fatalf("%d jobs kept holding %d payload bytes (bound %d)", kept, held, aheadBytes)
	}
	close(release)
	for i := 1; i < n; i++ {
		if run := runs.next(t, fmt.Sprintf("job %d", i)); run.Key != fmt.Sprintf("big-%02d", i) {
			t.Fatalf("run %d is %q", i, run.Key)
		}
	}
	runs.none(t, r)
}

// TestWaitIdleWaitsForTheRunningJobsToSettle: WaitIdle returns at once
// with nothing due, waits while a job runs (its ctx's end reported),
// returns once that run is settled, waits for a job that is due but not
// yet claimed, and reports ErrClosed once the scheduler closed.
func TestWaitIdleWaitsForTheRunningJobsToSettle(t *testing.T) {
	release := make(chan struct{})
	r, b, runs := keptRig(t, map[string]chan struct{}{"slow": release})
	ctx := context.Background()
	if err := r.s.WaitIdle(ctx); err != nil {
		t.Fatalf("idle scheduler: %v", err)
	}
	if err := b.RunAt(ctx, "slow", r.clk.Now(), "h", nil); err != nil {
		t.Fatal(err)
	}
	b.Activate()
	runs.next(t, "slow")
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := r.s.WaitIdle(short); err == nil {
		t.Fatal("WaitIdle returned while the job ran")
	}
	close(release)
	if err := r.s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if !r.settled("m", "slow") {
		t.Fatal("WaitIdle returned before the run was settled")
	}
	// A job due now, not claimed yet when WaitIdle is called: it returns
	// once that job ran.
	if err := b.RunAt(ctx, "next", r.clk.Now(), "h", nil); err != nil {
		t.Fatal(err)
	}
	if err := r.s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if !r.settled("m", "next") {
		t.Fatal("WaitIdle returned before the due job ran")
	}
	runs.next(t, "next")
	if err := r.s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.s.WaitIdle(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitIdle after Close: %v, want ErrClosed", err)
	}
}

// TestKeptJobsHeldForWantOfASlotAreBounded: the due jobs a scan read for
// a module that found no free slot are kept within aheadBytes too,
// the job it would have claimed included.
func TestKeptJobsHeldForWantOfASlotAreBounded(t *testing.T) {
	r := newRig(t, func(o *Options) { o.MaxRunning = 1 })
	ctx := context.Background()
	release := make(chan struct{})
	started := make(chan string, 16)
	handler := func(ctx context.Context, run sdk.JobRun) error {
		started <- run.Key
		if run.Key == "busy" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}
	a := r.s.Bind("a", Hooks{})
	m := r.s.Bind("m", Hooks{})
	for _, b := range []*Binding{a, m} {
		if err := b.Register("h", handler); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.RunAt(ctx, "busy", r.clk.Now().Add(-time.Hour), "h", nil); err != nil {
		t.Fatal(err)
	}
	a.Activate()
	if k := <-started; k != "busy" {
		t.Fatalf("ran %q, want busy", k)
	}
	big := map[string]string{"v": strings.Repeat("x", aheadBytes)}
	base := r.clk.Now().Add(-time.Minute)
	for i := range 3 {
		if err := m.RunAt(ctx, fmt.Sprintf("big-%d", i), base.Add(time.Duration(i)*time.Second), "h", big); err != nil {
			t.Fatal(err)
		}
	}
	m.Activate()
	r.quiesce()
	r.s.mu.Lock()
	held := 0
	for _, j := range r.s.ahead["m"] {
		held += len(j.payload)
	}
	r.s.mu.Unlock()
	if held > aheadBytes {
		t.Fatalf("module m keeps %d payload bytes while it waits for a slot (bound %d)", held, aheadBytes)
	}
	close(release)
	for i := range 3 {
		if k := <-started; k != fmt.Sprintf("big-%d", i) {
			t.Fatalf("run %d is %q", i, k)
		}
	}
}
