package sdktest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestProposalsAreBoundToTheActorsGuild(t *testing.T) {
	ctx := context.Background()
	p := NewFakeProposals("mod")
	p.SetTargetGuild("channel:55", 100)
	actor := sdk.ProposalActor{UserID: 1, Source: "test", GuildID: 100}
	tests := []struct {
		name   string
		target string
		actor  sdk.ProposalActor
		want   string
	}{
		{"own guild", "guild:100", actor, ""},
		{"own guild module", "guild:100:mod", actor, ""},
		{"mapped channel", "channel:55", actor, ""},
		{"no actor guild", "guild:100", sdk.ProposalActor{UserID: 1}, "proposal actor must belong to a guild"},
		{"other guild", "guild:200:mod", actor, "proposal target must belong to the actor's guild"},
		{"unmapped target", "channel:66", actor, "fake has no guild mapping for 'channel:66'"},
	}
	for _, tt := range tests {
		_, err := p.Snapshot(ctx, tt.target, tt.actor)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || err.Error() != tt.want) {
			t.Errorf("%s: snapshot = %v, want %q", tt.name, err, tt.want)
		}
		var perr *sdk.ProposalError
		if tt.want != "" && !errors.As(err, &perr) {
			t.Errorf("%s: error is %T, want *sdk.ProposalError", tt.name, err)
		}
	}
}

func TestProposalsUseSHA256RevisionsAndRefuseStaleOnes(t *testing.T) {
	ctx := context.Background()
	p := NewFakeProposals("mod")
	actor := sdk.ProposalActor{UserID: 1, GuildID: 100}
	target := sdk.GuildModuleTarget(100, "mod")

	snap, err := p.Snapshot(ctx, target, actor)
	if err != nil {
		t.Fatal(err)
	}
	// sha256("") — an absent document is empty.
	if snap.Content != "" || snap.Revision != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("snapshot = %+v", snap)
	}
	p.SetDocument(target, "---\nx: 1\n---\n") // someone edits meanwhile

	_, err = p.Propose(ctx, sdk.Proposal{Target: target, Content: "new", Summary: "s", Actor: actor, ExpectedRevision: snap.Revision})
	if err == nil || err.Error() != "configuration changed since it was inspected" {
		t.Errorf("stale proposal = %v", err)
	}

	fresh, _ := p.Snapshot(ctx, target, actor)
	if fresh.Revision != Revision("---\nx: 1\n---\n") {
		t.Errorf("revision = %s", fresh.Revision)
	}
	ref, err := p.Propose(ctx, sdk.Proposal{Target: target, Content: "new", Summary: " s ", Actor: actor, ExpectedRevision: fresh.Revision})
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.ID) != 32 || strings.Trim(ref.ID, "0123456789abcdef") != "" || ref.State != sdk.ProposalPending || ref.Target != target {
		t.Errorf("ref = %+v", ref)
	}
	changes := p.Changes()
	if len(changes) != 1 || changes[0].ProposalID != ref.ID || changes[0].Module != "mod" || changes[0].ExpectedRevision != fresh.Revision {
		t.Errorf("changes = %+v", changes)
	}
	// Without an expected revision, the proposal is not checked.
	if _, err := p.Propose(ctx, sdk.Proposal{Target: target, Content: "other", Summary: "s", Actor: actor}); err != nil {
		t.Errorf("unchecked proposal = %v", err)
	}
}

func TestProposalsGetAndDecide(t *testing.T) {
	ctx := context.Background()
	p := NewFakeProposals("mod")
	actor := sdk.ProposalActor{UserID: 1, GuildID: 100}
	target := sdk.GuildTarget(100)
	ref, _ := p.Propose(ctx, sdk.Proposal{Target: target, Content: "doc", Summary: "s", Actor: actor})

	if got, _ := p.Get(ctx, ref.ID, actor); got == nil || got.ID != ref.ID {
		t.Errorf("get = %+v", got)
	}
	if got, _ := p.Get(ctx, ref.ID, sdk.ProposalActor{UserID: 1, GuildID: 200}); got != nil {
		t.Errorf("another guild's actor read the proposal: %+v", got)
	}
	if got, _ := p.Get(ctx, "missing", actor); got != nil {
		t.Errorf("unknown id = %+v", got)
	}

	decided, err := p.Decide(ref.ID, sdk.ProposalApplied, 9, "fine")
	if err != nil || decided.State != sdk.ProposalApplied || decided.DecidedBy != 9 || decided.DecisionReason != "fine" {
		t.Errorf("decide = %+v, %v", decided, err)
	}
	if got := p.Documents()[target]; got != "doc" {
		t.Errorf("applied document = %q", got)
	}
	if _, err := p.Decide("missing", sdk.ProposalRejected, 9, ""); err == nil {
		t.Error("deciding an unknown proposal succeeded")
	}
}

func TestProposalsValidateContentAndSummary(t *testing.T) {
	ctx := context.Background()
	p := NewFakeProposals("mod")
	actor := sdk.ProposalActor{UserID: 1, GuildID: 100}
	tests := []struct {
		name string
		p    sdk.Proposal
		want string
	}{
		{"empty summary", sdk.Proposal{Target: "guild:100", Summary: "  ", Actor: actor}, "proposal summary must be 1-1000 characters"},
		{"long summary", sdk.Proposal{Target: "guild:100", Summary: strings.Repeat("s", 1001), Actor: actor}, "proposal summary must be 1-1000 characters"},
		{"huge content", sdk.Proposal{Target: "guild:100", Summary: "s", Content: strings.Repeat("x", sdk.MaxProposalContentBytes+1), Actor: actor}, "configuration fragment exceeds the 1 MB limit"},
	}
	for _, tt := range tests {
		if _, err := p.Propose(ctx, tt.p); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
