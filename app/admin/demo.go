package admin

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

// DemoChat is the demo guild of demo mode (`kimi serve --demo`), as the /demo page reads it and
// acts in it. NewDemoChat gives one over the built-in fake Discord.
type DemoChat interface {
	// DemoGuild lists the guild's name, text channels, roles and the members a visitor may act
	// as.
	DemoGuild(ctx context.Context) (DemoGuildView, error)
	// DemoMessages lists a channel's messages, oldest first (at most the latest 100), with the
	// ephemeral responses memberID was shown there ("" for none) in their place.
	DemoMessages(ctx context.Context, channelID, memberID string) ([]DemoMessage, error)
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
	// Watch signals every change of the demo guild (as fakediscord.Server.Watch).
	Watch(ctx context.Context) <-chan struct{}
}

// DemoGuildView is the demo guild's name, text channels, roles and demo members.
type DemoGuildView struct {
	Name     string
	Channels []DemoRef
	Roles    []DemoRef
	Members  []DemoRef
}

// DemoRef names a channel, role or member by id.
type DemoRef struct{ ID, Name string }

// DemoMessage is one message of the chat view.
type DemoMessage = templates.DemoMessage

// ErrDemoUnknown is a channel or member id that is not in the demo guild.
var ErrDemoUnknown = errors.New("admin: not in the demo guild")

// DemoRefusal is an interaction the demo guild refused, in a sentence for the visitor (the
// message is gone, the component or command is not there, a value is not offered, ...).
type DemoRefusal string

func (r DemoRefusal) Error() string { return "admin: demo: " + string(r) }

// NewDemoChat is the DemoChat of a fake Discord seeded with fakediscord.SeedDemo.
func NewDemoChat(f *fakediscord.Server, g fakediscord.DemoGuild) DemoChat {
	return demoFake{f: f, g: g}
}

type demoFake struct {
	f *fakediscord.Server
	g fakediscord.DemoGuild
}

var (
	_ DemoChat  = demoFake{}
	_ io.Closer = demoFake{}
	_ error     = DemoRefusal("")
)

// Close stops the fake Discord.
func (d demoFake) Close() error {
	d.f.Close()
	return nil
}

func (d demoFake) Watch(ctx context.Context) <-chan struct{} { return d.f.Watch(ctx) }

func (d demoFake) DemoGuild(context.Context) (DemoGuildView, error) {
	g := d.f.Guild(d.g.GuildID)
	if g == nil {
		return DemoGuildView{}, fmt.Errorf("admin: demo guild: %w", ErrDemoUnknown)
	}
	v := DemoGuildView{Name: g.Name}
	for _, id := range d.g.Channels {
		for _, c := range g.Channels {
			if c.ID == id {
				v.Channels = append(v.Channels, DemoRef{ID: id, Name: c.Name})
			}
		}
	}
	for _, r := range g.Roles {
		if r.ID != g.ID && !r.Managed {
			v.Roles = append(v.Roles, DemoRef{ID: r.ID, Name: r.Name})
		}
	}
	for _, id := range d.g.Members {
		if m := d.f.Member(d.g.GuildID, id); m != nil && m.User != nil {
			v.Members = append(v.Members, DemoRef{ID: id, Name: m.User.Username})
		}
	}
	return v, nil
}

func (d demoFake) known(ids []string, id string) bool { return slices.Contains(ids, id) }

