package tasks

import (
	"context"
	"fmt"
	"testing"
	"time"
)

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
