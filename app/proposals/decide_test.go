package proposals

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

var web = Decider{Source: "web", Admin: "alice", IP: "127.0.0.1"}

// TestApproveFromDiscord: a staff click applies the proposal through
// guildcfg (Actor proposal:<id>), the card turns "applied" without
// buttons, the decision is audited with both revisions; a member's click
// is "Staff only."; a second click is "already applied".
func TestApproveFromDiscord(t *testing.T) {
	w := newWorld(t)
	ref := w.propose("---\nmode: loud\nchannel_id: 5\n---\n")
	p := w.proposal(ref.ID)
	if ids := buttonsOf(w.card(p)); len(ids) != 2 || ids[0] != "m:proposals:approve:"+p.ID || ids[1] != "m:proposals:reject:"+p.ID {
		t.Fatalf("card buttons = %v", ids)
	}
	if got := w.click(p, w.member, "approve"); got != "Staff only." {
		t.Fatalf("member's click: %q", got)
	}
	if got := w.click(p, w.staff, "approve"); got != ReplyApplied {
		t.Fatalf("staff click: %q", got)
	}
	doc := w.doc(guildcfg.GuildModuleTarget(w.guild, "alpha"))
	if doc.Text != p.Content || doc.UpdatedBy != "proposal:"+p.ID {
		t.Fatalf("live = %+v", doc)
	}
	if ms, _ := w.guilds.ModuleSettings(w.guild, "alpha"); ms.Values["mode"] != "loud" {
		t.Fatalf("module settings not refreshed: %+v", ms.Values)
	}
	p = w.proposal(p.ID)
	if p.State != sdk.ProposalApplied || p.DecidedByUser != w.staff || p.DecisionSource != "discord" {
		t.Fatalf("after approve: %+v", p)
	}
	card := w.card(p)
	if len(card.Embeds) != 1 || card.Embeds[0].Title != TitleApplied || card.Embeds[0].Color != ColorApplied || len(buttonsOf(card)) != 0 {
		t.Fatalf("card = %+v, buttons %v", card.Embeds[0], buttonsOf(card))
	}
	if a := w.audits(ActionApprove); len(a) != 1 || !strings.Contains(a[0], fmt.Sprintf("discord:%d proposal:%s", w.staff, p.ID)) ||
		!strings.Contains(a[0], guildcfg.ShortRevision(guildcfg.EmptyRevision)+" -> "+guildcfg.ShortRevision(p.ContentRevision)) {
		t.Fatalf("audit = %v", a)
	}
	if got, err := w.svc.Approve(w.ctx, p.ID, web); err != nil || got.Message != "Proposal is already applied." {
		t.Fatalf("second approve: %+v, %v", got, err)
	}
	_, events, _ := w.svc.Get(w.ctx, p.ID)
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, ",") != "created,card_posted,applied" {
		t.Fatalf("events = %v", kinds)
	}
}

// TestDecisionRefusals: unknown ids, another guild's card, and rejecting
// with the card's buttons removed.
func TestDecisionRefusals(t *testing.T) {
	w := newWorld(t)
	if out, err := w.svc.Approve(w.ctx, strings.Repeat("0", 32), web); err != ErrNotFound || out.Message != ReplyNotFound {
		t.Fatalf("unknown: %+v, %v", out, err)
	}
	p := w.proposal(w.propose("---\nmode: quiet\n---\n").ID)
	if out, _ := w.svc.Reject(w.ctx, p.ID, Decider{Source: "discord", UserID: w.staff, GuildID: w.other}, ""); out.Message != ReplyOtherGuild {
		t.Fatalf("other guild: %+v", out)
	}
	if got := w.click(p, w.staff, "reject"); got != ReplyRejected {
		t.Fatalf("reject click: %q", got)
	}
	p = w.proposal(p.ID)
	card := w.card(p)
	if p.State != sdk.ProposalRejected || card.Embeds[0].Title != TitleRejected || len(buttonsOf(card)) != 0 {
		t.Fatalf("after reject: %+v / %+v", p, card.Embeds[0])
	}
	if w.doc(guildcfg.GuildModuleTarget(w.guild, "alpha")).Exists {
		t.Fatal("a rejected proposal was written")
	}
	if a := w.audits(ActionReject); len(a) != 1 {
		t.Fatalf("audit = %v", a)
	}
	if out, _ := w.svc.Approve(w.ctx, p.ID, web); out.Message != "Proposal is already rejected." {
		t.Fatalf("approve after reject: %+v", out)
	}
}

