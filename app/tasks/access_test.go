package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/sdk"
)

// accessPolicies is a tasks.Policies whose one policy a test rewrites.
type accessPolicies struct{ p guildcfg.TaskPolicy }

func (a *accessPolicies) TaskPolicy(uint64) guildcfg.TaskPolicy { return a.p }

// accessDiscord answers for Discord: every member's tier is member, the
// active guild is testGuild, and anyone views its channels 100-105 (not
// another guild's, e.g. 777); waited counts the Readiness waits.
type accessDiscord struct{ waited int }

func (d *accessDiscord) Tier(context.Context, uint64, uint64) (sdk.TrustTier, error) {
	return sdk.TierMember, nil
}
func (d *accessDiscord) Active(guildID uint64) bool { return guildID == testGuild }
func (d *accessDiscord) CanViewChannel(_ context.Context, guildID, _, channelID uint64) (bool, error) {
	return guildID == testGuild && channelID >= 100 && channelID <= 105, nil
}
func (d *accessDiscord) BotUserID() uint64                 { return 99 }
func (d *accessDiscord) WaitGuild(context.Context, uint64) { d.waited++ }

var (
	_ Members              = (*accessDiscord)(nil)
	_ Readiness            = (*accessDiscord)(nil)
	_ results.ChannelViews = (*accessDiscord)(nil)
)

// newAccess is the access rule of w over d with policy p.
func (w *world) newAccess(p *accessPolicies, d *accessDiscord) *Access {
	return NewAccess(AccessOptions{Store: w.svc.st, Policies: p, Members: d, Checker: w.chk, Ready: d,
		Results: results.DiscordAccess{Guilds: d, Tiers: d, Channels: d}})
}

// TestTaskAuthorizerRefusals: each of the Authorizer's refusals is a
// sentence for the operator; the policy is read first (a disabled guild
// waits for nothing), then Discord, once ready.
func TestTaskAuthorizerRefusals(t *testing.T) {
	w := newWorld(t, time.Now())
	ctx := context.Background()
	pols := &accessPolicies{guildcfg.TaskPolicy{Enabled: true, MinTier: sdk.TierMember}}
	d := &accessDiscord{}
	auth := w.newAccess(pols, d)
	if err := auth.Authorize(ctx, testGuild, testOwner, 100, NeedFiles|NeedEmbeds); err != nil || d.waited != 1 {
		t.Fatalf("an owner who may post = %v (waited %d)", err, d.waited)
	}
	w.chk.lacks = map[[2]uint64]Needs{{testOwner, 100}: NeedFiles}
	err := auth.Authorize(ctx, testGuild, testOwner, 100, NeedFiles)
	if want := fmt.Sprintf("the owner %d cannot post in channel 100 (this message needs: view the channel, send messages and attach files)", testOwner); err == nil || err.Error() != want {
		t.Fatalf("an owner without ATTACH_FILES = %v, want %q", err, want)
	}
	if err := auth.Authorize(ctx, testGuild, testOwner, 100, 0); err != nil {
		t.Fatalf("an owner without ATTACH_FILES, a text-only message: %v", err)
	}
	if err := auth.Authorize(ctx, testGuild, testOwner, 105, 0); err == nil || err.Error() != "Kimi cannot post in channel 105 (this message needs: view the channel and send messages)" {
		t.Fatalf("a channel Kimi cannot post in = %v", err)
	}
	w.chk.failing = true
	if err := auth.Authorize(ctx, testGuild, testOwner, 100, 0); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Discord down = %v, want ErrUnavailable", err)
	}
	w.chk.failing = false

	pols.p = guildcfg.TaskPolicy{Enabled: true, MinTier: sdk.TierStaff}
	if err := auth.Authorize(ctx, testGuild, testOwner, 100, 0); err == nil || err.Error() != fmt.Sprintf("the owner %d is member, below staff", testOwner) {
		t.Fatalf("below min_tier = %v", err)
	}
	pols.p = guildcfg.TaskPolicy{Enabled: false}
	waited := d.waited
	if err := auth.Authorize(ctx, testGuild, testOwner, 100, 0); err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("scheduled tasks are not enabled in guild %d", testGuild)) {
		t.Fatalf("disabled policy = %v", err)
	}
	if d.waited != waited {
		t.Fatal("a disabled policy waited for Discord")
	}
}

