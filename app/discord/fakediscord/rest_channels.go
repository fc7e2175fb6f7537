package fakediscord

import (
	"slices"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"
)

func (s *Server) getGuildChannels(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	out := []*discordgo.Channel{}
	for _, id := range g.channels {
		if ch := s.channels[id].c; !ch.IsThread() {
			out = append(out, ch)
		}
	}
	return 200, out, nil
}

func (s *Server) createGuildChannel(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, nil, discordgo.PermissionManageChannels); err != nil {
		return 0, nil, err
	}
	var b discordgo.GuildChannelCreateData
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if n := runes(b.Name); n < 1 || n > 100 {
		return 0, nil, invalidForm("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
	}
	ch := &discordgo.Channel{ID: s.newID(), GuildID: g.g.ID, Name: b.Name, Type: b.Type, Topic: b.Topic,
		ParentID: b.ParentID, PermissionOverwrites: b.PermissionOverwrites, Position: len(g.channels), NSFW: b.NSFW}
	s.channels[ch.ID] = &channel{c: ch}
	g.channels = append(g.channels, ch.ID)
	s.addAudit(g, discordgo.AuditLogActionChannelCreate, ch.ID, c.reason())
	s.dispatchGuild(g.g.ID, "CHANNEL_CREATE", ch)
	return 201, ch, nil
}

// channel routes

func (s *Server) getChannel(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, ch.c, discordgo.PermissionViewChannel); err != nil {
		return 0, nil, err
	}
	return 200, ch.c, nil
}

func (s *Server) patchChannel(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, ch.c, discordgo.PermissionManageChannels); err != nil {
		return 0, nil, err
	}
	var b struct {
		Name       *string                           `json:"name"`
		Topic      *string                           `json:"topic"`
		Overwrites *[]*discordgo.PermissionOverwrite `json:"permission_overwrites"`
		ParentID   *string                           `json:"parent_id"`
		Archived   *bool                             `json:"archived"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if b.Name != nil {
		if n := runes(*b.Name); n < 1 || n > 100 {
			return 0, nil, invalidForm("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
		}
		ch.c.Name = *b.Name
	}
	if b.Topic != nil {
		if runes(*b.Topic) > 1024 {
			return 0, nil, invalidForm("topic", "BASE_TYPE_MAX_LENGTH", "Must be 1024 or fewer in length.")
		}
		ch.c.Topic = *b.Topic
	}
	if b.Overwrites != nil {
		ch.c.PermissionOverwrites = *b.Overwrites
	}
	if b.ParentID != nil {
		ch.c.ParentID = *b.ParentID
	}
	if b.Archived != nil && ch.c.ThreadMetadata != nil {
		ch.c.ThreadMetadata.Archived = *b.Archived
	}
	s.addAudit(g, discordgo.AuditLogActionChannelUpdate, ch.c.ID, c.reason())
	event := "CHANNEL_UPDATE"
	if ch.c.IsThread() {
		event = "THREAD_UPDATE"
	}
	s.dispatchGuild(g.g.ID, event, ch.c)
	return 200, ch.c, nil
}

func (s *Server) deleteChannel(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	need := int64(discordgo.PermissionManageChannels)
	if ch.c.IsThread() {
		need = discordgo.PermissionManageThreads
	}
	if err := s.botNeeds(g, ch.c, need); err != nil {
		return 0, nil, err
	}
	delete(s.channels, ch.c.ID)
	g.channels = slices.DeleteFunc(g.channels, func(id string) bool { return id == ch.c.ID })
	s.addAudit(g, discordgo.AuditLogActionChannelDelete, ch.c.ID, c.reason())
	event := "CHANNEL_DELETE"
	if ch.c.IsThread() {
		event = "THREAD_DELETE"
	}
	s.dispatchGuild(g.g.ID, event, ch.c)
	return 200, ch.c, nil
}

func (s *Server) startThread(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, ch.c, discordgo.PermissionCreatePublicThreads|discordgo.PermissionViewChannel); err != nil {
		return 0, nil, err
	}
	var b discordgo.ThreadStart
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if n := runes(b.Name); n < 1 || n > 100 {
		return 0, nil, invalidForm("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
	}
	t := b.Type
	if t == 0 {
		t = discordgo.ChannelTypeGuildPrivateThread
	}
	th := &discordgo.Channel{ID: s.newID(), GuildID: g.g.ID, Name: b.Name, Type: t, ParentID: ch.c.ID, OwnerID: s.opts.BotID,
		ThreadMetadata: &discordgo.ThreadMetadata{AutoArchiveDuration: max(b.AutoArchiveDuration, 60), ArchiveTimestamp: s.now().UTC()}}
	s.channels[th.ID] = &channel{c: th}
	g.channels = append(g.channels, th.ID)
	s.dispatchGuild(g.g.ID, "THREAD_CREATE", th)
	return 201, th, nil
}

func (s *Server) createInvite(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, ch.c, discordgo.PermissionCreateInstantInvite); err != nil {
		return 0, nil, err
	}
	var b struct {
		MaxAge  *int `json:"max_age"`
		MaxUses int  `json:"max_uses"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	age := 86400
	if b.MaxAge != nil {
		age = *b.MaxAge
	}
	if age < 0 || age > 604800 {
		return 0, nil, invalidForm("max_age", "NUMBER_TYPE_MAX", "int value should be less than or equal to 604800.")
	}
	if b.MaxUses < 0 || b.MaxUses > 100 {
		return 0, nil, invalidForm("max_uses", "NUMBER_TYPE_MAX", "int value should be less than or equal to 100.")
	}
	code := strconv.FormatUint(s.lastID%1e9+uint64(len(s.invites)), 36) + "fk"
	s.newID()
	inv := &discordgo.Invite{Code: code, Guild: &discordgo.Guild{ID: g.g.ID, Name: g.g.Name}, Channel: &discordgo.Channel{ID: ch.c.ID, Name: ch.c.Name, Type: ch.c.Type},
		Inviter: s.bot, MaxAge: age, MaxUses: b.MaxUses, CreatedAt: s.now().UTC()}
	s.invites[code] = inv
	s.addAudit(g, discordgo.AuditLogActionInviteCreate, code, c.reason())
	s.dispatchGuild(g.g.ID, "INVITE_CREATE", &discordgo.InviteCreate{Invite: inv, ChannelID: ch.c.ID, GuildID: g.g.ID})
	return 200, inv, nil
}

