package discord

import "context"

// coreResults names the scheduled results' access checks in the actions'
// logs.
const coreResults = "results"

// CanViewChannel reports whether userID can view channelID of guildID and
// read its history now, as the module action of that name does: false for
// a channel of another guild, a non-member or missing permissions (a
// private thread needs membership); an error when the guild is not active
// or Discord is not connected. Core calls it for the scheduled results'
// access check (app/results.DiscordAccess).
func (b *Bot) CanViewChannel(ctx context.Context, guildID, userID, channelID uint64) (bool, error) {
	m := &moduleActions{a: b.act, module: coreResults, log: b.act.log.With("module", coreResults)}
	return m.CanViewChannel(ctx, guildID, userID, channelID)
}

// BotUserID returns the bot's Discord user id (0 until the first READY).
func (b *Bot) BotUserID() uint64 { return b.botID.Load() }
