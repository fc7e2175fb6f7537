package proposals

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

func wantRefusal(t *testing.T, err error, msg string) {
	t.Helper()
	var pe *sdk.ProposalError
	if !errors.As(err, &pe) || pe.Message != msg {
		t.Fatalf("err = %v, want the refusal %q", err, msg)
	}
}

// TestEmptyRevisionIsSHA256OfNothing: an absent document's revision is the
// sha256 of the empty text, as the original's.
func TestEmptyRevisionIsSHA256OfNothing(t *testing.T) {
	sum := sha256.Sum256(nil)
	if guildcfg.EmptyRevision != hex.EncodeToString(sum[:]) {
		t.Fatalf("EmptyRevision = %s", guildcfg.EmptyRevision)
	}
}

// TestProposeRefusals: every rule of Propose and Snapshot, with the
// original's messages, and nothing stored for a refusal.
func TestProposeRefusals(t *testing.T) {
	w := newWorld(t)
	good := "---\nmode: quiet\n---\n"
	base := sdk.Proposal{Target: w.alphaTarget(), Content: good, Summary: "s", Actor: w.actor()}
	tests := []struct {
		name string
		edit func(p *sdk.Proposal)
		want string
	}{
		{"no actor guild", func(p *sdk.Proposal) { p.Actor.GuildID = 0 }, MsgNoActorGuild},
		{"another guild's target", func(p *sdk.Proposal) { p.Target = sdk.GuildModuleTarget(w.other, "alpha") }, MsgForeignTarget},
		{"another guild's server setup", func(p *sdk.Proposal) {
			p.Target, p.Content = sdk.GuildTarget(w.other), "---\nbot_active: true\n---\n"
		}, MsgForeignTarget},
		{"a channel of another guild", func(p *sdk.Proposal) { p.Target, p.Content = sdk.ChannelTarget(w.otherCh), "---\na: 1\n---\n" }, MsgForeignTarget},
		{"a channel Discord does not know", func(p *sdk.Proposal) { p.Target = sdk.ChannelTarget(424242) }, MsgForeignTarget},
		{"unknown module", func(p *sdk.Proposal) { p.Target = sdk.GuildModuleTarget(w.guild, "gamma") }, "unknown module 'gamma'"},
		{"module not compiled in", func(p *sdk.Proposal) { p.Target = sdk.GuildModuleTarget(w.guild, "nope") }, "unknown module 'nope'"},
		{"unsupported kind", func(p *sdk.Proposal) { p.Target = "settings:1" }, "unsupported configuration proposal target 'settings:1'"},
		{"zero id", func(p *sdk.Proposal) { p.Target = "guild:0" }, "unsupported configuration proposal target 'guild:0'"},
		{"blank summary", func(p *sdk.Proposal) { p.Summary = " \n\t" }, "proposal summary must be 1-1000 characters"},
		{"long summary", func(p *sdk.Proposal) { p.Summary = strings.Repeat("é", 1001) }, "proposal summary must be 1-1000 characters"},
		{"content over 1 MB", func(p *sdk.Proposal) {
			p.Content = "---\na: 1\n---\n" + strings.Repeat("x", sdk.MaxProposalContentBytes)
		}, "configuration fragment exceeds the 1 MB limit"},
		{"invalid module settings", func(p *sdk.Proposal) { p.Content = "---\nmode: loud\n---\n" }, "loud mode needs channel_id"},
		{"body in module settings", func(p *sdk.Proposal) { p.Content = "---\nmode: quiet\n---\nbody\n" }, guildcfg.MsgFrontmatterOnly},
		{"server setup without bot_active", func(p *sdk.Proposal) {
			p.Target, p.Content = sdk.GuildTarget(w.guild), "---\nstaff_user_ids: [1]\n---\n"
		}, guildcfg.MsgGuildInvalid},
		{"stale expected revision", func(p *sdk.Proposal) { p.ExpectedRevision = strings.Repeat("0", 64) }, guildcfg.MsgConflict},
		{"no review channel", func(p *sdk.Proposal) { p.Actor.ChannelID = 0 }, MsgNoReviewChannel},
		{"review channel in another guild", func(p *sdk.Proposal) { p.Actor.ChannelID = w.otherCh }, MsgNoReviewChannel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base
			tt.edit(&p)
			_, err := w.svc.Port("alpha").Propose(w.ctx, p)
			wantRefusal(t, err, tt.want)
			if n := w.count(`SELECT count(*) FROM kimi_proposals`); n != 0 {
				t.Fatalf("%d proposals stored after a refusal", n)
			}
		})
	}
	// Snapshot follows the same target rules.
	for _, tt := range tests[:8] {
		p := base
		tt.edit(&p)
		if p.Actor.GuildID != 0 && !strings.HasPrefix(tt.name, "no actor") && tt.want != MsgForeignTarget && !strings.Contains(tt.want, "module") && !strings.Contains(tt.want, "unsupported") {
			continue
		}
		_, err := w.svc.Port("alpha").Snapshot(w.ctx, p.Target, p.Actor)
		wantRefusal(t, err, tt.want)
	}
}

