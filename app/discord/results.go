package discord

import (
	"context"

	"github.com/kimiapp/kimi/app/results"
)

// This file is the scheduled results' adapter (app/results): the
// ChannelViews their access check (results.DiscordAccess) asks whether
// the owner and the bot can still view a publication's channels.

// coreResults names the scheduled results' access checks in the actions'
// logs.
const coreResults = "results"

// ChannelViews is the scheduled results' results.ChannelViews over the
// bot.
type ChannelViews struct{ b *Bot }

var _ results.ChannelViews = (*ChannelViews)(nil)

// NewChannelViews returns the scheduled results' adapter over b.
func NewChannelViews(b *Bot) *ChannelViews { return &ChannelViews{b: b} }

// CanViewChannel reports whether userID can view channelID of guildID and
// read its history now, as the module action of that name does: false for
// a channel of another guild, a non-member or missing permissions (a
// private thread needs membership); an error when the guild is not active
// or Discord is not connected.
func (v *ChannelViews) CanViewChannel(ctx context.Context, guildID, userID, channelID uint64) (bool, error) {
	m := &moduleActions{a: v.b.act, module: coreResults, log: v.b.act.log.With("module", coreResults)}
	return m.CanViewChannel(ctx, guildID, userID, channelID)
}

// BotUserID returns the bot's Discord user id (0 until the first READY).
func (v *ChannelViews) BotUserID() uint64 { return v.b.botID.Load() }
