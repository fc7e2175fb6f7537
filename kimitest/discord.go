package kimitest

import (
	"context"
	"fmt"
	"slices"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// Acting as Discord: each helper goes through the fake's real protocol
// (the gateway dispatch the bot receives, the REST state it reads) and
// fails the test on an error.

// Post posts content in a channel as m: MESSAGE_CREATE to the bot.
func (a *Appliance) Post(channelID string, m Member, content string) *discordgo.Message {
	a.t.Helper()
	msg, err := a.Discord().PostMessage(channelID, m.ID, content)
	if err != nil {
		a.t.Fatalf("kimitest: %s posts in %s: %v", m.Username, channelID, err)
	}
	return msg
}

// Mention posts "@Kimi text" as m: the assistant answers it (Model
// scripts the model it asks).
func (a *Appliance) Mention(channelID string, m Member, text string) *discordgo.Message {
	a.t.Helper()
	return a.Post(channelID, m, "<@"+a.BotID()+"> "+text)
}

// Reply posts content as m in reply to the message replyTo.
func (a *Appliance) Reply(channelID string, m Member, content, replyTo string) *discordgo.Message {
	a.t.Helper()
	msg, err := a.Discord().PostReply(channelID, m.ID, content, replyTo)
	if err != nil {
		a.t.Fatalf("kimitest: %s replies in %s: %v", m.Username, channelID, err)
	}
	return msg
}

// Edit edits a member's message (MESSAGE_UPDATE).
func (a *Appliance) Edit(channelID, messageID, content string) {
	a.t.Helper()
	if err := a.Discord().EditAsUser(channelID, messageID, content); err != nil {
		a.t.Fatalf("kimitest: edit %s: %v", messageID, err)
	}
}

// Delete deletes a member's message (MESSAGE_DELETE).
func (a *Appliance) Delete(channelID, messageID string) {
	a.t.Helper()
	if err := a.Discord().DeleteAsUser(channelID, messageID); err != nil {
		a.t.Fatalf("kimitest: delete %s: %v", messageID, err)
	}
}

// BulkDelete deletes messages of a channel at once, as a moderation tool
// acting for m purges them (MESSAGE_DELETE_BULK, one event for all of
// them, with an audit log entry naming m). Discord's limits hold: 2 to
// 100 messages, none named twice, none older than 14 days.
func (a *Appliance) BulkDelete(channelID string, m Member, messageIDs ...string) {
	a.t.Helper()
	if err := a.Discord().BulkDeleteAsUser(channelID, m.ID, messageIDs); err != nil {
		a.t.Fatalf("kimitest: bulk delete %v: %v", messageIDs, err)
	}
}

// React adds m's reaction to a message (MESSAGE_REACTION_ADD).
func (a *Appliance) React(channelID, messageID string, m Member, emoji string) {
	a.t.Helper()
	if err := a.Discord().React(channelID, messageID, m.ID, emoji); err != nil {
		a.t.Fatalf("kimitest: %s reacts to %s: %v", m.Username, messageID, err)
	}
}

// Join adds m to the seeded guild (GUILD_MEMBER_ADD).
func (a *Appliance) Join(m Member) {
	a.t.Helper()
	if _, err := a.Discord().JoinGuild(GuildID, m.ID); err != nil {
		a.t.Fatalf("kimitest: %s joins: %v", m.Username, err)
	}
}

// JoinWithInvite adds m to the seeded guild through an invite's code (its
// use count goes up, GUILD_MEMBER_ADD).
func (a *Appliance) JoinWithInvite(m Member, code string) {
	a.t.Helper()
	if _, err := a.Discord().JoinWithInvite(GuildID, m.ID, code); err != nil {
		a.t.Fatalf("kimitest: %s joins with %s: %v", m.Username, code, err)
	}
}

// Leave removes m from the seeded guild (GUILD_MEMBER_REMOVE).
func (a *Appliance) Leave(m Member) {
	a.t.Helper()
	if err := a.Discord().LeaveGuild(GuildID, m.ID); err != nil {
		a.t.Fatalf("kimitest: %s leaves: %v", m.Username, err)
	}
}

// Command runs a slash command as m in a channel and returns the
// interaction's id (WaitResponse waits for the answer). Options are typed
// as Discord sends them: StringOption, IntOption, BoolOption, UserOption.
//
// A module's commands are synced to Discord after the appliance is
// ready: Command first waits until name is registered.
func (a *Appliance) Command(channelID string, m Member, name string, options ...*discordgo.ApplicationCommandInteractionDataOption) string {
	a.t.Helper()
	a.waitFor("the command /"+name+" registered", func() bool {
		return slices.ContainsFunc(append(a.Discord().Commands(GuildID), a.Discord().Commands("")...), func(c *discordgo.ApplicationCommand) bool {
			return c.Name == name
		})
	})
	id, err := a.Discord().RunCommand(channelID, m.ID, name, options...)
	if err != nil {
		a.t.Fatalf("kimitest: %s runs /%s: %v", m.Username, name, err)
	}
	return id
}

// Click clicks a button (or picks values in a select menu) of a message
// as m and returns the interaction's id.
func (a *Appliance) Click(channelID, messageID string, m Member, customID string, values ...string) string {
	a.t.Helper()
	id, err := a.Discord().ClickButton(channelID, messageID, m.ID, customID, values...)
	if err != nil {
		a.t.Fatalf("kimitest: %s clicks %s: %v", m.Username, customID, err)
	}
	return id
}

// Pick picks values in a select menu of a message as m (a component
// interaction with those values, as Click with values) and returns the
// interaction's id.
func (a *Appliance) Pick(channelID, messageID string, m Member, customID string, values ...string) string {
	a.t.Helper()
	if len(values) == 0 {
		a.t.Fatalf("kimitest: %s picks nothing in %s: a select needs at least one value", m.Username, customID)
	}
	return a.Click(channelID, messageID, m, customID, values...)
}

// SubmitModal submits the modal an interaction opened, with its inputs'
// values by their keys (sdk.TextInputSpec.Key, the inputs' custom ids), and
// returns the submit's interaction id.
func (a *Appliance) SubmitModal(interactionID string, values map[string]string) string {
	a.t.Helper()
	id, err := a.Discord().SubmitModal(interactionID, values)
	if err != nil {
		a.t.Fatalf("kimitest: submit the modal of %s: %v", interactionID, err)
	}
	return id
}

// StringOption, IntOption, BoolOption and UserOption are a slash
// command's typed options.
func StringOption(name, value string) *discordgo.ApplicationCommandInteractionDataOption {
	return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionString, Value: value}
}