func (d demoFake) DemoMessages(ctx context.Context, channelID, memberID string) ([]DemoMessage, error) {
	if !d.known(d.g.Channels, channelID) {
		return nil, fmt.Errorf("admin: demo channel %q: %w", channelID, ErrDemoUnknown)
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
	out := make([]DemoMessage, 0, len(all))
	for _, m := range all {
		dm := DemoMessage{ID: m.ID, Content: m.Content, At: m.Timestamp, Edited: m.EditedTimestamp != nil,
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
		out = append(out, dm)
	}
	return out, nil
}

func (d demoFake) DemoModals(_ context.Context, channelID, memberID string) ([]templates.DemoModal, error) {
	if !d.known(d.g.Channels, channelID) {
		return nil, fmt.Errorf("admin: demo channel %q: %w", channelID, ErrDemoUnknown)
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

// demoModal is a modal response as its form shows it: the text inputs of its rows.
func demoModal(id string, data *discordgo.InteractionResponseData) templates.DemoModal {
	m := templates.DemoModal{InteractionID: id, Title: data.Title}
	for _, row := range data.Components {
		ar, ok := row.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		for _, c := range ar.Components {
			ti, ok := c.(*discordgo.TextInput)
			if !ok {
				continue
			}
			m.Inputs = append(m.Inputs, form.DemoTextInput{CustomID: ti.CustomID, Label: ti.Label, Placeholder: ti.Placeholder,
				Value: ti.Value, Paragraph: ti.Style == discordgo.TextInputParagraph, Required: ti.Required,
				MinLength: ti.MinLength, MaxLength: ti.MaxLength})
		}
	}
	return m
}

func (d demoFake) DemoCommands(ctx context.Context) ([]templates.DemoCommand, error) {
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

// demoLeaves flattens a command into the invocations a form can run: itself, or each
// subcommand (in groups too) with its own options.
func demoLeaves(path, desc string, opts []*discordgo.ApplicationCommandOption, g DemoGuildView, global bool) []templates.DemoCommand {
	var out []templates.DemoCommand
	leaf := templates.DemoCommand{Path: path, Description: desc, Global: global}
	for _, o := range opts {
		switch o.Type {
		case discordgo.ApplicationCommandOptionSubCommand, discordgo.ApplicationCommandOptionSubCommandGroup:
			out = append(out, demoLeaves(path+" "+o.Name, o.Description, o.Options, g, global)...)
			continue
		}
		spec := form.DemoOptionSpec{Name: o.Name, Description: o.Description, Type: int(o.Type), Required: o.Required,
			MinValue: o.MinValue, MinLength: derefInt(o.MinLength), MaxLength: o.MaxLength}
		if o.MaxValue != 0 {
			spec.MaxValue = &o.MaxValue
		}
		for _, c := range o.Choices {
			spec.Choices = append(spec.Choices, form.DemoChoice{Name: c.Name, Value: fmt.Sprint(c.Value)})
		}
		switch o.Type {
		case discordgo.ApplicationCommandOptionUser:
			spec.Choices = refChoices(g.Members)
		case discordgo.ApplicationCommandOptionChannel:
			spec.Choices = refChoices(g.Channels, "#")
		case discordgo.ApplicationCommandOptionRole:
			spec.Choices = refChoices(g.Roles, "@")
		case discordgo.ApplicationCommandOptionMentionable:
			spec.Choices = append(refChoices(g.Members), refChoices(g.Roles, "@")...)
		case discordgo.ApplicationCommandOptionAttachment:
			if o.Required {
				leaf.Unsendable = o.Name
			}
		}
		leaf.Options = append(leaf.Options, spec)
	}
	if len(out) > 0 {
		return out
	}
	return []templates.DemoCommand{leaf}
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func refChoices(refs []DemoRef, prefix ...string) []form.DemoChoice {
	p := strings.Join(prefix, "")
	out := make([]form.DemoChoice, 0, len(refs))
	for _, r := range refs {
		out = append(out, form.DemoChoice{Name: p + r.Name, Value: r.ID})
	}
	return out
}

func (d demoFake) PostAsMember(_ context.Context, channelID, memberID, content string) error {
	if !d.known(d.g.Channels, channelID) || !d.known(d.g.Members, memberID) {
		return fmt.Errorf("admin: demo post: %w", ErrDemoUnknown)
	}
	if _, err := d.f.PostMessage(channelID, memberID, content); err != nil {
		return fmt.Errorf("admin: demo post: %w", err)
	}
	return nil
}

func (d demoFake) ClickButton(ctx context.Context, channelID, messageID, memberID, customID string, values []string) error {
	if !d.known(d.g.Channels, channelID) || !d.known(d.g.Members, memberID) {
		return fmt.Errorf("admin: demo click: %w", ErrDemoUnknown)
	}
	msgs, err := d.DemoMessages(ctx, channelID, memberID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(msgs, func(m DemoMessage) bool { return m.ID == messageID })
	if i < 0 {
		return DemoRefusal("That message is no longer in the channel.")
	}
	c := findDemoComponent(msgs[i].Components, customID)
	switch {
	case c == nil:
		return DemoRefusal("That message no longer has this button or menu.")
	case c.Disabled:
		return DemoRefusal("That button or menu is disabled.")
	case c.Kind == templates.DemoButton && len(values) > 0:
		return DemoRefusal("A button sends no values.")
	case c.Kind == templates.DemoSelect:
		if len(values) < c.MinValues || len(values) > c.MaxValues {
			if c.MinValues == c.MaxValues {
				return DemoRefusal(fmt.Sprintf("Choose %d value(s) in this menu.", c.MinValues))
			}
			return DemoRefusal(fmt.Sprintf("Choose between %d and %d values in this menu.", c.MinValues, c.MaxValues))
		}
		for _, v := range values {
			if !slices.ContainsFunc(c.Options, func(o templates.DemoSelectOption) bool { return o.Value == v }) {
				return DemoRefusal("Choose among the menu's options.")
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
		return DemoRefusal("That message is no longer in the channel.")
	case errors.Is(err, fakediscord.ErrUnknownComponent):
		return DemoRefusal("That message no longer has this button or menu.")
	case errors.Is(err, fakediscord.ErrUnknownCommand):
		return DemoRefusal("That command is no longer registered in the demo guild.")
	case errors.Is(err, fakediscord.ErrBadOptions):
		return DemoRefusal("The options no longer match the command; reload the page.")
	case errors.Is(err, fakediscord.ErrNoModal):
		return DemoRefusal("That modal is no longer open.")
	case errors.Is(err, fakediscord.ErrNotMember), errors.Is(err, fakediscord.ErrUnknownUser), errors.Is(err, fakediscord.ErrUnknownChannel):
		return fmt.Errorf("admin: demo %s: %w", what, ErrDemoUnknown)
	}
	return fmt.Errorf("admin: demo %s: %w", what, err)
}

func (d demoFake) RunCommand(_ context.Context, channelID, memberID, path string, values []form.DemoOptionValue) error {
	if !d.known(d.g.Channels, channelID) || !d.known(d.g.Members, memberID) {
		return fmt.Errorf("admin: demo command: %w", ErrDemoUnknown)
	}
	parts := strings.Fields(path)
	if len(parts) == 0 || len(parts) > 3 {
		return DemoRefusal("Choose a command.")
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

func (d demoFake) SubmitModal(ctx context.Context, channelID, memberID, interactionID string, values map[string]string) error {
	modals, err := d.DemoModals(ctx, channelID, memberID)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(modals, func(m templates.DemoModal) bool { return m.InteractionID == interactionID }) {
		return DemoRefusal("That modal is no longer open (it was submitted, or was not shown to this member).")
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
