package templates

import (
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
)

// DemoView is the /demo chat view of demo mode: the demo guild's channels, the open channel's
// messages and the form to post as a demo member.
type DemoView struct {
	GuildName string
	Channels  []DemoLink
	// Channel is the open channel's id and name.
	Channel, ChannelName string
	Members              []DemoLink
	Messages             []DemoMessage
	// Member and Content are the form as submitted (kept when it is refused); Errors by
	// form.FieldDemo* name.
	Member, Content string
	Errors          form.Errors
}

// DemoLink is a channel or member of the demo guild.
type DemoLink struct{ ID, Name string }

// DemoMessage is one message of the chat view.
type DemoMessage struct {
	ID, Author string
	Bot        bool
	Content    string
	At         time.Time
	Embeds     []string
	Buttons    []string
}
