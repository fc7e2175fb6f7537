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
