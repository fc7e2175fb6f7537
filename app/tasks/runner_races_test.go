package tasks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
)

// heldRun starts a runner whose poster holds every post until released,
// runs task now and returns once its first post is in Discord's hands.
func heldRun(t *testing.T, w *runnerWorld) (task Task, runID string, release func()) {
	t.Helper()
	w.p.gate, w.p.entered = make(chan struct{}), make(chan struct{}, 16)
	w.start(t, RunnerOptions{})
	task = w.create(t, nil)
	runID, err := w.r.RunNow(context.Background(), "bob", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.p.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the run's first post never reached the poster")
	}
	var once bool
	release = func() {
		if !once {
			once = true
			close(w.p.gate)
		}
	}
	t.Cleanup(release)
	return task, runID, release
}

// TestDeleteWhileDelivering: a task deleted while its run's first post is
// being sent takes its run, posts and revisions with it; the delivery
// ends without a panic, posts nothing more and leaves no publication or
// notification behind (the cascade against the confirmation's
// transaction).
func TestDeleteWhileDelivering(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	task, _, release := heldRun(t, w)
	if err := w.svc.Delete(ctx, "bob", task.ID); err != nil {
		t.Fatal(err)
	}
	release()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.r.Close(cctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if n := len(w.p.contents()); n != 1 {
		t.Errorf("%d posts sent, want only the one in flight at the deletion", n)
	}
	for q, args := range map[string][]any{
		`SELECT count(*) FROM kimi_task_runs WHERE task_id = ?`:           {task.ID},
		`SELECT count(*) FROM kimi_task_revisions WHERE task_id = ?`:      {task.ID},
		`SELECT count(*) FROM kimi_task_posts`:                            nil,
		`SELECT count(*) FROM kimi_result_publications WHERE task_id = ?`: {task.ID},
		`SELECT count(*) FROM kimi_result_notifications`:                  nil,
	} {
		if n := w.count(t, q, args...); n != 0 {
			t.Errorf("%s: %d rows left", q, n)
		}
	}
}

// TestUpdateWhileDelivering: an edit saved while a run of the previous
// revision delivers leaves the run its revision: it completes with the
// old content and its publication names the old revision.
func TestUpdateWhileDelivering(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	task, runID, release := heldRun(t, w)
	def := validDef()
	def.Template = "edited"
	saved, err := w.svc.Update(ctx, "bob", task.ID, guildcfg.TaskPolicy{Enabled: true}, w.chk, def)
	if err != nil || saved.Revision != 2 {
		t.Fatalf("Update = revision %d, %v", saved.Revision, err)
	}
	release()
	w.waitRun(t, runID, RunCompleted)
	if n := w.count(t, `SELECT count(*) FROM kimi_task_runs WHERE id = ? AND revision = 1`, runID); n != 1 {
		t.Errorf("the run no longer names revision 1")
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_result_publications WHERE run_id = ? AND revision = 1`, runID); n != 1 {
		t.Errorf("the publication does not name revision 1")
	}
	for _, c := range w.p.contents() {
		if c == "edited" {
			t.Errorf("the run posted the new revision's content")
		}
	}
}

// TestRetryPostTwiceAtOnce: the operator's retry of an uncertain post
// sent by several requests at once (a double click, two tabs) re-sends it
// once: one retry is taken, the others are refused as not runnable, and
// the run completes with the post's second attempt.
func TestRetryPostTwiceAtOnce(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	_, runID := w.uncertainRun(t)
	before := len(w.p.contents())
	const n = 8
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			errs <- w.r.RetryPost(ctx, "bob", runID, 1)
		}()
	}
	close(start)
	taken := 0
	for range n {
		err := <-errs
		switch {
		case err == nil:
			taken++
		case !errors.Is(err, ErrNotRunnable):
			t.Errorf("RetryPost = %v, want nil or ErrNotRunnable", err)
		}
	}
	if taken != 1 {
		t.Fatalf("%d retries taken, want 1", taken)
	}
	w.waitRun(t, runID, RunCompleted)
	posts, err := w.svc.RunPosts(ctx, runID)
	if err != nil || len(posts) == 0 || posts[0].Attempts != 2 {
		t.Fatalf("posts = %+v, %v; want the first at its second attempt", posts, err)
	}
	if sent := len(w.p.contents()) - before; sent != len(posts) {
		t.Fatalf("%d posts sent after the retries, want %d (each once)", sent, len(posts))
	}
}

// composerFunc is a Composer of a function.
type composerFunc func(ctx context.Context, run RunContext) (Output, error)

func (f composerFunc) Compose(ctx context.Context, run RunContext) (Output, error) {
	return f(ctx, run)
}

// TestRunNowOutlivesItsRequest: once run now committed its run, the run
// is composed, prepared and delivered even when the operator's request
// ends meanwhile (a closed tab): the cancelled request may not fail the
// preparation and leave the run pending until the next restart.
func TestRunNowOutlivesItsRequest(t *testing.T) {
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	reqCtx, cancelReq := context.WithCancel(context.Background())
	defer cancelReq()
	w.start(t, RunnerOptions{Compose: func(Task, Definition) Composer {
		return composerFunc(func(context.Context, RunContext) (Output, error) {
			cancelReq() // the request ends while the run is composed
			return small(), nil
		})
	}})
	task := w.create(t, nil)
	runID, err := w.r.RunNow(reqCtx, "bob", task.ID)
	if runID == "" {
		t.Fatalf("RunNow = %q, %v: no run", runID, err)
	}
	w.waitRun(t, runID, RunCompleted)
	if got := strings.Join(w.p.contents(), ","); got != "one,two" {
		t.Fatalf("posted %q", got)
	}
}
