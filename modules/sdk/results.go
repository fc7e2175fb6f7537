package sdk

import (
	"context"
	"slices"
	"time"
)

// Scheduled-result limits (SDK 2.4).
const (
	// MaxResultFileBytes bounds one attachment read (8 MiB).
	MaxResultFileBytes = 8 << 20
	// MaxResultTotalFileBytes bounds all reads of one invocation (16 MiB),
	// repeated reads included.
	MaxResultTotalFileBytes = 16 << 20
	// MaxResultEmbedJSONBytes bounds ScheduledResultMessage.EmbedJSON.
	MaxResultEmbedJSONBytes = 32 << 10
	// ResultRetention is how long notifications are kept.
	ResultRetention = 30 * 24 * time.Hour
	// ResultHandlerTimeout bounds one handler invocation.
	ResultHandlerTimeout = 30 * time.Second
)

// ScheduledResults is the durable subscription port to published scheduled
// task output (SDK 2.4): nil unless the module declares
// Permissions.ScheduledResults and the host advertises scheduled_results.v1.
// Subscribe on every Start; subscriptions survive downtime, but a new one
// never replays history. Delivery is at least once: use the notification id
// to make your own writes idempotent.
type ScheduledResults interface {
	// Subscribe registers handler for a declared name in one guild. The
	// same name may be subscribed in several guilds.
	Subscribe(ctx context.Context, name string, guildID uint64, handler ScheduledResultHandler) error
	// Unsubscribe forgets the subscription and its notifications.
	Unsubscribe(ctx context.Context, name string, guildID uint64) error
}

// ScheduledResultHandler processes one notification. Returning nil
// acknowledges it; an error retries later with the same NotificationID.
// files is valid only until the handler returns.
type ScheduledResultHandler func(ctx context.Context, result ScheduledResult, files ScheduledResultFiles) error

// ScheduledResultFiles reads this notification's attachments during its
// handler invocation, at most MaxResultFileBytes each and
// MaxResultTotalFileBytes in total.
type ScheduledResultFiles interface {
	// Read returns an attachment's bytes; maxBytes must be within
	// 1..MaxResultFileBytes ("attachment read limit must be between 1 byte
	// and 8 MiB"). Larger files fail; nothing is truncated.
	Read(ctx context.Context, attachmentID string, maxBytes int64) ([]byte, error)
}

// ResultOutcome is a run outcome; only completed runs notify.
type ResultOutcome string

// ResultCompleted is the only outcome delivered to subscribers.
const ResultCompleted ResultOutcome = "completed"

// ScheduledResult is one published task run, as delivered to a subscriber.
type ScheduledResult struct {
	// NotificationID is stable across retries: the idempotency key.
	NotificationID string
	// Subscription is the subscribed name (1–64 of [a-z0-9_]).
	Subscription string
	// TaskID identifies the scheduled task that ran.
	TaskID string
	// RunID identifies the run whose output was published.
	RunID string
	// Revision is the task definition's revision that produced the run.
	Revision int
	// GuildID is the guild the task published in (0 < id < 2^64).
	GuildID uint64
	// OwnerID is the Discord user who owns the task.
	OwnerID uint64
	// PublishedAt is when the last required post was confirmed sent.
	PublishedAt time.Time
	// ExpiresAt ends retention (ResultRetention after publication): keep
	// idempotency receipts at least this long.
	ExpiresAt time.Time
	// Messages are the posted messages in order; attachments are read
	// through the handler's ScheduledResultFiles.
	Messages []ScheduledResultMessage
	// Outcome is always ResultCompleted.
	Outcome ResultOutcome
}

// AttachmentIDs returns the ids of every attachment of every message.
func (r ScheduledResult) AttachmentIDs() []string {
	var ids []string
	for _, m := range r.Messages {
		for _, a := range m.Attachments {
			ids = append(ids, a.ID)
		}
	}
	return ids
}

// Clone returns a deep copy (messages and their attachments), so a host or
// fake can hand each handler invocation its own result: a handler that
// changes its copy cannot alter what a retry receives.
func (r ScheduledResult) Clone() ScheduledResult {
	c := r
	c.Messages = slices.Clone(r.Messages)
	for i := range c.Messages {
		c.Messages[i].Attachments = slices.Clone(r.Messages[i].Attachments)
	}
	return c
}

// ScheduledResultMessage is one posted message of the run.
type ScheduledResultMessage struct {
	// Message is the posted Discord message.
	Message MessageRef
	// Content is the posted text (as sent; later edits do not change it).
	Content string
	// Attachments are the message's published files.
	Attachments []ScheduledResultAttachment
	// EmbedJSON is the published embed (≤ 32 KiB), "" when none or omitted;
	// EmbedUnavailableReason then says why it was omitted.
	EmbedJSON              string
	EmbedUnavailableReason string
}

// ScheduledResultAttachment describes a published file.
type ScheduledResultAttachment struct {
	// ID is what ScheduledResultFiles.Read takes.
	ID string
	// Filename is the published file name.
	Filename string
	// SizeBytes is the file's size.
	SizeBytes int64
	// Description is the attachment's description ("" when none).
	Description string
}