// TestApproveConflict: a live document that changed since the proposal
// (neither base nor proposal) rejects it "configuration changed since
// proposal" and leaves the document alone.
func TestApproveConflict(t *testing.T) {
	w := newWorld(t)
	target := guildcfg.GuildModuleTarget(w.guild, "alpha")
	p := w.proposal(w.propose("---\nmode: loud\nchannel_id: 5\n---\n").ID)
	w.writeDoc(target, "---\nmode: quiet\nchannel_id: 9\n---\n")
	before := w.doc(target)
	out, err := w.svc.Approve(w.ctx, p.ID, web)
	if err != nil || out.Message != ReplyChanged || out.Applied {
		t.Fatalf("approve: %+v, %v", out, err)
	}
	p = w.proposal(p.ID)
	if p.State != sdk.ProposalRejected || p.DecisionReason != ReasonChanged || p.DecidedByAdmin != "alice" {
		t.Fatalf("proposal = %+v", p)
	}
	if after := w.doc(target); after.Revision != before.Revision {
		t.Fatal("the newer document was overwritten")
	}
	if e := w.card(p).Embeds[0]; e.Title != TitleRejected || !strings.Contains(e.Fields[len(e.Fields)-1].Value, "alice - "+ReasonChanged) {
		t.Fatalf("card = %+v", e.Fields)
	}
}

// TestApproveRollback: a write that would disable the guild (alpha is
// disable_guild and its new settings fail once the guild doc changes) is
// rolled back to the exact base — deleted when the base was absent,
// rewritten when it existed — and the proposal stays pending with the
// failure; when the document changed again before the rollback it is left
// untouched.
func TestApproveRollback(t *testing.T) {
	t.Run("absent base deleted", func(t *testing.T) {
		w := newWorld(t)
		mt := guildcfg.GuildModuleTarget(w.guild, "alpha")
		p := w.proposal(w.propose("---\nmode: quiet\n---\n").ID)
		w.breakGuild()
		out, err := w.svc.Approve(w.ctx, p.ID, web)
		if err != nil || out.Message != "Not applied: "+MsgGuildBroken || out.Applied {
			t.Fatalf("approve: %+v, %v", out, err)
		}
		if d := w.doc(mt); d.Exists {
			t.Fatalf("the absent base was not restored: %+v", d)
		}
		p = w.proposal(p.ID)
		if p.State != sdk.ProposalPending || p.LastError != out.Message {
			t.Fatalf("proposal = %+v", p)
		}
		if a := w.audits(ActionApproveFailed); len(a) != 1 {
			t.Fatalf("audit = %v", a)
		}
		if a := w.audits(guildcfg.ActionDocumentDelete); len(a) != 2 || !strings.HasPrefix(a[1], "proposal:"+p.ID+" "+mt.String()) {
			t.Fatalf("delete audit = %v", a)
		}
		if ids := buttonsOf(w.card(p)); len(ids) != 2 {
			t.Fatalf("a pending card lost its buttons: %v", ids)
		}
	})
	t.Run("existing base rewritten", func(t *testing.T) {
		w := newWorld(t)
		mt := guildcfg.GuildModuleTarget(w.guild, "alpha")
		base := w.writeDoc(mt, "---\nmode: quiet\nchannel_id: 3\n---\n")
		p := w.proposal(w.propose("---\nmode: loud\nchannel_id: 4\n---\n").ID)
		w.breakGuild()
		out, _ := w.svc.Approve(w.ctx, p.ID, web)
		if out.Message != "Not applied: "+MsgGuildBroken {
			t.Fatalf("approve: %+v", out)
		}
		if d := w.doc(mt); d.Text != base.Text || d.Revision != base.Revision {
			t.Fatalf("base not restored exactly: %q", d.Text)
		}
	})
	t.Run("module settings would disable the guild", func(t *testing.T) {
		w := newWorld(t)
		// A server-setup proposal approved while alpha (disable_guild) has
		// invalid stored settings in the guild.
		p, err := w.svc.Port("alpha").Propose(w.ctx, sdk.Proposal{Target: sdk.GuildTarget(w.guild), Content: w.guildDoc(w.chans[1]), Summary: "s", Actor: w.actor()})
		if err != nil {
			t.Fatal(err)
		}
		w.blockGuild()
		out, _ := w.svc.Approve(w.ctx, p.ID, web)
		if out.Message != "Not applied: "+MsgGuildDisabled {
			t.Fatalf("approve: %+v", out)
		}
	})
	t.Run("changed again before rollback", func(t *testing.T) {
		w := newWorld(t)
		mt := guildcfg.GuildModuleTarget(w.guild, "alpha")
		p := w.proposal(w.propose("---\nmode: quiet\n---\n").ID)
		w.breakGuild()
		// The live document already equals the proposal (an approval that
		// wrote and was interrupted), and another writer changes it between
		// the approval's write and its rollback.
		w.writeDoc(mt, p.Content)
		w.svc.guilds = &changeOnRollback{Guilds: w.svc.guilds, w: w, target: mt, text: "---\nmode: quiet\nchannel_id: 77\n---\n"}
		out, _ := w.svc.Approve(w.ctx, p.ID, web)
		if out.Message != "Not applied: "+MsgGuildBroken+"; "+MsgChangedAgain {
			t.Fatalf("approve: %+v", out)
		}
		if d := w.doc(mt); !strings.Contains(d.Text, "77") {
			t.Fatalf("the newer change was clobbered: %q", d.Text)
		}
	})
}

