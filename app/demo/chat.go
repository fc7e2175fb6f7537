// Package demo is demo mode's chat (`kimi serve --demo`): Chat adapts the built-in fake
// Discord (app/discord/fakediscord) and its seeded demo guild to what the admin's /demo page
// reads and does — the guild's channels, roles and members, a channel's messages rendered as
// the chat view's types (embeds, components, Components V2 layouts, the acting member's
// ephemeral responses), the open modals and the registered slash commands — and acts in it as
// a demo member: post, click a button or pick in a menu, run a command, submit a modal.
//
// It speaks the admin's vocabulary (web/templates' view types, app/admin/form's options and
// refusals) so that app/admin knows neither discordgo nor the fake: the admin declares the
// interface it needs (admin.DemoChat) and app composes the two. The package does not import
// app/admin (the admin's own tests build a Chat), so the interface guard is in app.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/web/templates"
)

// Chat is the demo guild of a fake Discord seeded with fakediscord.SeedDemo, as the /demo
// page reads it and acts in it.
type Chat struct {
	f *fakediscord.Server
	g fakediscord.DemoGuild
}

var _ io.Closer = (*Chat)(nil)

// NewChat is the chat of fake's demo guild g (what fake.SeedDemo returned).
func NewChat(fake *fakediscord.Server, g fakediscord.DemoGuild) *Chat {
	return &Chat{f: fake, g: g}
}

// Fake is the fake Discord the chat is over.
func (d *Chat) Fake() *fakediscord.Server { return d.f }

// Guild is the seeded demo guild's ids.
func (d *Chat) Guild() fakediscord.DemoGuild { return d.g }

// Close stops the fake Discord.
func (d *Chat) Close() error {
	d.f.Close()
	return nil
}

// Watch signals every change of the demo guild (as fakediscord.Server.Watch).
func (d *Chat) Watch(ctx context.Context) <-chan struct{} { return d.f.Watch(ctx) }

// DemoGuild lists the guild's name, text channels, roles (neither @everyone nor a bot's
// managed role) and the members a visitor may act as.
func (d *Chat) DemoGuild(context.Context) (templates.DemoGuild, error) {
	g := d.f.Guild(d.g.GuildID)
	if g == nil {
		return templates.DemoGuild{}, fmt.Errorf("demo: guild: %w", form.ErrDemoUnknown)
	}
	v := templates.DemoGuild{Name: g.Name}
	for _, id := range d.g.Channels {
		for _, c := range g.Channels {
			if c.ID == id {
				v.Channels = append(v.Channels, templates.DemoLink{ID: id, Name: c.Name})
			}
		}
	}
	for _, r := range g.Roles {
		if r.ID != g.ID && !r.Managed {
			v.Roles = append(v.Roles, templates.DemoLink{ID: r.ID, Name: r.Name})
		}
	}
	for _, id := range d.g.Members {
		if m := d.f.Member(d.g.GuildID, id); m != nil && m.User != nil {
			v.Members = append(v.Members, templates.DemoLink{ID: id, Name: m.User.Username})
		}
	}
	return v, nil
}

func (d *Chat) known(ids []string, id string) bool { return slices.Contains(ids, id) }

// DemoMessages lists a channel's messages, oldest first (at most the latest 100), with the
// ephemeral responses memberID was shown there ("" for none) in their place.
func (d *Chat) DemoMessages(ctx context.Context, channelID, memberID string) ([]templates.DemoMessage, error) {
	if !d.known(d.g.Channels, channelID) {
		return nil, fmt.Errorf("demo: channel %q: %w", channelID, form.ErrDemoUnknown)
	}
	g, err := d.DemoGuild(ctx)
	if err != nil {
		return nil, err
	}
	msgs := d.f.Messages(channelID)
	if len(msgs) > 100 {
		msgs = msgs[len(msgs)-100:]
	}
	var ephemeral []*discordgo.Message
	for _, in := range d.f.Interactions(channelID) {
		if memberID == "" || in.UserID != memberID {
			continue
		}
		for _, m := range append([]*discordgo.Message{in.Original}, in.Followups...) {
			if m != nil && m.Flags&discordgo.MessageFlagsEphemeral != 0 {
				ephemeral = append(ephemeral, m)
			}
		}
	}
	all := append(msgs, ephemeral...)
	slices.SortStableFunc(all, func(a, b *discordgo.Message) int { return cmpSnowflake(a.ID, b.ID) })
	out := make([]templates.DemoMessage, 0, len(all))
	for _, m := range all {
		dm := templates.DemoMessage{ID: m.ID, Content: m.Content, At: m.Timestamp, Edited: m.EditedTimestamp != nil,
			Ephemeral: m.Flags&discordgo.MessageFlagsEphemeral != 0, Loading: m.Flags&discordgo.MessageFlagsLoading != 0}
		if m.Author != nil {
			dm.Author, dm.Bot = m.Author.Username, m.Author.Bot
		}
		if m.Interaction != nil && m.Interaction.Name != "" {
			dm.Command = "/" + m.Interaction.Name
		}
		for _, e := range m.Embeds {
			dm.Embeds = append(dm.Embeds, demoEmbed(e))
		}
		dm.Components = demoComponents(m.Components, g)
		for _, r := range m.Reactions {
			if r == nil || r.Emoji == nil || r.Count <= 0 {
				continue
			}
			dm.Reactions = append(dm.Reactions, templates.DemoReaction{Emoji: r.Emoji.Name, Count: r.Count, Bot: r.Me})
		}
		out = append(out, dm)
	}
	return out, nil
}

