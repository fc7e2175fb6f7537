package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
)

// staticPolicies is a Policies giving every guild one policy.
type staticPolicies struct{ p guildcfg.TaskPolicy }

func (s staticPolicies) TaskPolicy(uint64) guildcfg.TaskPolicy { return s.p }

// TestDeliverRechecksPolicyDestinations: a channel taken off the guild's
// scheduled_tasks.destinations after the task was saved is refused at
// delivery (nothing is sent to it; the run fails and the task needs
// attention), while the log channel, which the list never holds, still
// gets its line.
func TestDeliverRechecksPolicyDestinations(t *testing.T) {
	ctx := context.Background()
	pols := staticPolicies{guildcfg.TaskPolicy{Enabled: true, Timezone: "UTC", Destinations: []uint64{100}}}
	w := newRunnerWorld(t, nil, t0, DeliverOptions{Policies: pols})
	task := w.create(t, func(d *Definition) { d.LogChannelID = 102 })
	adv := w.preparedRun(t, task)
	status, err := w.d.Deliver(ctx, adv.RunID)
	if err != nil || status != RunFailed {
		t.Fatalf("Deliver = %s, %v; want failed", status, err)
	}
	posts, _ := w.svc.RunPosts(ctx, adv.RunID)
	if len(posts) != 3 || posts[0].Status != PostSent || posts[1].Status != PostFailed || posts[1].Attempts != 0 ||
		!strings.Contains(posts[1].Detail, "channel 101 is no longer one of this server's task destinations") || !posts[2].Log || posts[2].Status != PostSent {
		t.Fatalf("posts = %+v", posts)
	}
	for _, c := range w.p.calls {
		if c.channel == 101 {
			t.Fatalf("posted to channel 101, which the policy no longer lists: %+v", w.p.calls)
		}
	}
	if got := w.task(t, task.ID).State; got != StateNeedsAttention {
		t.Fatalf("task is %s", got)
	}
}

// composerFunc is a Composer of a function.
type composerFunc func(ctx context.Context, run RunContext) (Output, error)

func (f composerFunc) Compose(ctx context.Context, run RunContext) (Output, error) {
	return f(ctx, run)
}

// TestRunNowOutlivesItsRequest: once run now committed its run, the run
// is composed, prepared and delivered even when the operator's request
// ends meanwhile (a closed tab); before, the cancelled request failed the
// preparation and left the run pending until the next restart.
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

// switchPolicies is a Policies whose policy of testGuild a test changes
// (every other guild's is off).
type switchPolicies struct{ p *guildcfg.TaskPolicy }

func (s switchPolicies) TaskPolicy(guild uint64) guildcfg.TaskPolicy {
	if guild != testGuild {
		return guildcfg.TaskPolicy{}
	}
	return *s.p
}

// TestAdminHonoursThePolicy: with the guild's scheduled tasks turned off
// after a task was saved, run now and a posted preview refuse with
// ErrDisabled (its exact message), making no run and leaving the task
// active (before, the run was made, refused at delivery and the task put
// in needs_attention); a render-only preview still renders. An edit is
// checked against the task's guild's policy even when the definition
// names no guild.
func TestAdminHonoursThePolicy(t *testing.T) {
	ctx := context.Background()
	w := newRunnerWorld(t, nil, t0, DeliverOptions{})
	w.start(t, RunnerOptions{Checker: w.chk})
	policy := enabled
	a := &Admin{Service: w.svc, Runner: w.r, Policies: switchPolicies{&policy}, Checker: w.chk}
	task, err := a.Create(ctx, "alice", validDef())
	if err != nil {
		t.Fatal(err)
	}

	policy.Destinations = []uint64{100}
	def := validDef()
	def.GuildID = 0
	if _, err := a.Update(ctx, "alice", task.ID, def); err == nil {
		t.Fatal("Update with destinations 101 and 102 outside the policy's [100] saved")
	} else if de, ok := errors.AsType[*DefinitionError](err); !ok || !strings.Contains(de.Fields[FieldDestinations], "not one of this server's task destinations") {
		t.Fatalf("Update = %v, want the destinations' field error", err)
	}

	policy = guildcfg.TaskPolicy{Timezone: "UTC"} // disabled
	if _, err := a.RunNow(ctx, "bob", task.ID); !errors.Is(err, ErrDisabled) || err.Error() != MsgDisabled {
		t.Fatalf("RunNow in a disabled guild = %v, want %q", err, MsgDisabled)
	}
	if _, err := a.Preview(ctx, "bob", task.ID, 100); !errors.Is(err, ErrDisabled) || err.Error() != MsgDisabled {
		t.Fatalf("Preview to a channel in a disabled guild = %v, want %q", err, MsgDisabled)
	}
	if p, err := a.Preview(ctx, "bob", task.ID, 0); err != nil || len(p.Chunks) == 0 {
		t.Fatalf("render-only Preview = %+v, %v", p, err)
	}
	if n := w.count(t, `SELECT count(*) FROM kimi_task_runs WHERE task_id = ?`, task.ID); n != 0 {
		t.Fatalf("%d runs made in a disabled guild", n)
	}
	// An edit is refused as a creation is; pause still works.
	if _, err := a.Update(ctx, "alice", task.ID, validDef()); !errors.Is(err, ErrDisabled) {
		t.Fatalf("Update in a disabled guild = %v, want %q", err, MsgDisabled)
	}
	if got := w.task(t, task.ID).Revision; got != 1 {
		t.Fatalf("revision %d after a refused edit", got)
	}
	if got := w.task(t, task.ID).State; got != StateActive {
		t.Fatalf("task is %s", got)
	}
}

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
// post row failed (before, the retry set the task active again, its failed
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