// TestTaskProducerCheckAccess: a publication of an existing task in a
// guild whose tasks are enabled passes; once the policy is disabled, or
// the task deleted, it is refused (results.ErrAccessDenied).
func TestTaskProducerCheckAccess(t *testing.T) {
	w := newWorld(t, time.Now())
	ctx := context.Background()
	task, err := w.svc.Create(ctx, "t", enabled, w.chk, validDef())
	if err != nil {
		t.Fatal(err)
	}
	pols := &accessPolicies{guildcfg.TaskPolicy{Enabled: true, MinTier: sdk.TierMember}}
	pub := results.Publication{RunID: "run", TaskID: task.ID, Revision: 1, GuildID: testGuild, OwnerID: testOwner,
		PublishedAt: time.Now(), Outcome: sdk.ResultCompleted,
		Messages: []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: testGuild, ChannelID: 100, MessageID: 5}}}}
	p := w.newAccess(pols, &accessDiscord{})
	if err := p.CheckAccess(ctx, pub); err != nil {
		t.Fatalf("CheckAccess of a live task = %v", err)
	}
	other := pub
	other.Messages = []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: testGuild, ChannelID: 777, MessageID: 5}}}
	if err := p.CheckAccess(ctx, other); err == nil {
		t.Fatal("CheckAccess with a channel not in the guild passed")
	}
	pols.p = guildcfg.TaskPolicy{Enabled: true} // min_tier staff by default: the member owner is refused
	if err := p.CheckAccess(ctx, pub); !errors.Is(err, results.ErrAccessDenied) {
		t.Fatalf("CheckAccess of a member's task under the default min_tier = %v", err)
	}

	pols.p = guildcfg.TaskPolicy{Enabled: false}
	err = p.CheckAccess(ctx, pub)
	if !errors.Is(err, results.ErrAccessDenied) || !strings.Contains(err.Error(), "scheduled tasks are not enabled") {
		t.Fatalf("CheckAccess with the policy disabled = %v", err)
	}
	pols.p = guildcfg.TaskPolicy{Enabled: true, MinTier: sdk.TierMember}
	if err := p.CheckAccess(ctx, pub); err != nil {
		t.Fatalf("CheckAccess once enabled again = %v", err)
	}
	if err := w.svc.Delete(ctx, "t", task.ID); err != nil {
		t.Fatal(err)
	}
	err = p.CheckAccess(ctx, pub)
	if !errors.Is(err, results.ErrAccessDenied) || !strings.Contains(err.Error(), "was deleted") {
		t.Fatalf("CheckAccess of a deleted task = %v", err)
	}
}

// TestTaskProducerReadFile: a run's file is read only when one of its
// sent post rows (not a log row, not an unsent post) carried it, and only
// up to the limit.
func TestTaskProducerReadFile(t *testing.T) {
	w := newWorld(t, time.Now())
	ctx := context.Background()
	def := validDef()
	def.Files = []Attachment{{Name: "notes.txt", Data: []byte("the notes")}, {Name: "other.txt", Data: []byte("other")},
		{Name: "logged.txt", Data: []byte("logged")}}
	task, err := w.svc.Create(ctx, "t", enabled, w.chk, def)
	if err != nil {
		t.Fatal(err)
	}
	const run = "0123456789abcdef0123456789abcdef"
	if _, err := w.st.Writer().ExecContext(ctx, `INSERT INTO kimi_task_runs (id, task_id, revision, due_ms, status, created_ms) VALUES (?, ?, 1, 1, 'failed', 1)`, run, task.ID); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		seq          int
		kind, status string
		files        string
		messageID    int64
	}{
		{1, "post", "sent", `["notes.txt"]`, 11},
		{2, "post", "failed", `["other.txt"]`, 0},
		{3, "log", "sent", `["logged.txt"]`, 13},
	} {
		if _, err := w.st.Writer().ExecContext(ctx, `INSERT INTO kimi_task_posts (run_id, seq, chunk_index, chunk_total, channel_id, kind, content, file_ids, status, message_id)
			VALUES (?, ?, 1, 1, 100, ?, 'x', ?, ?, ?)`, run, r.seq, r.kind, r.files, r.status, r.messageID); err != nil {
			t.Fatal(err)
		}
	}
	p := w.newAccess(&accessPolicies{enabled}, &accessDiscord{})
	cases := []struct {
		name, run, file string
		limit           int64
		want, wantErr   string
	}{
		{"a sent post's file", run, "notes.txt", 100, "the notes", ""},
		{"at the limit", run, "notes.txt", 9, "the notes", ""},
		{"over the limit", run, "notes.txt", 8, "", `tasks: file "notes.txt" of run ` + run + " is 9 bytes, over the limit of 8"},
		{"an unsent post's file", run, "other.txt", 100, "", `tasks: no sent post of run ` + run + ` carried file "other.txt"`},
		{"a log row's file", run, "logged.txt", 100, "", `tasks: no sent post of run ` + run + ` carried file "logged.txt"`},
		{"not the run's", run, "nothing.txt", 100, "", `tasks: no sent post of run ` + run + ` carried file "nothing.txt"`},
		{"unknown run", "ffffffffffffffffffffffffffffffff", "notes.txt", 100, "", "tasks: run ffffffffffffffffffffffffffffffff does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.ReadFile(ctx, tc.run, tc.file, tc.limit)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || got != nil {
					t.Fatalf("ReadFile = %q, %v; want the error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("ReadFile = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