// breakGuild removes the guild's server setup, so the guild no longer
// verifies ("the guild configuration is invalid").
func (w *world) breakGuild() {
	w.t.Helper()
	cur := w.doc(guildcfg.GuildTarget(w.guild))
	if err := w.guilds.Delete(w.ctx, guildcfg.GuildTarget(w.guild), cur.Revision, guildcfg.Actor{Kind: guildcfg.ActorAdmin, Name: "admin"}); err != nil {
		w.t.Fatal(err)
	}
}

// blockGuild stores invalid settings for alpha (disable_guild) in the
// guild straight in the table (guildcfg refuses writing them; a restore of
// an older database could leave them) and reloads the snapshot.
func (w *world) blockGuild() {
	w.t.Helper()
	if _, err := w.st.Writer().Exec(`INSERT INTO kimi_documents (target, kind, content, revision, updated_ms, updated_by) VALUES (?, 'guild_module', ?, ?, 0, 'x')`,
		sdk.GuildModuleTarget(w.guild, "alpha"), "---\nmode: loud\n---\n", guildcfg.Revision("---\nmode: loud\n---\n")); err != nil {
		w.t.Fatal(err)
	}
	if err := w.guilds.Reload(w.ctx); err != nil {
		w.t.Fatal(err)
	}
}

// changeOnRollback writes text to target the second time the service
// reads it after the first write of the approval (the rollback's read).
type changeOnRollback struct {
	Guilds
	w      *world
	target guildcfg.Target
	text   string
	reads  int
}

func (c *changeOnRollback) Document(ctx context.Context, t guildcfg.Target) (guildcfg.Document, error) {
	if t == c.target {
		c.reads++
		if c.reads == 2 { // 1: approve's live read; 2: the rollback's
			c.w.writeDoc(t, c.text)
		}
	}
	return c.Guilds.Document(ctx, t)
}

// TestRejectRecoversInterruptedApproval: the proposal already live (an
// approval that wrote and stopped) is applied by a reject when it
// verifies; when it does not, the base is restored and the proposal
// rejected.
func TestRejectRecoversInterruptedApproval(t *testing.T) {
	w := newWorld(t)
	mt := guildcfg.GuildModuleTarget(w.guild, "alpha")
	p := w.proposal(w.propose("---\nmode: loud\nchannel_id: 5\n---\n").ID)
	w.writeDoc(mt, p.Content)
	out, err := w.svc.Reject(w.ctx, p.ID, web, "nope")
	if err != nil || out.Message != ReplyRecovered || !out.Applied {
		t.Fatalf("reject: %+v, %v", out, err)
	}
	if p = w.proposal(p.ID); p.State != sdk.ProposalApplied || p.DecisionReason != ReasonRecovered {
		t.Fatalf("proposal = %+v", p)
	}

	p2 := w.proposal(w.propose("---\nmode: quiet\nchannel_id: 6\n---\n").ID)
	w.writeDoc(mt, p2.Content)
	w.breakGuild()
	out, _ = w.svc.Reject(w.ctx, p2.ID, web, "nope")
	if out.Message != ReplyRejected {
		t.Fatalf("reject of an unverified live proposal: %+v", out)
	}
	if d := w.doc(mt); d.Revision != p2.BaseRevision || d.Text != p2.BaseContent {
		t.Fatalf("base not restored: %q", d.Text)
	}
	if p2 = w.proposal(p2.ID); p2.State != sdk.ProposalRejected {
		t.Fatalf("proposal = %+v", p2)
	}
}

