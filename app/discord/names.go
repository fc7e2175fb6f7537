package discord

// Names are the names the bot knows of a guild, a channel and a member of
// that guild ("" for each it does not know, or 0 asked), read through the
// directory (directory.go): the session state and the member cache, never
// Discord in the request (a member it does not know is fetched in the
// background for the next time). The admin shows them beside the ids it
// stores.
func (b *Bot) Names(guildID, channelID, userID uint64) (guild, channel, member string) {
	if g, ok := b.Guild(guildID); ok {
		guild = g.Name
	}
	if c, ok := b.Channel(channelID); ok {
		channel = c.Name
	}
	if m, ok := b.Member(guildID, userID); ok {
		member = m.DisplayName
	}
	return guild, channel, member
}
