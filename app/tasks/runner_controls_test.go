package tasks

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

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
