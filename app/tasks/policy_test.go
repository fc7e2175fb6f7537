package tasks

import (
	"context"
	"errors"
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
// active (not a run made, refused at delivery and the task put in
// needs_attention); a render-only preview still renders. An edit is
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
