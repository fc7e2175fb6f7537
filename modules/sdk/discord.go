package sdk

import (
	"context"
	"slices"
	"time"
)

// DiscordAction names one operation of the DiscordActions port; a module may
// call only the actions listed in Permissions.DiscordActions.
type DiscordAction string

// The 16 Discord actions of the reference.
const (
	ActionSendMessage        DiscordAction = "send_message"
	ActionSendDM             DiscordAction = "send_dm"
	ActionEditMessage        DiscordAction = "edit_message"
	ActionDeleteMessage      DiscordAction = "delete_message"
	ActionBan                DiscordAction = "ban"
	ActionKick               DiscordAction = "kick"
	ActionTimeout            DiscordAction = "timeout"
	ActionFetchMessage       DiscordAction = "fetch_message"
	ActionFetchMember        DiscordAction = "fetch_member"
	ActionFetchChannel       DiscordAction = "fetch_channel"
	ActionFetchMessages      DiscordAction = "fetch_messages"
	ActionFetchPins          DiscordAction = "fetch_pins"
	ActionFetchPublicThreads DiscordAction = "fetch_public_threads"
	ActionFetchRoles         DiscordAction = "fetch_roles"
	ActionFetchInvites       DiscordAction = "fetch_invites"
	ActionCanViewChannel     DiscordAction = "can_view_channel"
)

var allDiscordActions = []DiscordAction{
	ActionSendMessage, ActionSendDM, ActionEditMessage, ActionDeleteMessage,
	ActionBan, ActionKick, ActionTimeout,
	ActionFetchMessage, ActionFetchMember, ActionFetchChannel, ActionFetchMessages,
	ActionFetchPins, ActionFetchPublicThreads, ActionFetchRoles, ActionFetchInvites,
	ActionCanViewChannel,
}

// AllDiscordActions returns every action (a fresh slice).
func AllDiscordActions() []DiscordAction { return slices.Clone(allDiscordActions) }

// Valid reports whether a is one of the 16 actions.
func (a DiscordAction) Valid() bool { return slices.Contains(allDiscordActions, a) }

// Targeted reports whether a acts on a member (ban, kick, timeout) and so
// runs the core target policy.
func (a DiscordAction) Targeted() bool {
	return a == ActionBan || a == ActionKick || a == ActionTimeout
}

// Limits of the Discord actions port.
const (
	// MaxAuditReasonLength caps "[<module>] <reason>" audit reasons.
	MaxAuditReasonLength = 512
	// MaxBanDeleteMessages caps Ban's deleteMessages (7 days).
	MaxBanDeleteMessages = 7 * 24 * time.Hour
	// MaxTimeout caps Timeout's duration (28 days).
	MaxTimeout = 28 * 24 * time.Hour
	// MaxHistoryLimit caps FetchMessages' limit (1..100).
	MaxHistoryLimit = 100
)

// DiscordActions is the declared Discord operations port. Every call fails
// with *UndeclaredDiscordActionError unless the action is declared; guild and
// channel operations require an active guild; outgoing messages never ping.
type DiscordActions interface {
	// SendMessage posts to a channel of an active guild and returns the new
	// message. ReplyTo must be in the same channel.
	SendMessage(ctx context.Context, channelID uint64, msg OutgoingMessage) (MessageRef, error)
	// SendDM sends a direct message; false on any fetch or send failure.
	SendDM(ctx context.Context, userID uint64, content string, embed *OutgoingEmbed) (bool, error)
	// EditMessage replaces both content and embed ("" / nil clear them).
	EditMessage(ctx context.Context, ref MessageRef, content string, embed *OutgoingEmbed) error
	// DeleteMessage deletes a message; a missing message is not an error.
	// The reason is only logged.
	DeleteMessage(ctx context.Context, ref MessageRef, reason string) error
	// Ban bans a member under the target policy; deleteMessages is clamped
	// to 0..MaxBanDeleteMessages.
	Ban(ctx context.Context, guildID, userID uint64, mod Moderation, deleteMessages time.Duration) error
	// Kick kicks a member under the target policy.
	Kick(ctx context.Context, guildID, userID uint64, mod Moderation) error
	// Timeout times a member out; duration must be positive
	// ("timeout duration must be positive") and is capped at MaxTimeout.
	Timeout(ctx context.Context, guildID, userID uint64, mod Moderation, duration time.Duration) error
	// FetchMessage returns nil when the message cannot be fetched.
	FetchMessage(ctx context.Context, ref MessageRef) (*MessageSnapshot, error)
	// FetchMember returns nil when the guild is inactive or the member absent.
	FetchMember(ctx context.Context, guildID, userID uint64) (*MemberSnapshot, error)
	// FetchChannel returns nil for other guilds and kinds other than text,
	// forum and thread.
	FetchChannel(ctx context.Context, guildID, channelID uint64) (*ChannelSnapshot, error)
	// FetchMessages pages channel history (see HistoryQuery).
	FetchMessages(ctx context.Context, guildID, channelID uint64, q HistoryQuery) (MessagePage, error)
	// FetchPins returns the pinned messages (none for another guild).
	FetchPins(ctx context.Context, guildID, channelID uint64) ([]MessageSnapshot, error)
	// FetchPublicThreads returns active and archived public threads of a
	// parent channel, sorted by id.
	FetchPublicThreads(ctx context.Context, guildID, parentChannelID uint64) ([]ChannelSnapshot, error)
	// FetchRoles returns the guild's roles.
	FetchRoles(ctx context.Context, guildID uint64) ([]RoleSnapshot, error)
	// FetchInvites returns the guild's invites (bot needs Manage Server).
	FetchInvites(ctx context.Context, guildID uint64) ([]InviteSnapshot, error)
	// CanViewChannel reports whether a member can view a channel and read
	// its history (private threads also need membership).
	CanViewChannel(ctx context.Context, guildID, userID, channelID uint64) (bool, error)
}

