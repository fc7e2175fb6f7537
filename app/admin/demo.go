package admin

import (
	"context"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// DemoChat is the demo guild of demo mode (`kimi serve --demo`), as the /demo page reads it and
// acts in it, in the chat view's types; app/demo's Chat gives one over the built-in fake
// Discord (the admin knows neither it nor the fake). A channel or member id that is not in the
// demo guild is an error wrapping form.ErrDemoUnknown; an interaction the demo guild refuses
// is a form.DemoRefusal, its sentence shown on the form.
type DemoChat interface {
	// DemoGuild lists the guild's name, text channels, roles and the members a visitor may act
	// as.
	DemoGuild(ctx context.Context) (templates.DemoGuild, error)
	// DemoMessages lists a channel's messages, oldest first (at most the latest 100), with the
	// ephemeral responses memberID was shown there ("" for none) in their place.
	DemoMessages(ctx context.Context, channelID, memberID string) ([]templates.DemoMessage, error)
	// DemoModals lists the modals open for memberID in a channel: interactions answered with a
	// modal not yet submitted, oldest first.
	DemoModals(ctx context.Context, channelID, memberID string) ([]templates.DemoModal, error)
	// DemoCommands lists the slash commands registered for the demo guild (its own, then the
	// global ones), a subcommand each on its own.
	DemoCommands(ctx context.Context) ([]templates.DemoCommand, error)
	// PostAsMember posts content in a channel as one of the demo members.
	PostAsMember(ctx context.Context, channelID, memberID, content string) error
	// ClickButton clicks a message's button, or picks values in its select menu, as a member.
	ClickButton(ctx context.Context, channelID, messageID, memberID, customID string, values []string) error
	// RunCommand runs a slash command (path as DemoCommands names it) with checked options.
	RunCommand(ctx context.Context, channelID, memberID, path string, values []form.DemoOptionValue) error
	// SubmitModal submits an open modal as the member it was shown to.
	SubmitModal(ctx context.Context, channelID, memberID, interactionID string, values map[string]string) error
	// Watch signals every change of the demo guild.
	Watch(ctx context.Context) <-chan struct{}
}