// DemoModals lists the modals open for memberID in a channel: interactions answered with a
// modal not yet submitted, oldest first.
func (d *Chat) DemoModals(_ context.Context, channelID, memberID string) ([]templates.DemoModal, error) {
	if !d.known(d.g.Channels, channelID) {
		return nil, fmt.Errorf("demo: channel %q: %w", channelID, form.ErrDemoUnknown)
	}
	var out []templates.DemoModal
	for _, in := range d.f.Interactions(channelID) {
		if in.UserID != memberID || len(in.ModalSubmitIDs) > 0 || in.Response == nil ||
			in.Response.Type != discordgo.InteractionResponseModal || in.Response.Data == nil {
			continue
		}
		out = append(out, demoModal(in.ID, in.Response.Data))
	}
	return out, nil
}

// DemoCommands lists the slash commands registered for the demo guild (its own, then the
// global ones), a subcommand each on its own.
func (d *Chat) DemoCommands(ctx context.Context) ([]templates.DemoCommand, error) {
	g, err := d.DemoGuild(ctx)
	if err != nil {
		return nil, err
	}
	var out []templates.DemoCommand
	for i, list := range [][]*discordgo.ApplicationCommand{d.f.Commands(d.g.GuildID), d.f.Commands("")} {
		for _, c := range list {
			if c.Type != 0 && c.Type != discordgo.ChatApplicationCommand {
				continue
			}
			out = append(out, demoLeaves(c.Name, c.Description, c.Options, g, i == 1)...)
		}
	}
	return out, nil
}

// PostAsMember posts content in a channel as one of the demo members.
func (d *Chat) PostAsMember(_ context.Context, channelID, memberID, content string) error {
	if !d.known(d.g.Channels, channelID) || !d.known(d.g.Members, memberID) {
		return fmt.Errorf("demo: post: %w", form.ErrDemoUnknown)
	}
	if _, err := d.f.PostMessage(channelID, memberID, content); err != nil {
		return fmt.Errorf("demo: post: %w", err)
	}
	return nil
}