// Moderation qualifies a ban, kick or timeout.
type Moderation struct {
	// ActorID is the staff member acting through the module, or 0 when the
	// module acts on its own (automated; the actor is then treated as staff).
	ActorID uint64
	// Reason is written to the audit log as "[<module>] <reason>", whitespace
	// collapsed, at most MaxAuditReasonLength characters.
	Reason string
}

// OutgoingMessage is what SendMessage posts. Content "" means no content.
type OutgoingMessage struct {
	Content    string
	Embed      *OutgoingEmbed
	ReplyTo    *MessageRef
	Components []Component
}

// HistoryQuery selects a page of channel history: messages after After, or
// before Before (at most one of them; both zero means the newest). Limit is
// clamped to 1..MaxHistoryLimit; zero means MaxHistoryLimit.
type HistoryQuery struct {
	// After pages forward (oldest first) from this message id; NextCursor
	// is then the newest id of the page. To read a channel from its very
	// beginning set After to 1: 0 means "not set".
	After uint64
	// Before pages backward from this message id; NextCursor is then the
	// oldest id of the page.
	Before uint64
	// Limit is the page size (1..MaxHistoryLimit, 0 = MaxHistoryLimit).
	Limit int
}

// Validate returns "message history accepts either after or before, not
// both" when both cursors are set.
func (q HistoryQuery) Validate() error {
	if q.After != 0 && q.Before != 0 {
		return contractErrorf("message history accepts either after or before, not both")
	}
	return nil
}

// ClampedLimit returns Limit clamped to 1..MaxHistoryLimit (0 means 100).
func (q HistoryQuery) ClampedLimit() int {
	switch {
	case q.Limit == 0 || q.Limit > MaxHistoryLimit:
		return MaxHistoryLimit
	case q.Limit < 1:
		return 1
	}
	return q.Limit
}

// MessageRef identifies a message. It is bound to its guild: the host
// checks the channel's guild, so a ref cannot be reused across guilds.
type MessageRef struct {
	GuildID   uint64
	ChannelID uint64
	MessageID uint64
	// ParentChannelID is the parent channel when the message is in a
	// thread, 0 otherwise.
	ParentChannelID uint64
}

// AttachmentSnapshot describes a message attachment.
type AttachmentSnapshot struct {
	AttachmentID uint64
	Filename     string
	URL          string
	Size         int64
	ContentType  string // "" when unknown
}

// MessageSnapshot is a message as the port returns it.
type MessageSnapshot struct {
	Ref               MessageRef
	AuthorID          uint64
	Content           string
	Attachments       []AttachmentSnapshot
	JumpURL           string
	CreatedAt         time.Time
	AuthorDisplayName string
	AuthorIsBot       bool
	// EmbedImageURLs are the message's embed images (proxy URLs preferred).
	EmbedImageURLs []string
	// ReplyToMessageID is the replied-to message, 0 when none.
	ReplyToMessageID uint64
	Pinned           bool
	// EditedAt is zero when never edited.
	EditedAt time.Time
	// EmbedTexts holds, per embed, title/description/author/url, "name:
	// value" fields and footer joined with " — ".
	EmbedTexts []string
}

// MemberSnapshot is a guild member.
type MemberSnapshot struct {
	GuildID     uint64
	UserID      uint64
	DisplayName string
	RoleIDs     []uint64
	IsBot       bool
	// JoinedAt and TimedOutUntil are zero when unknown / not timed out.
	JoinedAt      time.Time
	TimedOutUntil time.Time
}

// ChannelKind is the kind of a ChannelSnapshot.
type ChannelKind string

// Channel kinds the port reports.
const (
	ChannelText   ChannelKind = "text"
	ChannelForum  ChannelKind = "forum"
	ChannelThread ChannelKind = "thread"
)

// ChannelSnapshot is a text channel, forum or thread.
type ChannelSnapshot struct {
	GuildID         uint64
	ChannelID       uint64
	Kind            ChannelKind
	Name            string
	ParentChannelID uint64 // 0 when none
	Topic           string
	Archived        bool
	Private         bool
	AppliedTags     []string // tag names
}

// RoleSnapshot is a guild role. Higher Position sits above lower ones.
type RoleSnapshot struct {
	GuildID  uint64
	RoleID   uint64
	Name     string
	Position int
	Managed  bool
}

// InviteSnapshot is invite metadata. Gateway delete events are partial:
// every field but GuildID and Code may be zero (unknown).
type InviteSnapshot struct {
	GuildID   uint64
	Code      string
	ChannelID uint64
	InviterID uint64
	Uses      *int
	MaxUses   *int
	MaxAge    time.Duration
	Temporary *bool
	CreatedAt time.Time
	ExpiresAt time.Time
}

// MessagePage is one page of channel history, sorted ascending by id.
// NextCursor is the newest id when paging After, else the oldest; 0 when the
// page is empty.
type MessagePage struct {
	Messages   []MessageSnapshot
	NextCursor uint64
	HasMore    bool
}

// EmbedField is one field of an OutgoingEmbed.
type EmbedField struct {
	Name   string
	Value  string
	Inline bool
}

// OutgoingEmbed is an embed a module sends. Empty strings are omitted;
// Color 0 means none; Timestamp stamps the embed with the send time.
type OutgoingEmbed struct {
	Title       string
	Description string
	Color       int
	Fields      []EmbedField
	Footer      string
	Timestamp   bool
}
