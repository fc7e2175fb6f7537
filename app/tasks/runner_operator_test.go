package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestPreviewPingsNobody: a test preview posted to a channel carries the
// run's text but pings none of the task's listed users and roles (a
// preview never notifies); the real run pings them.
func TestPreviewPingsNobody(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	w.chk.kinds[106] = ChannelText
	w.start(t, RunnerOptions{Checker: w.chk})
	task := w.create(t, func(d *Definition) { d.Template = "Standup <@7> <@&8>" })
	mentions := func(runID string) []AllowedMentions {
		t.Helper()
		rows, err := w.st.Reader().Query(`SELECT mentions FROM kimi_task_posts WHERE run_id = ? AND kind = 'post' ORDER BY seq`, runID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []AllowedMentions
		for rows.Next() {
			var js string
			var m AllowedMentions
			if err := rows.Scan(&js); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(js), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	}
	p, err := w.r.Preview(ctx, "bob", task.ID, 106)
	if err != nil || p.RunID == "" {
		t.Fatalf("Preview(106) = %+v, %v", p, err)
	}
	got := mentions(p.RunID)
	if len(got) != 3 {
		t.Fatalf("preview rows = %+v", got)
	}
	for _, m := range got {
		if len(m.Users) != 0 || len(m.Roles) != 0 || len(m.Parse) != 0 {
			t.Fatalf("a preview row may ping %+v", m)
		}
	}
	for _, c := range p.Chunks {
		if len(c.AllowedMentions.Users) != 0 || len(c.AllowedMentions.Roles) != 0 || !strings.Contains(c.Content, "<@7>") {
			t.Fatalf("preview chunk = %+v", c)
		}
	}
	runID, err := w.r.RunNow(ctx, "bob", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mentions(runID) {
		if !slices.Equal(m.Users, []uint64{7}) || !slices.Equal(m.Roles, []uint64{8}) {
			t.Fatalf("a run's row pings %+v, want user 7 and role 8", m)
		}
	}
}

// TestRetryLogRowKeepsAttention: retrying a run's uncertain log row
// re-sends the line but does not clear the task's needs_attention when a
// post row failed (setting the task active again would leave its failed
// post unseen).
func TestRetryLogRowKeepsAttention(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	var mu sync.Mutex
	failing := true
	w.p.fail = func(_ int, c PostChunk) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !failing:
			return nil
		case c.ChannelID == 100:
			return &PostError{Status: 403, Err: errors.New("Missing Permissions")}
		case c.ChannelID == 102:
			return &PostError{Started: true, Err: errors.New("connection reset")}
		}
		return nil
	}
	w.start(t, RunnerOptions{})
	task := w.create(t, func(d *Definition) { d.LogChannelID = 102 })
	adv := w.preparedRun(t, task)
	if status, err := w.d.Deliver(ctx, adv.RunID); err != nil || status != RunFailed {
		t.Fatalf("Deliver = %s, %v; want failed", status, err)
	}
	posts, _ := w.svc.RunPosts(ctx, adv.RunID)
	if len(posts) != 3 || posts[0].Status != PostFailed || !posts[2].Log || posts[2].Status != PostUncertain {
		t.Fatalf("posts = %+v", posts)
	}
	if got := w.task(t, task.ID).State; got != StateNeedsAttention {
		t.Fatalf("task is %s", got)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	if err := w.r.RetryPost(ctx, "bob", adv.RunID, posts[2].Seq); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the log row re-sent", func() bool {
		p, _ := w.svc.RunPosts(ctx, adv.RunID)
		return len(p) == 3 && p[2].Status == PostSent
	})
	if got := w.task(t, task.ID).State; got != StateNeedsAttention {
		t.Fatalf("task is %s after retrying its log row, want needs_attention (post 1 failed)", got)
	}
	if got := w.runStatus(t, adv.RunID); got != RunFailed {
		t.Fatalf("run is %s", got)
	}
}
