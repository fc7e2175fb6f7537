// Package proposals is Kimi's staff-approved configuration proposals
// (capability proposals.v2; reference §2.11 and §4.1): modules propose a
// whole new guild configuration document, staff approve or reject it on a
// review card in Discord or on the web (/proposals), and an approved change
// is applied only if the live document still equals the proposal's base,
// with a rollback to the exact base when the applied guild does not verify.
package proposals

import (
	"errors"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

// State is a proposal's lifecycle state: pending → applied | rejected,
// applied → rolled_back.
type State = sdk.ProposalState

// Proposal is one stored proposal.
type Proposal struct {
	ID      string // 32 lowercase hex
	GuildID uint64
	Target  guildcfg.Target
	// Module is the proposing module.
	Module  string
	Summary string
	// Content is the proposed document and ContentRevision its revision.
	Content, ContentRevision string
	// Base is the live document when the proposal was made (for the
	// conflict check and the rollback).
	BaseExists                bool
	BaseContent, BaseRevision string
	Actor                     sdk.ProposalActor
	State                     State
	// Decision: who decided (a Discord user id, or an admin username),
	// where ("discord" or "web"), why, and when.
	DecidedByUser  uint64
	DecidedByAdmin string
	DecisionSource string
	DecisionReason string
	DecidedAt      time.Time
	// LastError is the last failed approval's reason while still pending
	// ("Not applied: …").
	LastError string
	// Card is the review card's message (zero until posted).
	Card                 sdk.MessageRef
	CreatedAt, UpdatedAt time.Time
}

// Event is one entry of a proposal's decision history.
type Event struct {
	At     time.Time
	Kind   string // created, card_posted, approve_failed, applied, rejected, recovered, rolled_back
	Actor  string // "<@id>" for Discord users, the admin's username, or "kimi"
	Source string // discord, web, kimi
	Detail string
	// Revisions of the live document before and after (applied, rolled back).
	BeforeRevision, AfterRevision string
}

// Decider is who makes a decision.
type Decider struct {
	// Source is "discord" (UserID set) or "web" (Admin set).
	Source string
	UserID uint64
	Admin  string
	IP     string
	// GuildID is the guild of a Discord decision (a card clicked in another
	// guild is refused); 0 for the web.
	GuildID uint64
}

// Outcome is a decision's result: the proposal after it and the reply the
// decider sees (the original's words: "Proposal is already applied.",
// "Not applied: configuration changed.", …).
type Outcome struct {
	Proposal Proposal
	Applied  bool
	// RolledBack is true when a roll back restored the base.
	RolledBack bool
	Message    string
}

// Filter selects proposals for the inbox; zero fields match everything.
type Filter struct {
	State   State
	GuildID uint64
	Module  string
	Target  string
	// After is the keyset cursor of the previous page ("" for the first).
	After string
	Limit int // 0: 50
}

// Page is one page of the inbox, newest first.
type Page struct {
	Items []Proposal
	// Next is the cursor of the next page, "" on the last.
	Next string
	// Counts are the matching proposals per state (the filter's state
	// aside).
	Counts map[State]int
}

// ErrNotFound is returned for an unknown proposal id.
var ErrNotFound = errors.New("proposals: not found")

// CheckResult is what Check found.
type CheckResult struct {
	Problems []string
	// Live is the live document now.
	Live guildcfg.Document
	// Conflict is true when the live document equals neither the base nor
	// the proposal ("configuration changed since proposal").
	Conflict bool
}
