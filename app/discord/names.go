package discord

// Names are the names the bot knows of a guild, a channel and a member of
// that guild ("" for each it does not know, or 0 asked): from the session
// state and the member cache, never from Discord. The admin shows them
// beside the ids it stores.
func (b *Bot) Names(guildID, channelID, userID uint64) (guild, channel, member string) {
	if userID != 0 && guildID != 0 {
		if m, ok := b.cache.Member(guildID, userID); ok {
			member = m.DisplayName
		}
	}
	s, err := b.session()
	if err != nil || s.State == nil {
		return guild, channel, member
	}
	if guildID != 0 {
		if g, err := s.State.Guild(idString(guildID)); err == nil && g != nil {
			s.State.RLock()
			guild = g.Name
			s.State.RUnlock()
		}
	}
	if channelID != 0 {
		if c := stateChannel(s, idString(channelID)); c != nil {
			channel = c.Name
		}
	}
	if member == "" && userID != 0 && guildID != 0 {
		if m := stateMember(s, idString(guildID), idString(userID)); m != nil {
			switch {
			case m.Nick != "":
				member = m.Nick
			case m.User.GlobalName != "":
				member = m.User.GlobalName
			default:
				member = m.User.Username
			}
		}
	}
	return guild, channel, member
}
