package sdk

import (
	"context"
	"encoding/json"
)

// ToolRegistry registers LLM tools during Spec.Create. Tools stay invisible
// until the module has started and are masked again after it closes.
// Registering after loading fails with "tool 'x' cannot be registered after
// module loading; register tools from ModuleSpec.create(), not start()".
type ToolRegistry interface {
	// Register validates and records tool (see ValidateTool).
	Register(tool Tool) error
}

// ToolHandler runs a tool call. args is the model's JSON arguments object;
// decode it into your own struct. The returned text goes back to the model.
// Use tc (the trusted caller context), never arguments, to decide who acts.
type ToolHandler func(ctx context.Context, tc ToolContext, args json.RawMessage) (string, error)

// Tool declares an LLM tool.
type Tool struct {
	// Name is unique across the appliance.
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object.
	Parameters map[string]any
	Handler    ToolHandler
	// MinTier the caller needs; zero means TierMember.
	MinTier TrustTier
	// Searchable hides the tool until the model activates it via browse.
	Searchable bool
	// OwnerOnly limits the tool to the bot owner (fails closed when none).
	OwnerOnly bool
	// AllowOutsideGuilds makes the tool visible in DMs and personal chat;
	// by default tools are guild-only.
	AllowOutsideGuilds bool
	// RestrictGuilds limits the tool to GuildIDs (possibly none).
	RestrictGuilds bool
	GuildIDs       []uint64
	// TrustedOutput marks the output as trusted; by default tool output is
	// presented to the model as untrusted data.
	TrustedOutput bool
}

// EffectiveMinTier returns MinTier or TierMember.
func (t Tool) EffectiveMinTier() TrustTier { return t.MinTier.Or(TierMember) }

// ToolContext is the trusted context of one tool call. Ids are 0 when absent
// (GuildID 0 = personal chat / DM; a tool targeting guild data must refuse).
type ToolContext struct {
	UserID    uint64
	UserName  string
	GuildID   uint64
	ChannelID uint64
	ThreadID  uint64
	TrustTier TrustTier
	// ToolConfigs are per-tool operator configs, read fresh every turn.
	ToolConfigs map[string]map[string]any
	// TriggerMessageID is the Discord message that started the turn (SDK 2.1).
	TriggerMessageID uint64
	// Files is nil unless Permissions.ToolFiles and tools.files.v1 (SDK 2.2).
	Files ToolFiles
	// TriggerMessage is the triggering message captured at turn entry (SDK 2.3).
	TriggerMessage *TriggeringMessageSnapshot
	// TurnBudget counts per-turn work; nil when the host has none.
	TurnBudget TurnBudget
}

// TriggeringMessageSnapshot is the message that triggered a turn.
type TriggeringMessageSnapshot struct {
	MessageID   uint64
	GuildID     uint64
	ChannelID   uint64
	AuthorID    uint64
	Content     string
	AuthorIsBot bool
}

// TurnBudget bounds work per outer model turn, namespaced per module.
type TurnBudget interface {
	// Consume takes one unit of name if fewer than limit were used this
	// turn; false (and no change) when exhausted.
	Consume(name string, limit int) bool
}

// Tool-file limits.
const (
	// MaxToolFileBudget is the aggregate bytes one tool invocation may read.
	MaxToolFileBudget = 50 << 20
)

// ToolFiles reads the files admitted into a tool invocation. Reads never
// truncate: oversize fails with FileTooLarge. The port expires when the
// handler returns (FileExpired).
type ToolFiles interface {
	// Attachments lists the invocation's attachments.
	Attachments() []ToolAttachment
	// ReadAttachment reads one attachment; maxBytes must be positive.
	ReadAttachment(ctx context.Context, id string, maxBytes int64) (ToolFile, error)
	// ReadWorkspace reads a caller-owned workspace file by relative path.
	ReadWorkspace(ctx context.Context, relativePath string, maxBytes int64) (ToolFile, error)
}

// AttachmentSource says where a ToolAttachment came from.
type AttachmentSource string

// Attachment sources; "" means AttachmentCurrent.
const (
	AttachmentCurrent AttachmentSource = "current"
	AttachmentReply   AttachmentSource = "reply"
)

// ToolAttachment is a file admitted into the invocation. ID is opaque and
// invocation-local.
type ToolAttachment struct {
	ID                string
	Filename          string
	Size              int64
	MediaType         string
	Source            AttachmentSource
	WorkspacePath     string
	UnavailableReason string
}

// ToolFile is the content of a read.
type ToolFile struct {
	Filename  string
	MediaType string
	Data      []byte
}
