package templates

import (
	"slices"

	"github.com/kimiapp/kimi/app/admin/form"
)

// ConversationsView is /assistant/conversations: the filter, the live
// list and the Show transcripts switch.
type ConversationsView struct {
	// Live is the list's event stream ("" when the filter is refused).
	Live   string
	Filter form.ConversationsFilter
	Errors form.Errors
	List   ConversationsList
	// ListHTML, when set, is List already rendered by
	// ConversationsListRegion (the admin keeps recent renders).
	ListHTML        string
	ShowTranscripts bool
}

// ConversationsList is the live region: a page of conversations and its
// links.
type ConversationsList struct {
	Rows              []ConversationRow
	FirstURL, NextURL string
	Filtered          bool
}

// Equal reports whether l and o render the same.
func (l ConversationsList) Equal(o ConversationsList) bool {
	return l.FirstURL == o.FirstURL && l.NextURL == o.NextURL && l.Filtered == o.Filtered && slices.Equal(l.Rows, o.Rows)
}

// ConversationRow is one conversation's summary; a *Title is the id behind
// a name the bot knows ("" when the label is the id).
type ConversationRow struct {
	ID, URL                   string
	Guild, GuildTitle         string
	Channel, ChannelTitle     string
	Owner, OwnerTitle         string
	OwnerOnly                 bool
	Started, StartedExact     string
	Active, ActiveExact       string
	Turns, Status, StatusKind string
	Tokens, Tools             string
	ToolErrors                int
}

// ConversationView is /assistant/conversations/{id}. Without
// ShowTranscripts no Content, Arguments or Result is set.
type ConversationView struct {
	Row             ConversationRow
	ShowTranscripts bool
	Turns           []ConversationTurn
	Truncated       bool
	DeleteURL       string
}

// ConversationTurn is one turn of the conversation's page.
type ConversationTurn struct {
	N, Kind                       string
	Who, WhoTitle                 string
	Status, StatusKind, ErrorKind string
	Started, Duration, Iterations string
	Model, Tokens                 string
	Messages                      []ConversationMessage
	Calls                         []ConversationCall
}

// ConversationMessage is a transcript message (Show transcripts on).
type ConversationMessage struct {
	Role, Author, Content string
}

// ConversationCall is one tool call; Arguments and Result only with Show
// transcripts on.
type ConversationCall struct {
	Seq, Tool, Module, Outcome, OutcomeKind, Duration string
	Arguments, Result                                 string
}

// conversationStatuses are the filter's status choices.
var conversationStatuses = []string{"running", "done", "failed", "interrupted", "cancelled"}
