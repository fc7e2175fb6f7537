package templates

import (
	"github.com/a-h/templ"

	"github.com/kimiapp/kimi/app/admin/form"
)

// GuildsView is the guild list (/guilds).
type GuildsView struct {
	Rows []GuildRow
	// AddID and AddErrors are the add-a-guild form as refused.
	AddID     string
	AddErrors form.Errors
}

// GuildRow is one guild of the list.
type GuildRow struct {
	ID          string
	Name        Name // the guild as the bot knows it
	Status      GuildStatus
	Staff       string // "2 users, 1 role" (the guild's own lists)
	Invalid     []string
	BlockedBy   []string
	HasDocument bool
}

// GuildStatus is a guild's activation as a badge: its text and kind
// (success, neutral, warning, danger).
type GuildStatus struct {
	Label string
	Kind  string
	// Why explains a guild that is not active.
	Why string
}

// GuildView is a guild's page (/guilds/{id}).
type GuildView struct {
	ID       string
	Name     Name // the guild as the bot knows it: the page's title
	Status   GuildStatus
	Exists   bool
	Revision string // the server-setup document's full revision
	Short    string // its first 16 hex digits
	Setup    GuildSetupView
	Raw      GuildRawView
	Modules  []GuildModuleView
	// Conflict is set after a save that lost a compare-and-swap.
	Conflict *GuildConflict
	// Errors holds a page-level message (form.FieldForm) of a refused save.
	Errors form.Errors
	// Near are the notices of a save, by the id of the card whose form
	// saved ("setup", "raw", "module-<name>"): shown beside that form.
	Near map[string][]Flash
	// Pick are the server-setup form's pickers, filled from Setup.
	Pick GuildPickers
	// Kept are cards rendered before, by card ("setup", "raw",
	// "module-<name>"), written instead of rendering them (a kept module
	// card's entry in Modules needs only its Name).
	Kept map[string]templ.Component
}

// GuildPickers are the server-setup form's channel, role and member
// fields.
type GuildPickers struct {
	StaffUsers, StaffRoles, RegularRoles, Channels, ProposalChannel, TaskDestinations Picker
}

// GuildSetupView is the server-setup document as a form.
type GuildSetupView struct {
	// Editable is false when the stored document is invalid or holds keys
	// the form does not show; Note says so and points to the raw text.
	Editable          bool
	Note              string
	BotActive         bool
	StaffUserIDs      string
	StaffRoleIDs      string
	RegularRoleIDs    string
	AllowedChannelIDs string
	ProposalChannelID string
	TasksEnabled      bool
	TasksMinTier      string
	TasksTimezone     string
	TasksDestinations string
	// AssistantEnabled is form.AssistantDefault, AssistantOn or
	// AssistantOff; the tool lists one name per line.
	AssistantEnabled      string
	AssistantMinTier      string
	AssistantBlockedTools string
	AssistantPinnedTools  string
	// AssistantDailyTokens is the guild's daily token budget ("": the
	// default on /assistant).
	AssistantDailyTokens string
	// Warnings name blocked or pinned tools no module declares.
	Warnings []string
	Errors   form.Errors
}

// GuildRawView is the server-setup document as raw text.
type GuildRawView struct {
	Text string
	// Problems are what is wrong with the stored text now.
	Problems []string
	// Refused lists every problem of a refused save, with its line.
	Refused []string
	Errors  form.Errors
}

// GuildModuleView is one module's settings in the guild, as a form
// generated from its schema.
type GuildModuleView struct {
	Name     string
	Exists   bool
	Valid    bool
	Policy   string // what invalid settings disable, in words
	Revision string
	Short    string
	Fields   []ModuleField
	Problems []string
	Errors   form.Errors
}

// ModuleField is one input of a generated module-settings form.
type ModuleField struct {
	Name    string // the form field (form.ModuleSettingName)
	ID      string
	Label   string // the schema field's name
	Kind    string // bool, enum, int, id, id_list, str, str_list
	Help    string
	Hint    string // the text under the input: ModuleHint
	Default string // the default as text ("" when none)
	// Required fields have no default.
	Required bool
	Choices  []string
	Value    string
	Checked  bool
	Error    string
	// Pick is the field as a picker (a channel, role or user id field of
	// a guild's form); nil renders it as typed text.
	Pick *Picker
	// Source says where the value in effect comes from, beside the field:
	// "Set in the document." or "Default: member." ("" unset, no default).
	Source string
}

// GuildConflict shows a save that lost to another: the text that was not
// saved, to copy from. The page around it shows the current document.
type GuildConflict struct {
	Document string // which document ("server setup", "kudos settings")
	Mine     string
	// Card is the id of the card whose form lost ("setup", "raw",
	// "module-<name>"): the conflict shows there, where the page opens.
	Card string
}

// GuildHistoryView is a document's history (/guilds/{id}/history).
type GuildHistoryView struct {
	GuildID string
	// GuildLabel is the guild as the page names it (its name, else
	// "Guild <id>").
	GuildLabel string
	Module     string // "" for the server-setup document
	Document   string // its name in words
	Target     string
	Revision   string // the document's current revision
	Entries    []HistoryEntryView
	FirstURL   string
	NextURL    string
	Errors     form.Errors
}

// HistoryEntryView is one write in a document's history with its diff.
type HistoryEntryView struct {
	ID      int64
	At      string
	AtExact string
	Actor   string
	// ActorName is the writer as the page names it ("proposal 1a2b3c4d"
	// for a proposal's write, linked by ActorURL; else Actor).
	ActorName, ActorURL string
	// Summary names the write: created, saved or reverted, and the
	// settings it changed.
	Summary      string
	Revert       bool
	RevertedFrom int64
	Before       string // short revisions
	After        string
	// Current marks the entry whose text is the document now (no revert).
	Current bool
	Created bool // the write that created the document
	Hunks   []DiffHunk
}

// DiffHunk is a run of changed lines with its unified-diff header.
type DiffHunk struct {
	Header string
	Lines  []DiffLine
}

// DiffLine is one line of a diff: Op is "add", "del" or "ctx"; Marker the
// +, - or space that makes it read without colour.
type DiffLine struct {
	Op     string
	Marker string
	Text   string
}

// ModuleHint is a generated field's help text with its default and kind
// (from Help, Kind, Required and Default).
func ModuleHint(f ModuleField) string {
	h := f.Help
	add := func(s string) {
		if h != "" {
			h += " "
		}
		h += s
	}
	switch f.Kind {
	case "id":
		add("A Discord id.")
	case "id_list":
		add("One Discord id per line, at most 512.")
	case "str_list":
		add("One entry per line.")
	case "int":
		add("A whole number.")
	}
	switch {
	case f.Required:
		add("Required.")
	case f.Default != "" && f.Kind != "enum":
		add("Default: " + f.Default + ".")
	case f.Default == "" && f.Kind != "bool":
		add("Empty: unset.")
	}
	return h
}
