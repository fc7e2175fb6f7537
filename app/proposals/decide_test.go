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

// gatedCards holds Propose's card post until the test releases it (nil:
// post it for real; an error: the post fails with it), so a decision can
// be made while the post is in flight.
type gatedCards struct {
	Discord
	entered chan struct{}
	release chan error
}

func (g *gatedCards) PostCard(ctx context.Context, guildID, channelID uint64, embed *sdk.OutgoingEmbed, buttons []sdk.Component) (sdk.MessageRef, error) {
	g.entered <- struct{}{}
	if err := <-g.release; err != nil {
		return sdk.MessageRef{}, err
	}
	return g.Discord.PostCard(ctx, guildID, channelID, embed, buttons)
}

// proposeDecidedInFlight proposes alpha's settings with the card post held,
// approves the proposal from the web while it is held, then lets the post
// end with postErr. It returns Propose's result and the id.
func proposeDecidedInFlight(t *testing.T, w *world, postErr error) (sdk.ProposalRef, error, string) {
	t.Helper()
	g := &gatedCards{Discord: w.svc.discord, entered: make(chan struct{}), release: make(chan error)}
	w.svc.discord = g
	type result struct {
		ref sdk.ProposalRef
		err error
	}
	done := make(chan result, 1)
	go func() {
		ref, err := w.svc.Port("alpha").Propose(w.ctx, sdk.Proposal{Target: w.alphaTarget(), Content: "---\nmode: loud\nchannel_id: 5\n---\n", Summary: "set alpha", Actor: w.actor()})
		done <- result{ref, err}
	}()
	<-g.entered
	page, err := w.svc.List(w.ctx, Filter{State: sdk.ProposalPending})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("the pending proposal is not listed while its card is posted: %+v, %v", page, err)
	}
	id := page.Items[0].ID
	out, err := w.svc.Approve(w.ctx, id, web)
	if err != nil || out.Message != ReplyApplied {
		t.Fatalf("web approve while the card is posted: %+v, %v", out, err)
	}
	g.release <- postErr
	r := <-done
	w.svc.discord = g.Discord
	return r.ref, r.err, id
}

// TestDecisionWhileCardPostFails: the web approves a proposal whose
// card is still being posted, then the post fails. The proposal was
// applied (the live document is its content, an approve audit row exists):
// it must not be deleted as if it had never been made, and Propose must
// not say the proposal failed.
func TestDecisionWhileCardPostFails(t *testing.T) {
	w := newWorld(t)
	ref, err, id := proposeDecidedInFlight(t, w, errors.New("discord is down"))
	if err != nil {
		t.Fatalf("Propose of a proposal approved meanwhile: %v", err)
	}
	if ref.ID != id || ref.State != sdk.ProposalApplied {
		t.Fatalf("ref = %+v", ref)
	}
	p, events, err := w.svc.Get(w.ctx, id)
	if err != nil {
		t.Fatalf("the applied proposal was deleted: %v", err)
	}
	if p.State != sdk.ProposalApplied || len(events) < 2 {
		t.Fatalf("proposal %+v, events %+v", p, events)
	}
	if d := w.doc(guildcfg.GuildModuleTarget(w.guild, "alpha")); d.Text != p.Content {
		t.Fatalf("live = %q", d.Text)
	}
}

// TestDecisionWhileCardPostSucceeds: the web approves a proposal
// whose card is still being posted; the card that then lands must show the
// decision, not a pending card with live buttons.
func TestDecisionWhileCardPostSucceeds(t *testing.T) {
	w := newWorld(t)
	ref, err, id := proposeDecidedInFlight(t, w, nil)
	if err != nil || ref.ID != id || ref.Message == nil {
		t.Fatalf("Propose: %+v, %v", ref, err)
	}
	p := w.proposal(id)
	if p.State != sdk.ProposalApplied || p.Card.MessageID == 0 {
		t.Fatalf("proposal = %+v", p)
	}
	card := w.card(p)
	if len(card.Embeds) != 1 || card.Embeds[0].Title != TitleApplied || len(buttonsOf(card)) != 0 {
		t.Fatalf("the card of an applied proposal: %q with buttons %v", card.Embeds[0].Title, buttonsOf(card))
	}
}

// TestCardUpdatedWhenTheDecisionDeactivatesTheGuild: approving a server
// setup with bot_active: false is valid and applies; the guild is then
// inactive, and the card must still be edited to "applied" without its
// buttons (core's edit of its own card is not refused for an inactive
// guild, or the card would stay pending with live buttons).
func TestCardUpdatedWhenTheDecisionDeactivatesTheGuild(t *testing.T) {
	w := newWorld(t)
	off := strings.Replace(w.guildDoc(0), "bot_active: true", "bot_active: false", 1)
	ref, err := w.svc.Port("alpha").Propose(w.ctx, sdk.Proposal{Target: sdk.GuildTarget(w.guild), Content: off, Summary: "pause the bot", Actor: w.actor()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := w.svc.Approve(w.ctx, ref.ID, web)
	if err != nil || out.Message != ReplyApplied {
		t.Fatalf("approve: %+v, %v", out, err)
	}
	if w.guilds.Active(w.guild) {
		t.Fatal("the guild is still active")
	}
	card := w.card(w.proposal(ref.ID))
	if card.Embeds[0].Title != TitleApplied || len(buttonsOf(card)) != 0 {
		t.Fatalf("card %q with buttons %v", card.Embeds[0].Title, buttonsOf(card))
	}
}