// ClickButton clicks a message's button, or picks values in its select menu, as a member. What
// the message does not offer (the message or component gone, a disabled one, values for a
// button, a count or value the menu does not allow) is a form.DemoRefusal, nothing sent.
func (d *Chat) ClickButton(ctx context.Context, channelID, messageID, memberID, customID string, values []string) error {
	if !d.known(d.g.Channels, channelID) || !d.known(d.g.Members, memberID) {
		return fmt.Errorf("demo: click: %w", form.ErrDemoUnknown)
	}
	msgs, err := d.DemoMessages(ctx, channelID, memberID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(msgs, func(m templates.DemoMessage) bool { return m.ID == messageID })
	if i < 0 {
		return form.DemoRefusal("That message is no longer in the channel.")
	}
	c := findDemoComponent(msgs[i].Components, customID)
	switch {
	case c == nil:
		return form.DemoRefusal("That message no longer has this button or menu.")
	case c.Disabled:
		return form.DemoRefusal("That button or menu is disabled.")
	case c.Kind == templates.DemoButton && len(values) > 0:
		return form.DemoRefusal("A button sends no values.")
	case c.Kind == templates.DemoSelect:
		if len(values) < c.MinValues || len(values) > c.MaxValues {
			if c.MinValues == c.MaxValues {
				return form.DemoRefusal(fmt.Sprintf("Choose %d value(s) in this menu.", c.MinValues))
			}
			return form.DemoRefusal(fmt.Sprintf("Choose between %d and %d values in this menu.", c.MinValues, c.MaxValues))
		}
		for _, v := range values {
			if !slices.ContainsFunc(c.Options, func(o templates.DemoSelectOption) bool { return o.Value == v }) {
				return form.DemoRefusal("Choose among the menu's options.")
			}
		}
	}
	if _, err := d.f.ClickButton(channelID, messageID, memberID, customID, values...); err != nil {
		return demoFakeError("click", err)
	}
	return nil
}

// findDemoComponent finds an interactive component (button or select) by custom id.
func findDemoComponent(cs []templates.DemoComponent, customID string) *templates.DemoComponent {
	for i := range cs {
		c := &cs[i]
		if (c.Kind == templates.DemoButton || c.Kind == templates.DemoSelect) && c.CustomID == customID {
			return c
		}
		if f := findDemoComponent(c.Children, customID); f != nil {
			return f
		}
		if c.Accessory != nil {
			if f := findDemoComponent([]templates.DemoComponent{*c.Accessory}, customID); f != nil {
				return f
			}
		}
	}
	return nil
}

// demoFakeError turns the fake's refusals of a user action into sentences.
func demoFakeError(what string, err error) error {
	switch {
	case errors.Is(err, fakediscord.ErrUnknownMessage):
		return form.DemoRefusal("That message is no longer in the channel.")
	case errors.Is(err, fakediscord.ErrUnknownComponent):
		return form.DemoRefusal("That message no longer has this button or menu.")
	case errors.Is(err, fakediscord.ErrUnknownCommand):
		return form.DemoRefusal("That command is no longer registered in the demo guild.")
	case errors.Is(err, fakediscord.ErrBadOptions):
		return form.DemoRefusal("The options no longer match the command; reload the page.")
	case errors.Is(err, fakediscord.ErrNoModal):
		return form.DemoRefusal("That modal is no longer open.")
	case errors.Is(err, fakediscord.ErrNotMember), errors.Is(err, fakediscord.ErrUnknownUser), errors.Is(err, fakediscord.ErrUnknownChannel):
		return fmt.Errorf("demo: %s: %w", what, form.ErrDemoUnknown)
	}
	return fmt.Errorf("demo: %s: %w", what, err)
}

// RunCommand runs a slash command (path as DemoCommands names it: "kudos give") with checked
// options as a member; a subcommand's options are sent inside it, a group's inside the group.
func (d *Chat) RunCommand(_ context.Context, channelID, memberID, path string, values []form.DemoOptionValue) error {
	if !d.known(d.g.Channels, channelID) || !d.known(d.g.Members, memberID) {
		return fmt.Errorf("demo: command: %w", form.ErrDemoUnknown)
	}
	parts := strings.Fields(path)
	if len(parts) == 0 || len(parts) > 3 {
		return form.DemoRefusal("Choose a command.")
	}
	var opts []*discordgo.ApplicationCommandInteractionDataOption
	for _, v := range values {
		opts = append(opts, &discordgo.ApplicationCommandInteractionDataOption{Name: v.Name,
			Type: discordgo.ApplicationCommandOptionType(v.Type), Value: v.Value})
	}
	// A subcommand's options sit inside it, a group's subcommand inside the group.
	for i := len(parts) - 1; i >= 1; i-- {
		t := discordgo.ApplicationCommandOptionSubCommand
		if i < len(parts)-1 {
			t = discordgo.ApplicationCommandOptionSubCommandGroup
		}
		opts = []*discordgo.ApplicationCommandInteractionDataOption{{Name: parts[i], Type: t, Options: opts}}
	}
	if _, err := d.f.RunCommand(channelID, memberID, parts[0], opts...); err != nil {
		return demoFakeError("command", err)
	}
	return nil
}

// SubmitModal submits an open modal as the member it was shown to; a modal that is not open
// for them is a form.DemoRefusal.
func (d *Chat) SubmitModal(ctx context.Context, channelID, memberID, interactionID string, values map[string]string) error {
	modals, err := d.DemoModals(ctx, channelID, memberID)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(modals, func(m templates.DemoModal) bool { return m.InteractionID == interactionID }) {
		return form.DemoRefusal("That modal is no longer open (it was submitted, or was not shown to this member).")
	}
	if _, err := d.f.SubmitModal(interactionID, values); err != nil {
		return demoFakeError("modal", err)
	}
	return nil
}

// cmpSnowflake orders snowflakes numerically.
func cmpSnowflake(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}
