package sdk

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Proposal limits.
const (
	// MaxProposalContentBytes bounds a proposed document (UTF-8 bytes).
	MaxProposalContentBytes = 1_000_000
	// MaxProposalSummaryLength bounds the summary (characters, trimmed).
	MaxProposalSummaryLength = 1000
)

// Proposals is the staff-approved configuration proposal port (capability
// proposals.v2), bound to the module. Targets, reads and the review channel
// must all belong to the actor's guild.
type Proposals interface {
	// Snapshot returns a target's current content and revision.
	Snapshot(ctx context.Context, target string, actor ProposalActor) (ConfigSnapshot, error)
	// Propose creates a pending proposal and posts its review card. A stale
	// ExpectedRevision fails with "configuration changed since it was
	// inspected".
	Propose(ctx context.Context, p Proposal) (ProposalRef, error)
	// Get returns a proposal of the actor's guild, or nil.
	Get(ctx context.Context, proposalID string, actor ProposalActor) (*ProposalRef, error)
}

// ProposalActor is on whose behalf a proposal call is made.
type ProposalActor struct {
	UserID uint64
	// Source says where the request came from (for example "command").
	Source    string
	GuildID   uint64 // required: proposals are guild-scoped
	ChannelID uint64 // 0 when none
}

// Proposal is a configuration change to propose.
type Proposal struct {
	// Target is GuildTarget, ChannelTarget or GuildModuleTarget.
	Target string
	// Content is the whole new document (≤ MaxProposalContentBytes).
	Content string
	// Summary is shown on the review card (1..MaxProposalSummaryLength).
	Summary string
	Actor   ProposalActor
	// ExpectedRevision, when set, must equal the target's current revision
	// (from Snapshot) or the proposal is refused.
	ExpectedRevision string
}

// Validate checks the limits a proposal must meet whatever its target:
// "configuration fragment exceeds the 1 MB limit" (Content over
// MaxProposalContentBytes) and "proposal summary must be 1-1000 characters"
// (Summary, trimmed). Host and fakes share it; the target, the actor's
// guild and the revision are checked against live configuration.
func (p Proposal) Validate() error {
	if len(p.Content) > MaxProposalContentBytes {
		return &ProposalError{Message: "configuration fragment exceeds the 1 MB limit"}
	}
	summary := strings.TrimSpace(p.Summary)
	if summary == "" || utf8.RuneCountInString(summary) > MaxProposalSummaryLength {
		return &ProposalError{Message: "proposal summary must be 1-1000 characters"}
	}
	return nil
}

// ConfigSnapshot is a target's current document. Revision is the sha256 hex
// of the content.
type ConfigSnapshot struct {
	Target   string
	Revision string
	Content  string
}

// ProposalState is a proposal's lifecycle state.
type ProposalState string

// Proposal states; rejected and rolled back are terminal. An applied
// proposal can be rolled back by an admin (its document restored to the
// one it was made against, if nothing changed it since).
const (
	ProposalPending    ProposalState = "pending"
	ProposalApplied    ProposalState = "applied"
	ProposalRejected   ProposalState = "rejected"
	ProposalRolledBack ProposalState = "rolled_back"
)

// ProposalRef describes a proposal.
type ProposalRef struct {
	// ID is 32 lowercase hex characters.
	ID     string
	Target string
	State  ProposalState
	// Message is the review card, nil until posted.
	Message *MessageRef
	// DecidedBy is the deciding staff member, 0 while pending.
	DecidedBy      uint64
	DecisionReason string
}

// GuildTarget is the proposal target of a guild's server fragment.
func GuildTarget(guildID uint64) string { return "guild:" + strconv.FormatUint(guildID, 10) }

// ChannelTarget is the proposal target of a channel fragment.
func ChannelTarget(channelID uint64) string {
	return "channel:" + strconv.FormatUint(channelID, 10)
}

// GuildModuleTarget is the proposal target of a module's settings in a guild
// (content rendered with RenderGuildSettings).
func GuildModuleTarget(guildID uint64, module string) string {
	return GuildTarget(guildID) + ":" + module
}
