package sdktest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// ProposedChange is one proposal recorded by a FakeProposals.
type ProposedChange struct {
	ProposalID       string
	Module           string
	Target           string
	Content          string
	Summary          string
	Actor            sdk.ProposalActor
	ExpectedRevision string
}

// FakeProposals is an sdk.Proposals bound to one module. Every call
// requires an actor in a guild, and the target must belong to that guild
// ("proposal target must belong to the actor's guild"); a "guild:<id>…"
// target belongs to <id>, other targets need a TargetGuilds entry. A
// document's revision is the sha256 hex of its content ("" when absent), and
// Propose with a stale ExpectedRevision fails with "configuration changed
// since it was inspected". Decide plays the reviewing staff member.
type FakeProposals struct {
	module string

	mu sync.Mutex
	// Documents are the current targets' contents; absent means "".
	documents    map[string]string
	targetGuilds map[string]uint64
	changes      []ProposedChange
	refs         map[string]sdk.ProposalRef
	guildOf      map[string]uint64
}

var _ sdk.Proposals = (*FakeProposals)(nil)

// NewFakeProposals returns a proposal service for module with no documents.
func NewFakeProposals(module string) *FakeProposals {
	return &FakeProposals{
		module:       module,
		documents:    map[string]string{},
		targetGuilds: map[string]uint64{},
		refs:         map[string]sdk.ProposalRef{},
		guildOf:      map[string]uint64{},
	}
}

// SetDocument sets a target's current content (changing its revision).
func (p *FakeProposals) SetDocument(target, content string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.documents[target] = content
}

// SetTargetGuild maps a target that does not name its guild (for example
// "channel:<id>") to the guild it belongs to.
func (p *FakeProposals) SetTargetGuild(target string, guildID uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.targetGuilds[target] = guildID
}

// Revision returns the sha256 hex of content, the fake's document revision.
func Revision(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

func (p *FakeProposals) requireGuild(target string, actor sdk.ProposalActor) (uint64, error) {
	if actor.GuildID == 0 {
		return 0, &sdk.ProposalError{Message: "proposal actor must belong to a guild"}
	}
	guild, ok := p.targetGuilds[target]
	if !ok {
		if rest, found := strings.CutPrefix(target, "guild:"); found {
			idText, _, _ := strings.Cut(rest, ":")
			if id, err := strconv.ParseUint(idText, 10, 64); err == nil {
				guild, ok = id, true
			}
		}
	}
	if !ok {
		return 0, &sdk.ProposalError{Message: "fake has no guild mapping for " + hostkit.Repr(target)}
	}
	if guild != actor.GuildID {
		return 0, &sdk.ProposalError{Message: "proposal target must belong to the actor's guild"}
	}
	return guild, nil
}

// Snapshot returns a target's current content and revision.
func (p *FakeProposals) Snapshot(ctx context.Context, target string, actor sdk.ProposalActor) (sdk.ConfigSnapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.requireGuild(target, actor); err != nil {
		return sdk.ConfigSnapshot{}, err
	}
	content := p.documents[target]
	return sdk.ConfigSnapshot{Target: target, Revision: Revision(content), Content: content}, nil
}

// Propose records a pending proposal with a fresh 32-hex-digit id.
func (p *FakeProposals) Propose(ctx context.Context, proposal sdk.Proposal) (sdk.ProposalRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	guild, err := p.requireGuild(proposal.Target, proposal.Actor)
	if err != nil {
		return sdk.ProposalRef{}, err
	}
	if err := proposal.Validate(); err != nil {
		return sdk.ProposalRef{}, err
	}
	if proposal.ExpectedRevision != "" && proposal.ExpectedRevision != Revision(p.documents[proposal.Target]) {
		return sdk.ProposalRef{}, &sdk.ProposalError{Message: "configuration changed since it was inspected"}
	}
	id := newProposalID()
	p.changes = append(p.changes, ProposedChange{
		ProposalID: id, Module: p.module, Target: proposal.Target, Content: proposal.Content,
		Summary: proposal.Summary, Actor: proposal.Actor, ExpectedRevision: proposal.ExpectedRevision,
	})
	ref := sdk.ProposalRef{ID: id, Target: proposal.Target, State: sdk.ProposalPending}
	p.refs[id] = ref
	p.guildOf[id] = guild
	return ref, nil
}

// Get returns a proposal of the actor's guild, or nil.
func (p *FakeProposals) Get(ctx context.Context, proposalID string, actor sdk.ProposalActor) (*sdk.ProposalRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	guild, ok := p.guildOf[proposalID]
	if !ok || actor.GuildID == 0 || guild != actor.GuildID {
		return nil, nil
	}
	ref := p.refs[proposalID]
	return &ref, nil
}

// Decide sets a proposal's state as a reviewing staff member would; an
// applied proposal also becomes its target's current document.
func (p *FakeProposals) Decide(proposalID string, state sdk.ProposalState, decidedBy uint64, reason string) (sdk.ProposalRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ref, ok := p.refs[proposalID]
	if !ok {
		return sdk.ProposalRef{}, &sdk.ProposalError{Message: "unknown proposal " + hostkit.Repr(proposalID)}
	}
	ref.State, ref.DecidedBy, ref.DecisionReason = state, decidedBy, reason
	p.refs[proposalID] = ref
	if state == sdk.ProposalApplied {
		i := slices.IndexFunc(p.changes, func(c ProposedChange) bool { return c.ProposalID == proposalID })
		p.documents[ref.Target] = p.changes[i].Content
	}
	return ref, nil
}

// Changes returns every proposal made, oldest first.
func (p *FakeProposals) Changes() []ProposedChange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.changes)
}

// Documents returns a copy of the current documents by target.
func (p *FakeProposals) Documents() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.documents)
}

func newProposalID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
}
