package discord

import (
	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Intents are the operator's choice of Discord's privileged gateway intents
// (Kimi never asks for presences). Both default off: each must also be
// enabled for the application in the developer portal, or Discord closes
// the gateway with 4014.
type Intents struct {
	// Members lets Kimi see members join, leave and change (discord.member_*
	// events, roles at removal) and the full member list.
	Members bool
	// MessageContent lets Kimi read the text, embeds and attachments of
	// messages that neither mention the bot nor are sent to it.
	MessageContent bool
	// DirectMessages (not privileged) carries DMs to the assistant: on
	// when its Direct messages setting answers someone
	// (settings.AssistantBehaviour.WantsDMs), at the next reconnect.
	DirectMessages bool
}

// baseIntents are the non-privileged intents Kimi always identifies with:
// guilds (and their channels and roles), guild messages, reactions, invites
// and moderation (bans and audit-log entries).
const baseIntents = discordgo.IntentGuilds | discordgo.IntentGuildMessages | discordgo.IntentGuildMessageReactions |
	discordgo.IntentGuildInvites | discordgo.IntentGuildModeration

// Gateway returns the intents Kimi identifies with.
func (i Intents) Gateway() discordgo.Intent {
	in := baseIntents
	if i.Members {
		in |= discordgo.IntentGuildMembers
	}
	if i.MessageContent {
		in |= discordgo.IntentMessageContent
	}
	if i.DirectMessages {
		in |= discordgo.IntentDirectMessages
	}
	return in
}

// AdapterCapabilities are the capabilities the Discord adapter provides
// whatever the intents: message history, per-guild commands, modals and
// Components V2 layouts. proposals.v2 and scheduled_results.v1 are added
// by the wiring that has the proposals service and the results outbox
// (app: withServices).
func AdapterCapabilities() []string {
	return []string{sdk.CapDiscordHistory, sdk.CapDiscordGuildCommands, sdk.CapDiscordModals, sdk.CapDiscordComponentsV2}
}

// Capabilities is what the host advertises with these intents: the
// adapter's capabilities plus discord.members.v1 and
// discord.message_content.v1 for the enabled intents.
func (i Intents) Capabilities() sdk.Capabilities {
	names := AdapterCapabilities()
	if i.Members {
		names = append(names, sdk.CapDiscordMembers)
	}
	if i.MessageContent {
		names = append(names, sdk.CapDiscordMessageContent)
	}
	return sdk.NewCapabilities(names, i.Members, i.MessageContent)
}

// IntentInfo describes one privileged intent for the /discord page.
type IntentInfo struct {
	Key        string // "members", "message_content"
	Label      string // "Server members"
	Enables    string // what it lets Kimi see
	Capability string // the module capability it provides
	Portal     string // its name in the developer portal
}

// PrivilegedIntents describes the two privileged intents Kimi may request.
func PrivilegedIntents() []IntentInfo {
	return []IntentInfo{
		{Key: "members", Label: "Server members", Portal: "Server Members Intent", Capability: sdk.CapDiscordMembers,
			Enables: "Members joining, leaving and changing (discord.member_join, discord.member_remove, discord.member_update), their roles at removal, and the full member list."},
		{Key: "message_content", Label: "Message content", Portal: "Message Content Intent", Capability: sdk.CapDiscordMessageContent,
			Enables: "The text, embeds and attachments of every message, not only of those that mention the bot or are sent to it. " +
				"The assistant needs it for reply continuation (an unpinged reply to its answer) and text invocation (hey Kimi, Kimi help); mentions and /ask work without it."},
	}
}

// ModulesNeeding returns the names of the specs whose activation
// capabilities include capability, in the order given.
func ModulesNeeding(specs []sdk.Spec, capability string) []string {
	var out []string
	for _, s := range specs {
		for _, c := range s.ActivationCapabilities {
			if c == capability {
				out = append(out, s.Name)
				break
			}
		}
	}
	return out
}
