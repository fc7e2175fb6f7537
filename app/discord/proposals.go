package discord

import (
	"context"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
)

// This file is the proposals' adapter (app/proposals): Cards, the
// proposals.Discord port — the review card posted, edited and its buttons
// removed, a DM to the owner, the guild of a channel and the application
// owner — on the port's own (sdk) types. Its requests carry no module
// declaration, but keep the actions' rules: the channel must be in the
// named guild (active, except for the edit of a card already posted),
// nothing pings (allowed_mentions empty), and every request goes through
// Kimi's own transport (restJSON). The card's buttons are core's m:proposals:… custom
// ids, which the interactions route to the handler RegisterCoreHandler
// registered.

// coreProposals is the namespace of the cards' custom ids.
const coreProposals = "proposals"

// Cards is the proposals service's Discord (proposals.Discord) over the
// bot. (app/proposals imports this package for its buttons' handler, so
// the interface guard is in proposals_port_test.go.)
type Cards struct{ b *Bot }

// NewCards returns the proposals' adapter over b.
func NewCards(b *Bot) *Cards { return &Cards{b: b} }

// OwnerID is the application owner (0 until known).
func (cards *Cards) OwnerID() uint64 { return cards.b.OwnerID() }

// ChannelGuild returns the guild of a channel (gateway state, else a
// fetch); 0 with an error for a channel Kimi cannot see or one outside a
// guild.
func (cards *Cards) ChannelGuild(ctx context.Context, channelID uint64) (uint64, error) {
	s, err := cards.b.session()
	if err != nil {
		return 0, err
	}
	c, err := lookupChannel(ctx, s, channelID)
	if err != nil || c == nil || c.GuildID == "" {
		return 0, actionError(err, "channel %d is not in a guild", channelID)
	}
	return parseID(c.GuildID), nil
}

// PostCard sends a core card (an embed and core buttons, custom ids
// m:proposals:<key>:<parts>) to a channel of guildID.
func (cards *Cards) PostCard(ctx context.Context, guildID, channelID uint64, embed *sdk.OutgoingEmbed, buttons []sdk.Component) (sdk.MessageRef, error) {
	m := cards.coreActions()
	s, c, err := m.refChannel(ctx, guildID, channelID)
	if err != nil {
		return sdk.MessageRef{}, err
	}
	e := embedOut(embed, m.a.now())
	if err := checkContent("", e); err != nil {
		return sdk.MessageRef{}, err
	}
	rows, err := componentsOut(coreProposals, buttons, nil)
	if err != nil {
		return sdk.MessageRef{}, err
	}
	data := &discordgo.MessageSend{Components: rows, AllowedMentions: noMentions()}
	if e != nil {
		data.Embeds = []*discordgo.MessageEmbed{e}
	}
	var sent discordgo.Message
	if err := restJSON(ctx, s, http.MethodPost, discordgo.EndpointChannelMessages(idString(channelID)), data, &sent); err != nil {
		m.log.Warn("posting a card failed", "channel", channelID, "err", err)
		return sdk.MessageRef{}, actionError(err, "sending the message failed")
	}
	return sdk.MessageRef{GuildID: guildID, ChannelID: channelID, MessageID: parseID(sent.ID), ParentChannelID: parentOf(c)}, nil
}

// EditCard replaces a card's embed and buttons (no buttons: they are
// removed). The card's channel must be in its guild, active or not: the
// decision being shown may itself have made the guild inactive (a server
// setup with bot_active: false), and the card is core's own message.
func (cards *Cards) EditCard(ctx context.Context, ref sdk.MessageRef, embed *sdk.OutgoingEmbed, buttons []sdk.Component) error {
	m := cards.coreActions()
	s, err := cards.b.session()
	if err != nil {
		return err
	}
	c, err := lookupChannel(ctx, s, ref.ChannelID)
	if err != nil || c == nil || ref.GuildID == 0 || parseID(c.GuildID) != ref.GuildID {
		return actionError(err, "channel %d is not in guild %d", ref.ChannelID, ref.GuildID)
	}
	e := embedOut(embed, m.a.now())
	if err := checkContent("", e); err != nil {
		return err
	}
	rows, err := componentsOut(coreProposals, buttons, nil)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []discordgo.MessageComponent{} // always sent: an empty list removes the buttons
	}
	embeds := []*discordgo.MessageEmbed{}
	if e != nil {
		embeds = append(embeds, e)
	}
	empty := ""
	edit := &discordgo.MessageEdit{Content: &empty, Embeds: &embeds, Components: &rows, AllowedMentions: noMentions()}
	if err := restJSON(ctx, s, http.MethodPatch, discordgo.EndpointChannelMessage(idString(ref.ChannelID), idString(ref.MessageID)), edit, nil); err != nil {
		m.log.Warn("editing a card failed", "channel", ref.ChannelID, "message", ref.MessageID, "err", err)
		return actionError(err, "editing the message failed")
	}
	return nil
}

// SendCoreDM sends a plain DM from core (the proposal notification to the
// owner). It reports whether the DM was delivered, as SendDM does.
func (cards *Cards) SendCoreDM(ctx context.Context, userID uint64, content string) (bool, error) {
	return cards.coreActions().SendDM(ctx, userID, content, nil)
}

// coreActions are the actions' checks under core's name.
func (cards *Cards) coreActions() *moduleActions {
	return &moduleActions{a: cards.b.act, module: coreProposals, log: cards.b.act.log.With("module", coreProposals)}
}
