package fakediscord

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/bwmarrin/discordgo"
)

// RestoreMessage puts back into a channel a message an earlier fake held, as it was then: a
// test build whose "Discord" must outlive a kill -9 of its process journals the messages of
// its channels and replays them into the next process's fake before the bot connects
// (cmd/kimi/testdata/assistantkimi). Of m it keeps the ID, ChannelID, Author (by ID: a user
// the fake knows), Content, MessageReference (a message of the same channel, restored before
// it) and Reactions (emoji, Count and Me); the guild, the timestamp (the snowflake's), the
// mentions (resolved from the content) and the referenced message are derived as for a posted
// message. A message of the same id is replaced. No event is dispatched — Discord held the
// message before the session connected — and the ids the fake makes afterwards are greater
// than m's, so none collides with a restored one.
func (s *Server) RestoreMessage(m *discordgo.Message) error {
	n, err := strconv.ParseUint(m.ID, 10, 64)
	if err != nil || n == 0 {
		return fmt.Errorf("fakediscord: restore message: id %q is not a snowflake", m.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[m.ChannelID]
	if ch == nil {
		return fmt.Errorf("fakediscord: restore message %s: %w %s", m.ID, ErrUnknownChannel, m.ChannelID)
	}
	if m.Author == nil || s.users[m.Author.ID] == nil {
		return fmt.Errorf("fakediscord: restore message %s: %w", m.ID, ErrUnknownUser)
	}
	u := s.users[m.Author.ID]
	out := &discordgo.Message{ID: m.ID, ChannelID: ch.c.ID, GuildID: ch.c.GuildID, Author: u, Content: m.Content,
		Timestamp: snowflakeTime(m.ID).UTC(), Embeds: []*discordgo.MessageEmbed{}, Attachments: []*discordgo.MessageAttachment{}}
	if ref := m.MessageReference; ref != nil && ref.MessageID != "" {
		_, r := ch.message(ref.MessageID)
		if r == nil {
			return fmt.Errorf("fakediscord: restore message %s: the reply's %w %s", m.ID, ErrUnknownMessage, ref.MessageID)
		}
		out.Type = discordgo.MessageTypeReply
		out.ReferencedMessage = r
		out.MessageReference = &discordgo.MessageReference{MessageID: r.ID, ChannelID: r.ChannelID, GuildID: r.GuildID}
	}
	for _, r := range m.Reactions {
		if r == nil || r.Emoji == nil || r.Count <= 0 {
			continue
		}
		out.Reactions = append(out.Reactions, &discordgo.MessageReactions{Emoji: &discordgo.Emoji{Name: r.Emoji.Name, ID: r.Emoji.ID},
			Count: r.Count, Me: r.Me})
	}
	if g := s.guilds[ch.c.GuildID]; g != nil && u.ID != s.opts.BotID {
		if mem := g.members[u.ID]; mem != nil {
			out.Member = &discordgo.Member{Roles: mem.Roles, JoinedAt: mem.JoinedAt, Nick: mem.Nick}
		}
	}
	s.resolveMentions(out, nil)
	i, found := slices.BinarySearchFunc(ch.msgs, out.ID, func(x *discordgo.Message, id string) int { return cmpID(x.ID, id) })
	if found {
		ch.msgs[i] = out
	} else {
		ch.msgs = slices.Insert(ch.msgs, i, out)
	}
	if ch.c.LastMessageID == "" || cmpID(ch.c.LastMessageID, out.ID) < 0 {
		ch.c.LastMessageID = out.ID
	}
	s.lastID = max(s.lastID, n)
	s.notify()
	return nil
}