// IntOption is an integer option.
func IntOption(name string, value int) *discordgo.ApplicationCommandInteractionDataOption {
	return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionInteger, Value: float64(value)}
}

// BoolOption is a boolean option.
func BoolOption(name string, value bool) *discordgo.ApplicationCommandInteractionDataOption {
	return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionBoolean, Value: value}
}

// UserOption is a user option (m's id).
func UserOption(name string, m Member) *discordgo.ApplicationCommandInteractionDataOption {
	return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionUser, Value: m.ID}
}

// Messages is a channel's messages as Discord holds them now, oldest first.
func (a *Appliance) Messages(channelID string) []*discordgo.Message {
	return a.Discord().Messages(channelID)
}

// WaitMessage waits for a message the bot sent to a channel that match
// accepts (nil: any) and returns the oldest such message, as it is now
// (edits included; one sent before the call counts too); it fails the
// test past the wait.
func (a *Appliance) WaitMessage(channelID string, match func(*discordgo.Message) bool) *discordgo.Message {
	a.t.Helper()
	bot := a.BotID()
	var found *discordgo.Message
	a.waitFor(fmt.Sprintf("a message from the bot in %s", channelID), func() bool {
		msgs := a.Messages(channelID)
		i := slices.IndexFunc(msgs, func(m *discordgo.Message) bool {
			return m.Author != nil && m.Author.ID == bot && (match == nil || match(m))
		})
		if i >= 0 {
			found = msgs[i]
		}
		return found != nil
	})
	return found
}

// WaitResponse waits until the bot answered an interaction (its first
// callback: a message, a deferral, a modal or an update) and returns the
// interaction as it is then.
func (a *Appliance) WaitResponse(interactionID string) *fakediscord.InteractionState {
	a.t.Helper()
	var st *fakediscord.InteractionState
	a.waitFor("the answer to interaction "+interactionID, func() bool {
		st = a.Discord().Interaction(interactionID)
		return st != nil && st.Response != nil
	})
	return st
}

// WaitFor waits until cond holds, re-checking it after every change the
// fake Discord sees or records (its Requests and GatewayStats included),
// every request the model gets and every change of a module's state or
// health (as /modules shows them) — never on a timer — and fails the test
// past the wait. A condition on something else (a module's table) is
// re-checked only when one of those changes too: wait for what the module
// sends or reports.
func (a *Appliance) WaitFor(what string, cond func() bool) {
	a.t.Helper()
	a.waitFor(what, cond)
}

func (a *Appliance) waitFor(what string, cond func() bool) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), a.o.wait)
	defer cancel()
	// Both watches begin before the first check: no change is missed.
	discord := a.Discord().Watch(ctx)
	var modules, model <-chan struct{}
	if h := a.services().Host; h != nil {
		modules = h.Watch(ctx)
	}
	if m := a.Model(); m != nil {
		model = m.Watch(ctx)
	}
	for !cond() {
		select {
		case _, ok := <-discord:
			if !ok {
				a.t.Fatalf("kimitest: %s did not happen within %s", what, a.o.wait)
			}
		case _, ok := <-modules:
			if !ok {
				modules = nil // closed with ctx: the discord case reports it
			}
		case _, ok := <-model:
			if !ok {
				model = nil
			}
		}
	}
}

// CreateInvite creates an invite to a channel of the seeded guild, as a
// member with the permission would (INVITE_CREATE), and returns its code.
func (a *Appliance) CreateInvite(channelID string, maxUses int) string {
	a.t.Helper()
	inv, err := a.Discord().Session().ChannelInviteCreate(channelID, discordgo.Invite{MaxUses: maxUses})
	if err != nil {
		a.t.Fatalf("kimitest: create an invite to %s: %v", channelID, err)
	}
	return inv.Code
}

// DeleteInvite deletes an invite (INVITE_DELETE).
func (a *Appliance) DeleteInvite(code string) {
	a.t.Helper()
	if _, err := a.Discord().Session().InviteDelete(code); err != nil {
		a.t.Fatalf("kimitest: delete the invite %s: %v", code, err)
	}
}

// SubCommand is a subcommand of a command group (e.g. /kudos give) with
// its own options.
func SubCommand(name string, options ...*discordgo.ApplicationCommandInteractionDataOption) *discordgo.ApplicationCommandInteractionDataOption {
	return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionSubCommand, Options: options}
}

// ChannelOption is a channel option (the channel's id).
func ChannelOption(name, channelID string) *discordgo.ApplicationCommandInteractionDataOption {
	return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: discordgo.ApplicationCommandOptionChannel, Value: channelID}
}
