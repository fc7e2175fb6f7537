package sdk

import (
	"context"
	"time"
)

// Interactions is the slash-command and component port. Commands and
// components are gated before the handler: guild required, module guild
// predicate true, caller's trust tier at least MinTier (else an ephemeral
// "Staff only." or "Not allowed."). Handler errors are logged and answered
// with an ephemeral generic message.
type Interactions interface {
	// AddCommand registers a top-level command or a command in one group
	// level; autocomplete may be nil. A name already owned by anyone fails.
	AddCommand(spec CommandSpec, handler CommandHandler, autocomplete AutocompleteHandler) (Registration, error)
	// ReplaceGuildCommands replaces this module's complete command set for
	// one guild (capability discord.guild_commands.v1); an empty slice
	// removes them. A failed live sync returns *CommandSyncError.
	ReplaceGuildCommands(ctx context.Context, guildID uint64, commands []GuildCommand) error
	// RegisterComponent routes clicks/submits of custom ids
	// m:<module>:<key>[:part…] of the given kind to handler. Components are
	// persistent as long as the module registers the key again in Start.
	RegisterComponent(kind ComponentKind, key string, handler ComponentHandler, opts ComponentOptions) (Registration, error)
	// CustomID builds this module's custom id for key and parts
	// (see BuildCustomID).
	CustomID(key string, parts ...string) (string, error)
}

// CommandHandler handles a slash command.
type CommandHandler func(ctx context.Context, in Interaction) error

// ComponentHandler handles a button click, select choice or modal submit.
type ComponentHandler func(ctx context.Context, in Interaction) error

// AutocompleteHandler returns suggestions for option given the current
// text; at most 25 are shown; errors show none.
type AutocompleteHandler func(ctx context.Context, in Interaction, option, current string) ([]Choice, error)

// ComponentKind is the kind of a registered component.
type ComponentKind string

// Component kinds.
const (
	ComponentButton ComponentKind = "button"
	ComponentSelect ComponentKind = "select"
	ComponentModal  ComponentKind = "modal"
)

// Valid reports whether k is button, select or modal.
func (k ComponentKind) Valid() bool {
	return k == ComponentButton || k == ComponentSelect || k == ComponentModal
}

// ComponentOptions qualify a component registration.
type ComponentOptions struct {
	// ExpiresAfter, when positive, expires the registration that long after
	// it was made (per registration, not per message).
	ExpiresAfter time.Duration
	// MinTier the clicker needs; zero means TierMember.
	MinTier TrustTier
}

// EffectiveMinTier returns MinTier or its default, TierMember.
func (o ComponentOptions) EffectiveMinTier() TrustTier { return o.MinTier.Or(TierMember) }

// GuildCommand is one command of a module's desired per-guild command set.
type GuildCommand struct {
	Spec         CommandSpec
	Handler      CommandHandler
	Autocomplete AutocompleteHandler
}

// Interaction is one slash command, component or modal submit. Responses
// never ping.
type Interaction interface {
	// GuildID is 0 outside a guild.
	GuildID() uint64
	// ChannelID is the channel (or thread) the interaction happened in.
	ChannelID() uint64
	// UserID is the invoking user: the caller, clicker or submitter.
	UserID() uint64
	// GuildName is the guild's name ("" outside a guild).
	GuildName() string
	// Options are the slash-command option values; user, channel and role
	// options are reduced to ids.
	Options() Options
	// CustomID is the component's custom id ("" for slash commands).
	CustomID() string
	// Values are the chosen select values.
	Values() []string
	// TextValues are modal inputs by key.
	TextValues() map[string]string
	// Message is the message a component lives on (nil for slash commands).
	Message() *MessageRef

	// Respond answers (as a follow-up if already answered).
	Respond(ctx context.Context, r Response) error
	// Defer acknowledges now and answers later.
	Defer(ctx context.Context, ephemeral bool) error
	// ShowModal opens a modal (capability discord.modals.v1).
	ShowModal(ctx context.Context, modal ModalSpec) error
	// EditOriginal edits the original response; nil Components clears the
	// controls.
	EditOriginal(ctx context.Context, r Response) error
	// FollowUp sends another message after the first response.
	FollowUp(ctx context.Context, r Response) error
}

