package assistant

import (
	"context"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Incoming is a message or an /ask that passed the Discord side's gates
// and may start a turn: the adapter in app/discord builds it on the
// assistant's own types (no discordgo type crosses). The turn stores it as
// a Trigger (conversations.go).
type Incoming struct {
	// Kind is KindMessage (a mention, a pinged reply, a reply to one of
	// Kimi's answers, a text invocation) or KindAsk.
	Kind string
	// Place: a guild channel or thread (ChannelID the thread,
	// ParentID its parent) or a DM (GuildID 0, DMUserID the caller).
	Place Place
	// MessageID is the trigger message's id (the interaction's id for
	// /ask); ReplyToID the message it replies to (0: none), which routes a
	// reply to one of Kimi's answers to its conversation.
	MessageID, ReplyToID uint64
	// ReplyTo is the replied-to message as untrusted context (nil: none
	// or not readable).
	ReplyTo *Quoted
	// ContinuationOnly marks an unpinged reply, which is no trigger of its
	// own: it is answered only when ReplyToID is one of Kimi's answers
	// whose conversation continues for the caller; otherwise Handle drops
	// it (no model call, no row).
	ContinuationOnly bool
	// Caller. Tier is resolved once, when the trigger is built; Owner is
	// the bot owner.
	UserID      uint64
	DisplayName string
	Tier        sdk.TrustTier
	Owner       bool
	// Text is the question, the bot's mention or invocation name removed.
	Text string
	// Private is /ask's private:true (an ephemeral answer; the
	// conversation continues only for its owner).
	Private bool
	// GuildName and ChannelName go into the system prompt.
	GuildName, ChannelName string
}

// Quoted is a message shown to the model as untrusted context.
type Quoted struct {
	AuthorID    uint64
	DisplayName string
	Text        string
	// FromBot: Kimi wrote it (quoted under the bot's name); another
	// bot's message is quoted under its own.
	FromBot bool
}

// Surface is where one turn shows its progress and delivers its answer,
// implemented by app/discord's adapter (a channel message, or /ask's
// deferred interaction response) and by the demo's. Every method is
// bounded by ctx; an error is logged by the turn, which carries on (a
// failed delivery ends it with ❌).
type Surface interface {
	// React adds emoji (⏳, ✅, ❌, 🛑) to the trigger; Unreact removes
	// the bot's own. /ask's surface shows ❌ or 🛑 in its response when
	// no answer was delivered, and does nothing else.
	React(ctx context.Context, emoji string) error
	Unreact(ctx context.Context, emoji string) error
	// Status shows text as the turn's one status message (sent with
	// mentions off on the first call, edited after; /ask edits its
	// deferred response) and returns the status message's id (0 when the
	// surface has no message of its own: /ask's), which the turn records
	// so that the next start deletes a status message a crash left. The
	// turn calls it at most once a second.
	Status(ctx context.Context, text string) (messageID uint64, err error)
	// ClearStatus deletes the status message (no-op when none was sent).
	ClearStatus(ctx context.Context) error
	// Deliver sends one chunk of the answer (at most 2,000 characters;
	// the first a reply to the trigger), allowed mentions the caller only,
	// and returns the sent message's id (recorded for reply routing).
	Deliver(ctx context.Context, chunk string, first bool) (messageID uint64, err error)
	// Busy answers the trigger with the admission refusal's text.
	Busy(ctx context.Context, text string) error
}
