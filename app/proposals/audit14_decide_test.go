package proposals

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

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

// TestAuditDecisionWhileCardPostFails: the web approves a proposal whose
// card is still being posted, then the post fails. The proposal was
// applied (the live document is its content, an approve audit row exists):
// it must not be deleted as if it had never been made, and Propose must
// not say the proposal failed.
func TestAuditDecisionWhileCardPostFails(t *testing.T) {
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

// TestAuditDecisionWhileCardPostSucceeds: the web approves a proposal
// whose card is still being posted; the card that then lands must show the
// decision, not a pending card with live buttons.
func TestAuditDecisionWhileCardPostSucceeds(t *testing.T) {
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

// TestAuditCardUpdatedWhenTheDecisionDeactivatesTheGuild: approving a
// server setup with bot_active: false is valid and applies; the guild is
// then inactive, and the card must still be edited to "applied" without
// its buttons (core's edit of its own card refused an inactive guild, so
// the card stayed pending with live buttons).
func TestAuditCardUpdatedWhenTheDecisionDeactivatesTheGuild(t *testing.T) {
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

// TestAuditSummaryTheTableRefuses: a summary Go counts as 1..1000
// characters but SQLite's length() does not (a leading NUL counts 0, lone
// continuation bytes count 0) got past the port and failed on the table's
// CHECK with an internal error; it must be a clear refusal, nothing kept.
func TestAuditSummaryTheTableRefuses(t *testing.T) {
	w := newWorld(t)
	for _, summary := range []string{"\x00set alpha", strings.Repeat("\x80", 10)} {
		_, err := w.svc.Port("alpha").Propose(w.ctx, sdk.Proposal{Target: w.alphaTarget(), Content: "---\nmode: quiet\n---\n", Summary: summary, Actor: w.actor()})
		var pe *sdk.ProposalError
		if !errors.As(err, &pe) {
			t.Fatalf("summary %q: err = %v, want a refusal", summary, err)
		}
	}
	if n := w.count(`SELECT count(*) FROM kimi_proposals`); n != 0 {
		t.Fatalf("%d proposals kept", n)
	}
}
