package tasks

import (
	"context"
	"strings"
	"testing"
	"time"
)

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