// Response is an interaction reply. Content "" means none. Once a message
// uses a Layout, later edits must also be layouts.
type Response struct {
	Content    string
	Embed      *OutgoingEmbed
	Layout     *OutgoingLayout
	Ephemeral  bool
	Components []Component
}

// Options are slash-command option values by name: string, int64, bool, or
// uint64 ids for user/channel/role options.
type Options map[string]any

// String returns a string option.
func (o Options) String(name string) (string, bool) { v, ok := o[name].(string); return v, ok }

// Int returns an integer option. Under Kimi's Discord connection the value
// is exact across int64's range: it is read from the gateway's JSON, not
// from discordgo's float64 decoding (exact only up to 2^53).
func (o Options) Int(name string) (int64, bool) {
	n, ok := asInt64(o[name])
	return n, ok
}

// Bool returns a boolean option.
func (o Options) Bool(name string) (bool, bool) { v, ok := o[name].(bool); return v, ok }

// ID returns a user, channel or role option as a snowflake.
func (o Options) ID(name string) (uint64, bool) {
	switch v := o[name].(type) {
	case uint64:
		return v, true
	case int64:
		if v > 0 {
			return uint64(v), true
		}
	case int:
		if v > 0 {
			return uint64(v), true
		}
	}
	return 0, false
}

// OptionKind is the type of a command option.
type OptionKind string

// Option kinds (attachment and number options are not supported).
const (
	OptionString  OptionKind = "string"
	OptionInteger OptionKind = "integer"
	OptionBoolean OptionKind = "boolean"
	OptionUser    OptionKind = "user"
	OptionChannel OptionKind = "channel"
	OptionRole    OptionKind = "role"
)

// Choice is a fixed option choice or an autocomplete suggestion; Value is a
// string (1–100 characters) or an integer.
type Choice struct {
	Name  string
	Value any
}

// CommandOption is one option of a command. Limits: name 1–32 unique,
// description 1–100, at most 25 choices (string/integer only, not with
// Autocomplete), MinValue/MaxValue only on integer options — write them as
// new(int64(1)).
type CommandOption struct {
	Name         string
	Kind         OptionKind
	Description  string
	Required     bool
	Choices      []Choice
	MinValue     *int64
	MaxValue     *int64
	Autocomplete bool
}

// CommandSpec is a slash command. Limits: description 1–100, group
// description ≤ 100, at most 25 options. MinTier zero means TierStaff —
// commands are staff-only unless they say otherwise.
type CommandSpec struct {
	Name             string
	Description      string
	Options          []CommandOption
	MinTier          TrustTier
	Group            string // "" for a top-level command
	GroupDescription string
}

// QualifiedName is "group.name" or "name".
func (s CommandSpec) QualifiedName() string {
	if s.Group != "" {
		return s.Group + "." + s.Name
	}
	return s.Name
}

// EffectiveMinTier returns MinTier or its default, TierStaff.
func (s CommandSpec) EffectiveMinTier() TrustTier { return s.MinTier.Or(TierStaff) }

// Component is a message control: ButtonSpec or SelectSpec.
type Component interface {
	componentKind() ComponentKind
	// ComponentKey is the registered key the component routes to.
	ComponentKey() string
}

// ButtonStyle is a button's color.
type ButtonStyle string

// Button styles; "" means ButtonSecondary.
const (
	ButtonPrimary   ButtonStyle = "primary"
	ButtonSecondary ButtonStyle = "secondary"
	ButtonSuccess   ButtonStyle = "success"
	ButtonDanger    ButtonStyle = "danger"
)

