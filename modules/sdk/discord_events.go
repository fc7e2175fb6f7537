package sdk

import "time"

// Core event topics (SDK events.py). Payloads are the types below, passed
// by value; they carry ids plus what cannot be re-fetched. Guild-less (DM)
// gateway events are not published. Member events need the members intent
// (discord.members.v1); invite events need the bot's Manage Channels.
const (
	TopicMessage           = "discord.message"
	TopicMessageEdit       = "discord.message_edit"
	TopicMessageDelete     = "discord.message_delete"
	TopicMessageBulkDelete = "discord.message_bulk_delete"
	TopicInviteCreate      = "discord.invite_create"
	TopicInviteDelete      = "discord.invite_delete"
	TopicMemberJoin        = "discord.member_join"
	TopicMemberRemove      = "discord.member_remove"
	TopicMemberUpdate      = "discord.member_update"
	TopicAuditLogEntry     = "discord.audit_log_entry"
)

// MessageEvent is the payload of discord.message.
type MessageEvent struct {
	Message     MessageSnapshot
	AuthorIsBot bool
}

// MessageEditEvent is the payload of discord.message_edit. Uncached raw
// edits may lack the author (0) and the contents (nil).
type MessageEditEvent struct {
	Ref           MessageRef
	AuthorID      uint64
	BeforeContent *string
	AfterContent  *string
	EditedAt      time.Time
}

// MessageDeleteEvent is the payload of discord.message_delete. Uncached
// deletions carry only Ref (AuthorID 0, CachedContent nil, AuthorIsBot nil).
type MessageDeleteEvent struct {
	Ref               MessageRef
	AuthorID          uint64
	CachedContent     *string
	CachedAttachments []AttachmentSnapshot
	AuthorIsBot       *bool
}

// MessageBulkDeleteEvent is the payload of discord.message_bulk_delete;
// Refs are sorted by message id.
type MessageBulkDeleteEvent struct {
	Refs          []MessageRef
	BotMessageIDs []uint64
}

// InviteCreateEvent is the payload of discord.invite_create.
type InviteCreateEvent struct {
	Invite InviteSnapshot
}

// InviteDeleteEvent is the payload of discord.invite_delete (partial).
type InviteDeleteEvent struct {
	Invite InviteSnapshot
}

// MemberJoinEvent is the payload of discord.member_join.
type MemberJoinEvent struct {
	Member           MemberSnapshot
	AccountCreatedAt time.Time
}

// MemberRemoveEvent is the payload of discord.member_remove.
type MemberRemoveEvent struct {
	GuildID        uint64
	UserID         uint64
	RolesAtRemoval []uint64
	DisplayName    string
	IsBot          bool
}

// MemberUpdateEvent is the payload of discord.member_update. Role lists are
// sorted; pointers are nil when unknown or unset; RoleNames names the
// changed roles.
type MemberUpdateEvent struct {
	GuildID             uint64
	UserID              uint64
	RolesAdded          []uint64
	RolesRemoved        []uint64
	TimedOutUntilBefore *time.Time
	TimedOutUntilAfter  *time.Time
	NicknameBefore      *string
	NicknameAfter       *string
	DisplayName         string
	IsBot               bool
	RoleNames           map[uint64]string
}

// AuditAction is the normalized action of an audit-log entry.
type AuditAction string

// Audit actions; a member_update changing timed_out_until becomes
// AuditTimeout (with Until) or AuditTimeoutCleared.
const (
	AuditBan            AuditAction = "ban"
	AuditUnban          AuditAction = "unban"
	AuditKick           AuditAction = "kick"
	AuditTimeout        AuditAction = "timeout"
	AuditTimeoutCleared AuditAction = "timeout_cleared"
	AuditMemberUpdate   AuditAction = "member_update"
	AuditOther          AuditAction = "other"
)

// AuditChange is one changed attribute (timed_out_until, roles, nick, deaf,
// mute) with JSON-able old and new values (times as unix seconds, lists as
// ids).
type AuditChange struct {
	Attribute string
	Old       any
	New       any
}

// AuditLogEntryEvent is the payload of discord.audit_log_entry.
type AuditLogEntryEvent struct {
	GuildID           uint64
	EntryID           uint64
	Action            AuditAction
	RawAction         string // Discord's enum name
	ActorID           uint64 // 0 when unknown
	TargetID          uint64 // 0 when unknown
	Reason            *string
	Changes           []AuditChange
	CreatedAt         time.Time
	TargetDisplayName *string
	// Until is the timeout expiry for AuditTimeout, zero otherwise.
	Until       time.Time
	ActorIsSelf bool
}
