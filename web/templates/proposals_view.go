package templates

import (
	"github.com/a-h/templ"

	"github.com/kimiapp/kimi/app/admin/form"
)

// ProposalsView is the proposals inbox (/proposals): the filter form, the
// counts per state and the live list.
type ProposalsView struct {
	// The filter form as typed, and its errors.
	State, Guild, Module, Target string
	Errors                       form.Errors
	Filtered                     bool
	// Live is the list's SSE address (the same filters and cursor).
	Live string
	List ProposalListView
	// ListKept, when set, is List rendered before: written in its place.
	ListKept templ.Component
}

// ProposalListView is the inbox's live region: the counts, the rows of one
// page and the pagination.
type ProposalListView struct {
	Counts []ProposalCount
	Rows   []ProposalRow
	// Filtered: an empty list says no proposal matches rather than none
	// exist; Invalid: the filters were refused, so nothing was listed.
	Filtered, Invalid bool
	ClearURL          string
	FirstURL, NextURL string
	// Pending is the number of pending proposals (all guilds), for the
	// heading of the live region.
	Pending int
}

// ProposalCount is one state's count, a link that filters by it.
type ProposalCount struct {
	State, Label string
	Count        int
	URL          string
	Active       bool
}

// ProposalRow is one proposal of the inbox.
type ProposalRow struct {
	ID, URL string
	Summary string
	// State is the state's word; StateKind its badge kind.
	State, StateKind string
	Guild, Module    string
	Target           string
	Proposer         string // "<@id>"
	// GuildName, ProposerName: the target's guild and the proposer.
	GuildName, ProposerName Name
	At, AtExact             string
	// Mentions names the proposal's guild's members, channels and roles
	// in its summary (nil: ids shown as unknown).
	Mentions Mentions
}

// ProposalView is a proposal's page (/proposals/{id}); Detail is its live
// region.
type ProposalView struct {
	ID, Summary string
	Live        string
	Detail      ProposalDetailView
	// DetailKept, when set, is Detail rendered before: written in its place.
	DetailKept templ.Component
}

// ProposalDetailView is everything of a proposal's page below its heading,
// sent again over SSE after every change.
type ProposalDetailView struct {
	ID, Summary string
	// State is the stored state (data-state), StateLabel as it reads.
	State, StateLabel, StateKind string
	Pending                      bool
	// Proposer: the module, the Discord user ("<@id>"), the source the
	// module gave (a command) and the channel ("<#id>", "" when none).
	Module, Proposer, Source, Channel string
	// ProposerName, ChannelName and DeciderName name them (the decider's
	// ID is "" unless a Discord user decided).
	ProposerName, ChannelName, DeciderName Name
	// Target is the document ("guild:1:kudos"), TargetName says what it is
	// ("kudos settings in guild 1"), TargetURL links its page ("" for
	// channel fragments, which have none).
	Target, TargetName, TargetURL string
	HistoryURL                    string
	CreatedAt, CreatedAtExact     string
	// The decision, once made.
	DecidedBy, DecisionSource, DecisionReason, DecidedAt string
	// LastError is a failed approval's reason while still pending.
	LastError string
	// CanRollback offers Roll back (an applied proposal whose document is
	// still the one it wrote); RollbackNote says the document changed
	// since it was applied or rolled back ("" when it did not).
	CanRollback  bool
	RollbackNote string
	// The validation result (pending proposals): the problems an approval
	// would meet, none meaning it would apply; Conflict explains a live
	// document that equals neither the base nor the proposal, AlreadyLive a
	// live document that already is the proposal.
	Checked     bool
	Problems    []string
	WouldApply  bool
	Conflict    string
	AlreadyLive bool
	// CheckError is set when the check could not run.
	CheckError string
	// The diff: DiffTitle names its two sides as the split view shows them
	// and DiffTitleUnified as the unified one does, Split the side-by-side
	// rows (wide screens) and Unified the hunks (phones); NoChanges when the
	// two sides are equal. DiffNote says the sides were compared parsed, in
	// canonical key order; Reserialised that their texts still differ (key
	// order, quoting, indentation) though their settings do not.
	DiffTitle, DiffTitleUnified, DiffOld, DiffNew string
	DiffNote                                      string
	Reserialised                                  bool
	Split                                         []SplitRow
	Unified                                       []DiffHunk
	NoChanges                                     bool
	Events                                        []ProposalEventView
	// The reject form as typed and its errors.
	Reason string
	Errors form.Errors
	// Mentions names the proposal's guild's members, channels and roles
	// in its summary, decision reason and history (nil: ids shown as
	// unknown).
	Mentions Mentions
}

// SplitRow is one row of a side-by-side diff: a hunk header, or a line of
// each side (an empty side has Op "none").
type SplitRow struct {
	Header               string
	OldNo, NewNo         string
	Old, New             string
	OldOp, NewOp         string // ctx, del, add, none
	OldMarker, NewMarker string
}

// ProposalEventView is one entry of a proposal's decision history.
type ProposalEventView struct {
	Kind, Label   string
	Actor, Source string
	// ActorName names a Discord user actor (ID "" for another actor).
	ActorName     Name
	Detail        string
	At, AtExact   string
	Before, After string // short revisions, "" when none
	BadgeKind     string
}

// ProposalStateLabel is a proposal state as the pages say it ("rolled
// back" for rolled_back).
func ProposalStateLabel(state string) string {
	if state == "rolled_back" {
		return "rolled back"
	}
	return state
}