// ButtonSpec is a persistent button routed to the handler registered for
// Key; Parts are appended to its custom id.
type ButtonSpec struct {
	Key      string
	Label    string
	Style    ButtonStyle
	Parts    []string
	Disabled bool
	Emoji    string
}

func (ButtonSpec) componentKind() ComponentKind { return ComponentButton }

// ComponentKey returns Key.
func (b ButtonSpec) ComponentKey() string { return b.Key }

// SelectOption is one select choice; Description "" means none.
type SelectOption struct {
	Label       string
	Value       string
	Description string
}

// SelectSpec is a persistent select menu. Limits: 1–25 options, label/value
// 1–100, unique values, description 1–100 when set, placeholder ≤ 150,
// 0 ≤ min ≤ max ≤ 25 with max ≥ 1. MinValues and MaxValues both zero mean
// the default 1..1.
type SelectSpec struct {
	Key         string
	Options     []SelectOption
	Placeholder string
	Parts       []string
	MinValues   int
	MaxValues   int
}

func (SelectSpec) componentKind() ComponentKind { return ComponentSelect }

// ComponentKey returns Key.
func (s SelectSpec) ComponentKey() string { return s.Key }

// Bounds returns the effective (min, max) values, applying the 1..1 default.
func (s SelectSpec) Bounds() (minValues, maxValues int) {
	if s.MinValues == 0 && s.MaxValues == 0 {
		return 1, 1
	}
	return s.MinValues, s.MaxValues
}

// TextInputStyle is a modal input's style; "" means TextInputShort.
type TextInputStyle string

// Text input styles.
const (
	TextInputShort     TextInputStyle = "short"
	TextInputParagraph TextInputStyle = "paragraph"
)

// TextInputSpec is one modal input. Limits: key segment-regex and unique,
// label 1–45, placeholder ≤ 100, default ≤ 4000, min 0–4000, max 1–4000
// (0 = unset), min ≤ max. Inputs are required unless Optional.
type TextInputSpec struct {
	Key         string
	Label       string
	Style       TextInputStyle
	Default     string
	Placeholder string
	Optional    bool
	MinLength   int
	MaxLength   int
}

// ModalSpec is a modal whose submit is routed to the handler registered
// for Key (kind ComponentModal). Limits: title 1–45, 1–5 inputs.
type ModalSpec struct {
	Key    string
	Title  string
	Inputs []TextInputSpec
	Parts  []string
}

// LayoutItem is one item of a Components V2 layout: LayoutText,
// LayoutSeparator, LayoutGallery or LayoutSection.
type LayoutItem interface {
	layoutItem()
}

// LayoutText is a text block of 1–4000 characters.
type LayoutText struct {
	Content string
}

// SeparatorSpacing is a separator's spacing; "" means SpacingSmall.
type SeparatorSpacing string

// Separator spacings.
const (
	SpacingSmall SeparatorSpacing = "small"
	SpacingLarge SeparatorSpacing = "large"
)

// LayoutSeparator separates items; Hidden makes it spacing only.
type LayoutSeparator struct {
	Hidden  bool
	Spacing SeparatorSpacing
}

// LayoutGallery shows 1–10 media URLs.
type LayoutGallery struct {
	URLs []string
}

// LayoutSection is 1–3 texts beside a thumbnail (URL required).
type LayoutSection struct {
	Texts        []string
	ThumbnailURL string
}

func (LayoutText) layoutItem()      {}
func (LayoutSeparator) layoutItem() {}
func (LayoutGallery) layoutItem()   {}
func (LayoutSection) layoutItem()   {}

// OutgoingLayout is one Components V2 container (capability
// discord.components_v2.v1). Limits: 1–40 items, total text ≤ 4000,
// accent 0..0xFFFFFF; AccentColor nil means none.
type OutgoingLayout struct {
	Items       []LayoutItem
	AccentColor *int
}