func (s *Server) guildInvites(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, nil, discordgo.PermissionManageGuild); err != nil {
		return 0, nil, err
	}
	out := []*discordgo.Invite{}
	for _, inv := range s.invites {
		if inv.Guild.ID == g.g.ID {
			out = append(out, inv)
		}
	}
	slices.SortFunc(out, func(a, b *discordgo.Invite) int { return strings.Compare(a.Code, b.Code) })
	return 200, out, nil
}

func (s *Server) getInvite(c *call) (int, any, *apiError) {
	inv := s.invites[c.param("code")]
	if inv == nil {
		return 0, nil, unknown(CodeUnknownInvite, "Invite")
	}
	return 200, inv, nil
}

func (s *Server) deleteInvite(c *call) (int, any, *apiError) {
	inv := s.invites[c.param("code")]
	if inv == nil {
		return 0, nil, unknown(CodeUnknownInvite, "Invite")
	}
	g := s.guilds[inv.Guild.ID]
	if g != nil {
		if err := s.botNeeds(g, nil, discordgo.PermissionManageChannels); err != nil {
			return 0, nil, err
		}
		s.addAudit(g, discordgo.AuditLogActionInviteDelete, inv.Code, c.reason())
	}
	delete(s.invites, inv.Code)
	s.dispatchGuild(inv.Guild.ID, "INVITE_DELETE", &discordgo.InviteDelete{ChannelID: inv.Channel.ID, GuildID: inv.Guild.ID, Code: inv.Code})
	return 200, inv, nil
}
