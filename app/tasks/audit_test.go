package tasks

import (
	"context"
	"strings"
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
	adv, err := w.svc.Advance(ctx, task.ID, task.NextDue)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.svc.PrepareRun(ctx, adv.RunID, small()); err != nil {
		t.Fatal(err)
	}
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

func (f composerFunc) Compose(ctx context.Context, run RunContext) (Output, error) { return f(ctx, run) }

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
