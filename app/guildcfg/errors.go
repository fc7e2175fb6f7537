package guildcfg

import (
	"errors"
	"sort"
	"strings"
)

// Messages of the original host (reference/kimi-agent-host.md §4.1) that
// callers and proposals show as they are.
const (
	// MsgTooLarge refuses a document over MaxDocumentBytes.
	MsgTooLarge = "configuration fragment exceeds the 1 MB limit"
	// MsgConflict refuses a write whose expected revision is stale.
	MsgConflict = "configuration changed since it was inspected"
	// MsgGuildInvalid refuses a server-setup document that fails activation.
	MsgGuildInvalid = "guild configuration must include valid bot_active, trust, and channel fields"
	// MsgFrontmatterOnly refuses body text in a guild-module document.
	MsgFrontmatterOnly = "module guild settings must be frontmatter only"
	// MsgNotUTF8 refuses a document that is not valid UTF-8.
	MsgNotUTF8 = "configuration fragment must be UTF-8 text"
)

// DocumentField is the FieldError.Field of problems that belong to the
// document as a whole (its size, encoding, YAML syntax, body text), not to
// one key. A form shows them next to the raw text.
const DocumentField = ""

// FieldError is one problem with a document: the frontmatter key it
// belongs to (DocumentField for the whole text), the 1-based line when the
// YAML parser knows it, and the message a person reads.
type FieldError struct {
	Field   string
	Line    int
	Message string
}

// Error returns the message.
func (e *FieldError) Error() string { return e.Message }

// ValidationError refuses a document: Message is the reference's text for
// the refusal as a whole (for example MsgGuildInvalid, or the first
// problem), Problems lists every problem in document order. Nothing was
// stored.
type ValidationError struct {
	Target   string
	Message  string
	Problems []FieldError
}

// Error returns the summary message.
func (e *ValidationError) Error() string { return e.Message }

// Fields returns the problems keyed by field, several messages for one
// field joined by "; " (the shape a form shows next to its inputs).
func (e *ValidationError) Fields() map[string]string {
	out := make(map[string]string, len(e.Problems))
	for _, p := range e.Problems {
		if prev, ok := out[p.Field]; ok {
			out[p.Field] = prev + "; " + p.Message
			continue
		}
		out[p.Field] = p.Message
	}
	return out
}

// Messages returns every problem's message, in order.
func (e *ValidationError) Messages() []string {
	out := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p.Message
	}
	return out
}

// FieldNames returns the fields with problems, sorted.
func (e *ValidationError) FieldNames() []string {
	seen := e.Fields()
	out := make([]string, 0, len(seen))
	for f := range seen {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// ConflictError refuses a compare-and-swap write: the document changed
// since the caller read Expected. Current is the document as it is now,
// so a form can show "changed since you opened it" with the current text.
type ConflictError struct {
	Target   string
	Expected string
	Current  Document
}

// Error returns MsgConflict.
func (e *ConflictError) Error() string { return MsgConflict }

// ErrUnknownHistory reports a history id that does not belong to the target.
var ErrUnknownHistory = errors.New("guildcfg: no such history entry for this document")

// TargetError refuses a target string (an unknown kind, a bad id, an
// unknown module). Message is the reference's text.
type TargetError struct {
	Target  string
	Message string
}

// Error returns the message.
func (e *TargetError) Error() string { return e.Message }

func invalid(target, message string, problems []FieldError) *ValidationError {
	return &ValidationError{Target: target, Message: message, Problems: problems}
}

// joinMessages is the summary of problems that have no reference message.
func joinMessages(problems []FieldError) string {
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.Message
	}
	return strings.Join(msgs, "; ")
}

var (
	_ error = (*FieldError)(nil)
	_ error = (*ValidationError)(nil)
	_ error = (*ConflictError)(nil)
	_ error = (*TargetError)(nil)
)