// TestProposeAndGet: a proposal is stored as the proposing module's with
// the exact base, gets a 32-hex id and a card in the actor's channel (the
// guild's proposal channel when set); Snapshot's revision pins it; Get
// answers only the actor's guild and valid ids.
func TestProposeAndGet(t *testing.T) {
	w := newWorld(t)
	snap, err := w.svc.Port("alpha").Snapshot(w.ctx, w.alphaTarget(), w.actor())
	if err != nil || snap.Revision != guildcfg.EmptyRevision || snap.Content != "" || snap.Target != w.alphaTarget() {
		t.Fatalf("Snapshot = %+v, %v", snap, err)
	}
	ref, err := w.svc.Port("alpha").Propose(w.ctx, sdk.Proposal{Target: w.alphaTarget(), Content: "---\nmode: quiet\n---\n",
		Summary: "  set alpha  ", Actor: w.actor(), ExpectedRevision: snap.Revision})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(ref.ID) || ref.State != sdk.ProposalPending || ref.Message == nil || ref.Message.ChannelID != w.chans[0] {
		t.Fatalf("ref = %+v", ref)
	}
	p := w.proposal(ref.ID)
	if p.Module != "alpha" || p.Summary != "set alpha" || p.BaseExists || p.BaseRevision != guildcfg.EmptyRevision || p.Actor.UserID != w.member {
		t.Fatalf("stored = %+v", p)
	}
	// A module cannot attribute a proposal to another: beta's port proposing
	// alpha's settings records beta.
	ref2, err := w.svc.Port("beta").Propose(w.ctx, sdk.Proposal{Target: w.alphaTarget(), Content: "---\nmode: loud\nchannel_id: 5\n---\n", Summary: "x", Actor: w.actor()})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.proposal(ref2.ID).Module; got != "beta" {
		t.Fatalf("module = %q, want the port's", got)
	}
	// The guild's proposal channel wins over the actor's.
	w.writeDoc(guildcfg.GuildTarget(w.guild), w.guildDoc(w.chans[1]))
	ref3 := w.propose("---\nmode: quiet\n---\n")
	if ref3.Message == nil || ref3.Message.ChannelID != w.chans[1] {
		t.Fatalf("card in %+v, want the proposal channel %d", ref3.Message, w.chans[1])
	}

	port := w.svc.Port("alpha")
	got, err := port.Get(w.ctx, ref.ID, w.actor())
	if err != nil || got == nil || got.ID != ref.ID || got.Target != w.alphaTarget() {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	foreign := w.actor()
	foreign.GuildID = w.other
	for _, c := range []struct {
		id    string
		actor sdk.ProposalActor
	}{
		{ref.ID, foreign}, {strings.ToUpper(ref.ID), w.actor()}, {ref.ID[:31], w.actor()}, {strings.Repeat("a", 32), w.actor()}, {"../../etc", w.actor()},
	} {
		if got, err := port.Get(w.ctx, c.id, c.actor); got != nil || err != nil {
			t.Fatalf("Get(%q, guild %d) = %+v, %v; want nil", c.id, c.actor.GuildID, got, err)
		}
	}
	if _, err := port.Get(w.ctx, ref.ID, sdk.ProposalActor{}); err == nil {
		t.Fatal("Get without an actor guild answered")
	}
	page, err := w.svc.List(w.ctx, Filter{State: sdk.ProposalPending, Limit: 2})
	if err != nil || len(page.Items) != 2 || page.Next == "" || page.Counts[sdk.ProposalPending] != 3 {
		t.Fatalf("List = %+v, %v", page, err)
	}
	rest, err := w.svc.List(w.ctx, Filter{State: sdk.ProposalPending, Limit: 2, After: page.Next})
	if err != nil || len(rest.Items) != 1 || rest.Next != "" || rest.Items[0].ID == page.Items[0].ID || rest.Items[0].ID == page.Items[1].ID {
		t.Fatalf("second page = %+v, %v", rest, err)
	}
	if n, _ := w.svc.PendingCount(w.ctx); n != 3 {
		t.Fatalf("PendingCount = %d", n)
	}
}

// TestProposeCardPostFails: a card Discord refuses leaves no proposal and
// fails with the original's message.
func TestProposeCardPostFails(t *testing.T) {
	w := newWorld(t)
	w.fake.InjectFault(fakediscord.Fault{Route: "POST /channels/{channel}/messages", Status: http.StatusInternalServerError, Times: 10})
	_, err := w.svc.Port("alpha").Propose(w.ctx, sdk.Proposal{Target: w.alphaTarget(), Content: "---\nmode: quiet\n---\n", Summary: "s", Actor: w.actor()})
	wantRefusal(t, err, MsgCardFailed)
	if n := w.count(`SELECT count(*) FROM kimi_proposals`) + w.count(`SELECT count(*) FROM kimi_proposal_events`); n != 0 {
		t.Fatalf("%d rows kept after the card failed", n)
	}
}

// TestCardRendering: the original's titles, colours, fields, preview (15
// lines, ``` escaped) and buttons; decided cards lose their buttons.
func TestCardRendering(t *testing.T) {
	lines := make([]string, 20)
	for i := range lines {
		lines[i] = fmt.Sprintf("line%d: ```x", i)
	}
	p := Proposal{ID: strings.Repeat("ab", 16), Target: guildcfg.GuildModuleTarget(1, "alpha"), Summary: strings.Repeat("s", 1000),
		Content: strings.Join(lines, "\n"), Actor: sdk.ProposalActor{UserID: 7}, State: sdk.ProposalPending}
	e, buttons := renderCard(p)
	if e.Title != TitlePending || e.Color != 0xFEE75C || e.Footer != "Proposal "+p.ID || !e.Timestamp || e.Description != p.Summary {
		t.Fatalf("embed = %+v", e)
	}
	if len(e.Fields) != 3 || e.Fields[0].Name != "Target" || e.Fields[0].Value != "guild:1:alpha" || e.Fields[1].Value != "<@7>" || e.Fields[2].Name != "Preview" {
		t.Fatalf("fields = %+v", e.Fields)
	}
	pv := e.Fields[2].Value
	if !strings.HasPrefix(pv, "```yaml\n") || !strings.HasSuffix(pv, "\n```") || strings.Count(pv, "```") != 2 || !strings.Contains(pv, "line14") || strings.Contains(pv, "line15") {
		t.Fatalf("preview = %q", pv)
	}
	if len(buttons) != 2 {
		t.Fatalf("buttons = %+v", buttons)
	}
	a, r := buttons[0].(sdk.ButtonSpec), buttons[1].(sdk.ButtonSpec)
	if a.Key != "approve" || a.Label != "Approve" || a.Style != sdk.ButtonSuccess || r.Key != "reject" || r.Label != "Reject" || r.Style != sdk.ButtonDanger || a.Parts[0] != p.ID {
		t.Fatalf("buttons = %+v %+v", a, r)
	}
	p.State, p.DecidedByUser, p.DecisionSource, p.DecisionReason = sdk.ProposalRejected, 9, "discord", "no"
	e, buttons = renderCard(p)
	if e.Title != TitleRejected || e.Color != 0xED4245 || buttons != nil || e.Fields[3].Name != "Decision" || e.Fields[3].Value != "<@9> - no" {
		t.Fatalf("rejected card = %+v %+v", e, buttons)
	}
	p.State, p.DecisionSource, p.DecidedByAdmin, p.DecisionReason = sdk.ProposalApplied, "web", "alice", ""
	e, _ = renderCard(p)
	if e.Title != TitleApplied || e.Color != 0x57F287 || e.Fields[3].Value != "alice" {
		t.Fatalf("applied card = %+v", e)
	}
	total := len([]rune(e.Title)) + len([]rune(e.Description)) + len([]rune(e.Footer))
	for _, f := range e.Fields {
		total += len([]rune(f.Name)) + len([]rune(f.Value))
	}
	if total > 6000 {
		t.Fatalf("embed total %d over Discord's 6000", total)
	}
}

// TestProposeRefusesASummaryTheTableRefuses: a summary Go counts as
// 1..1000 characters but SQLite's length() does not (a leading NUL counts
// 0, lone continuation bytes count 0) would fail on the table's CHECK with
// an internal error; the port must refuse it clearly, nothing kept.
func TestProposeRefusesASummaryTheTableRefuses(t *testing.T) {
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