// TestConcurrentApprovals: the web and a Discord click approve at the same
// instant; exactly one applies, the other is "already applied", and the
// row and the card agree. Run many times.
func TestConcurrentApprovals(t *testing.T) {
	w := newWorld(t)
	mt := guildcfg.GuildModuleTarget(w.guild, "alpha")
	for i := 0; i < 20; i++ {
		cur := w.doc(mt)
		content := fmt.Sprintf("---\nmode: loud\nchannel_id: %d\n---\n", 100+i)
		ref, err := w.svc.Port("alpha").Propose(w.ctx, sdk.Proposal{Target: mt.String(), Content: content, Summary: "s", Actor: w.actor(), ExpectedRevision: cur.Revision})
		if err != nil {
			t.Fatal(err)
		}
		p := w.proposal(ref.ID)
		var wg sync.WaitGroup
		var webOut Outcome
		var click string
		wg.Add(2)
		go func() { defer wg.Done(); webOut, _ = w.svc.Approve(w.ctx, p.ID, web) }()
		var clickErr error
		go func() {
			defer wg.Done()
			// The web approval may edit the card's buttons away before
			// the click reaches the fake, which then refuses it as Discord
			// would (nobody can click a button that is gone): the web won.
			iid, err := w.fake.ClickButton(fmt.Sprint(p.Card.ChannelID), fmt.Sprint(p.Card.MessageID), fmt.Sprint(w.staff), "m:proposals:approve:"+p.ID)
			if err != nil {
				clickErr = err
				return
			}
			click = w.reply(iid)
		}()
		wg.Wait()
		switch {
		case errors.Is(clickErr, fakediscord.ErrUnknownComponent):
			click = "(button gone)"
		case clickErr != nil:
			t.Fatalf("round %d: click: %v", i, clickErr)
		}
		replies := []string{webOut.Message, click}
		applied := 0
		for _, r := range replies {
			switch r {
			case ReplyApplied:
				applied++
			case "Proposal is already applied.", "(button gone)":
			default:
				t.Fatalf("round %d: reply %q", i, r)
			}
		}
		if applied != 1 {
			t.Fatalf("round %d: %d applied (%v)", i, applied, replies)
		}
		p = w.proposal(p.ID)
		card := w.card(p)
		if p.State != sdk.ProposalApplied || card.Embeds[0].Title != TitleApplied || len(buttonsOf(card)) != 0 || w.doc(mt).Text != content {
			t.Fatalf("round %d: row %s, card %q", i, p.State, card.Embeds[0].Title)
		}
		if n := w.count(`SELECT count(*) FROM kimi_proposal_events WHERE proposal_id = ? AND kind = 'applied'`, p.ID); n != 1 {
			t.Fatalf("round %d: %d applied events", i, n)
		}
	}
	if n := len(w.audits(ActionApprove)); n != 20 {
		t.Fatalf("%d approve audit rows, want 20", n)
	}
}

// failValidate refuses every document as today's checks might after an
// upgrade.
type failValidate struct{ Guilds }

func (failValidate) Validate(guildcfg.Target, string) error {
	return &guildcfg.ValidationError{Message: "mode must be one of quiet, loud"}
}

// TestApproveRevalidates: content that no longer passes today's checks is
// not applied; the proposal stays pending with the reason.
func TestApproveRevalidates(t *testing.T) {
	w := newWorld(t)
	p := w.proposal(w.propose("---\nmode: quiet\n---\n").ID)
	w.svc.guilds = failValidate{w.svc.guilds}
	out, err := w.svc.Approve(w.ctx, p.ID, web)
	if err != nil || out.Message != "Not applied: mode must be one of quiet, loud" {
		t.Fatalf("approve: %+v, %v", out, err)
	}
	if p = w.proposal(p.ID); p.State != sdk.ProposalPending || p.LastError != out.Message || w.doc(p.Target).Exists {
		t.Fatalf("proposal = %+v", p)
	}
}

// TestRejectCannotRollBack: rejecting a live proposal that does not verify
// when the document changed again before the rollback refuses with "Could
// not reject safely: …", leaves the newer text and keeps it pending.
func TestRejectCannotRollBack(t *testing.T) {
	w := newWorld(t)
	mt := guildcfg.GuildModuleTarget(w.guild, "alpha")
	p := w.proposal(w.propose("---\nmode: quiet\n---\n").ID)
	w.writeDoc(mt, p.Content)
	w.breakGuild()
	w.svc.guilds = &changeOnRollback{Guilds: w.svc.guilds, w: w, target: mt, text: "---\nmode: quiet\nchannel_id: 78\n---\n"}
	out, _ := w.svc.Reject(w.ctx, p.ID, web, "no")
	if out.Message != "Could not reject safely: "+MsgChangedAgain {
		t.Fatalf("reject: %+v", out)
	}
	if p = w.proposal(p.ID); p.State != sdk.ProposalPending || !strings.Contains(w.doc(mt).Text, "78") {
		t.Fatalf("proposal %s, live %q", p.State, w.doc(mt).Text)
	}
}
