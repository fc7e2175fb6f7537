package templates

import (
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
)

// DemoView is the /demo chat view of demo mode: the demo guild's channels, the open channel's
// messages (with the acting member's ephemeral responses), the modals open for that member, and
// the forms to post, click, run slash commands and submit modals as a demo member.
type DemoView struct {
	GuildName string
	Channels  []DemoLink
	// Channel is the open channel's id and name.
	Channel, ChannelName string
	Members              []DemoLink
	// As is the acting demo member (every interaction form acts as them) and AsName their name.
	As, AsName string
	Messages   []DemoMessage
	Modals     []DemoModal
	Commands   []DemoCommand
	// Mentions names the guild's members, channels and roles in message text (nil: ids shown
	// as unknown).
	Mentions Mentions
	// CSRF is the session's token for the forms inside the live regions.
	CSRF string
	// LiveChat and LiveModals are the SSE addresses of the live regions ("" on a refused form's
	// page, so a live update cannot replace what was kept).
	LiveChat, LiveModals string
	// Member and Content are the post form as submitted (kept when it is refused).
	Member, Content string
	// Command and Modal are a refused command or modal form, kept with its values.
	Command *form.DemoCommand
	Modal   *form.DemoModal
	// Errors are the refused form's, by field name; ErrorAt says which form they belong to
	// ("post", "button", "command" or "modal").
	Errors  form.Errors
	ErrorAt string
}

// Errors of the demo's forms: which form a refusal belongs to.
const (
	DemoFormPost    = "post"
	DemoFormButton  = "button"
	DemoFormCommand = "command"
	DemoFormModal   = "modal"
)

// DemoLink is a channel, role or member of the demo guild.
type DemoLink struct{ ID, Name string }

// DemoGuild is the demo guild as the chat view reads it: its name, its text channels, its
// roles and the members a visitor may act as.
type DemoGuild struct {
	Name     string
	Channels []DemoLink
	Roles    []DemoLink
	Members  []DemoLink
}

// DemoMessage is one message of the chat view.
type DemoMessage struct {
	ID, Author string
	Bot        bool
	// Content is the message's text as Discord holds it: the chat shows it as Discord does
	// (DiscordMarkdown), every character escaped.
	Content string
	At      time.Time
	Edited  bool
	// Ephemeral marks a response only the acting member sees; Loading a deferred response not
	// yet edited ("thinking").
	Ephemeral, Loading bool
	// Command is the slash command the message answers ("/kudos give"), if any.
	Command    string
	Embeds     []DemoEmbed
	Components []DemoComponent
	// Reactions are the message's reactions in the order they were first added.
	Reactions []DemoReaction
}

// DemoReaction is one emoji's reactions on a message: how many, and whether Kimi's is one.
type DemoReaction struct {
	// Emoji is the emoji itself, or a custom emoji's name.
	Emoji string
	Count int
	// Bot says Kimi (the bot) reacted with it.
	Bot bool
}

// DemoEmbed is a message embed.
type DemoEmbed struct {
	Title, URL, Description, Author, Footer string
	// Color is the colour bar's "#rrggbb" ("" for none).
	Color  string
	Fields []DemoField
	// Image and Thumbnail are URLs, shown as links.
	Image, Thumbnail string
}

// DemoField is an embed field.
type DemoField struct {
	Name, Value string
	Inline      bool
}

// Kinds of DemoComponent.
const (
	DemoRow       = "row"
	DemoButton    = "button"
	DemoLinkBtn   = "link"
	DemoSelect    = "select"
	DemoText      = "text"
	DemoSeparator = "separator"
	DemoGallery   = "gallery"
	DemoSection   = "section"
	DemoContainer = "container"
	DemoThumbnail = "thumbnail"
	DemoFile      = "file"
	DemoUnknown   = "unknown"
)

// DemoComponent is one message component (classic or Components V2), its children nested.
type DemoComponent struct {
	Kind string
	// Label is a button's (or a link's); Style its Discord style name ("primary", "danger", ...).
	Label, Style, CustomID, URL string
	Disabled                    bool
	// A select menu's options (for a user, role, channel or mentionable menu the demo guild's),
	// placeholder and how many values may be chosen.
	Options     []DemoSelectOption
	Placeholder string
	MinValues   int
	MaxValues   int
	// Content is a text display's; Divider and Large a separator's; Media a gallery's,
	// thumbnail's or file's items; Accent a container's colour ("#rrggbb").
	Content        string
	Divider, Large bool
	Media          []DemoMedia
	Accent         string
	Children       []DemoComponent
	Accessory      *DemoComponent
}

// DemoSelectOption is one option of a select menu.
type DemoSelectOption struct {
	Value, Label, Description string
	Default                   bool
}

// DemoMedia is a gallery item, thumbnail or file: shown as a link.
type DemoMedia struct{ URL, Description string }

// DemoModal is a modal an interaction was answered with, open for the acting member.
type DemoModal struct {
	InteractionID, Title string
	Inputs               []form.DemoTextInput
}

// DemoCommand is one slash command (or subcommand) registered in the demo guild, as its form
// shows it: Path is what follows the slash ("kudos give").
type DemoCommand struct {
	Path, Description string
	Options           []form.DemoOptionSpec
	// Global says it is registered for every guild rather than the demo guild only.
	Global bool
	// Unsendable names a required option the demo cannot send (an attachment): the form is
	// shown disabled.
	Unsendable string
}
