package fakediscord

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

func (s *Server) memberOf(c *call) (*guild, *discordgo.Member, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return nil, nil, err
	}
	m := g.members[c.param("user")]
	if m == nil {
		return g, nil, unknown(CodeUnknownMember, "Member")
	}
	return g, m, nil
}

func (s *Server) getMember(c *call) (int, any, *apiError) {
	_, m, err := s.memberOf(c)
	if err != nil {
		return 0, nil, err
	}
	return 200, m, nil
}

func (s *Server) listMembers(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	limit, err := intQuery(c.r.URL.Query(), "limit", 1, 1, 1000)
	if err != nil {
		return 0, nil, err
	}
	after := c.r.URL.Query().Get("after")
	ids := slices.Clone(g.morder)
	slices.SortFunc(ids, cmpID)
	out := []*discordgo.Member{}
	for _, id := range ids {
		if after != "" && cmpID(id, after) <= 0 {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, g.members[id])
	}
	return 200, out, nil
}

func (s *Server) searchMembers(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	q := c.r.URL.Query()
	if _, ok := q["query"]; !ok {
		return 0, nil, invalidForm("query", "BASE_TYPE_REQUIRED", "This field is required")
	}
	limit, err := intQuery(q, "limit", 1, 1, 1000)
	if err != nil {
		return 0, nil, err
	}
	needle := strings.ToLower(q.Get("query"))
	out := []*discordgo.Member{}
	for _, id := range g.morder {
		m := g.members[id]
		if strings.HasPrefix(strings.ToLower(m.User.Username), needle) || (m.Nick != "" && strings.HasPrefix(strings.ToLower(m.Nick), needle)) {
			out = append(out, m)
			if len(out) == limit {
				break
			}
		}
	}
	return 200, out, nil
}

// outranks says whether the bot may act on target (owner and higher roles are out of reach).
func (s *Server) outranks(g *guild, target *discordgo.Member) bool {
	if target.User.ID == g.g.OwnerID {
		return false
	}
	top := func(m *discordgo.Member) int {
		best := 0
		for _, id := range m.Roles {
			if r := s.role(g, id); r != nil && r.Position > best {
				best = r.Position
			}
		}
		return best
	}
	return top(g.members[s.opts.BotID]) > top(target)
}

func (s *Server) patchMember(c *call) (int, any, *apiError) {
	g, m, err := s.memberOf(c)
	if err != nil {
		return 0, nil, err
	}
	var b struct {
		Nick    *string          `json:"nick"`
		Roles   *[]string        `json:"roles"`
		Timeout *json.RawMessage `json:"communication_disabled_until"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if b.Nick != nil {
		if err := s.botNeeds(g, nil, discordgo.PermissionManageNicknames); err != nil {
			return 0, nil, err
		}
		m.Nick = *b.Nick
	}
	if b.Roles != nil {
		if err := s.botNeeds(g, nil, discordgo.PermissionManageRoles); err != nil {
			return 0, nil, err
		}
		for _, id := range *b.Roles {
			if s.role(g, id) == nil {
				return 0, nil, unknown(CodeUnknownRole, "Role")
			}
		}
		m.Roles = slices.Clone(*b.Roles)
	}
	if b.Timeout != nil {
		if err := s.botNeeds(g, nil, discordgo.PermissionModerateMembers); err != nil {
			return 0, nil, err
		}
		if !s.outranks(g, m) || s.permissions(g, m.User.ID, nil)&discordgo.PermissionAdministrator != 0 {
			return 0, nil, errMissingPermissions
		}
		var until *time.Time
		if err := json.Unmarshal(*b.Timeout, &until); err != nil {
			return 0, nil, invalidForm("communication_disabled_until", "DATE_TYPE_PARSE", "Could not parse "+string(*b.Timeout)+". Should be ISO8601.")
		}
		if until != nil && until.After(s.now().Add(28*24*time.Hour)) {
			return 0, nil, invalidForm("communication_disabled_until", "COMMUNICATION_DISABLED_UNTIL_TOO_LONG", "Timeout can be at most 28 days")
		}
		m.CommunicationDisabledUntil = until
	}
	s.addAudit(g, discordgo.AuditLogActionMemberUpdate, m.User.ID, c.reason())
	s.dispatchGuild(g.g.ID, "GUILD_MEMBER_UPDATE", m)
	return 200, m, nil
}

func (s *Server) kickMember(c *call) (int, any, *apiError) {
	g, m, err := s.memberOf(c)
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, nil, discordgo.PermissionKickMembers); err != nil {
		return 0, nil, err
	}
	if !s.outranks(g, m) {
		return 0, nil, errMissingPermissions
	}
	s.removeMember(g, m.User.ID)
	s.addAudit(g, discordgo.AuditLogActionMemberKick, m.User.ID, c.reason())
	return 204, nil, nil
}

func (s *Server) removeMember(g *guild, userID string) {
	m := g.members[userID]
	delete(g.members, userID)
	g.morder = slices.DeleteFunc(g.morder, func(id string) bool { return id == userID })
	s.dispatchGuild(g.g.ID, "GUILD_MEMBER_REMOVE", &discordgo.GuildMemberRemove{Member: &discordgo.Member{GuildID: g.g.ID, User: m.User}})
}

func (s *Server) memberRole(add bool) handler {
	return func(c *call) (int, any, *apiError) {
		g, m, err := s.memberOf(c)
		if err != nil {
			return 0, nil, err
		}
		rid := c.param("role")
		if s.role(g, rid) == nil {
			return 0, nil, unknown(CodeUnknownRole, "Role")
		}
		if err := s.botNeeds(g, nil, discordgo.PermissionManageRoles); err != nil {
			return 0, nil, err
		}
		has := slices.Contains(m.Roles, rid)
		switch {
		case add && !has:
			m.Roles = append(m.Roles, rid)
		case !add && has:
			m.Roles = slices.DeleteFunc(m.Roles, func(id string) bool { return id == rid })
		}
		s.addAudit(g, discordgo.AuditLogActionMemberRoleUpdate, m.User.ID, c.reason())
		s.dispatchGuild(g.g.ID, "GUILD_MEMBER_UPDATE", m)
		return 204, nil, nil
	}
}

func (s *Server) listBans(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, nil, discordgo.PermissionBanMembers); err != nil {
		return 0, nil, err
	}
	out := []*discordgo.GuildBan{}
	for _, b := range g.bans {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *discordgo.GuildBan) int { return cmpID(a.User.ID, b.User.ID) })
	return 200, out, nil
}

func (s *Server) getBan(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	b := g.bans[c.param("user")]
	if b == nil {
		return 0, nil, unknown(CodeUnknownBan, "Ban")
	}
	return 200, b, nil
}

func (s *Server) createBan(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	u := s.users[c.param("user")]
	if u == nil {
		return 0, nil, unknown(CodeUnknownUser, "User")
	}
	if err := s.botNeeds(g, nil, discordgo.PermissionBanMembers); err != nil {
		return 0, nil, err
	}
	if m := g.members[u.ID]; m != nil && !s.outranks(g, m) {
		return 0, nil, errMissingPermissions
	}
	var b struct {
		Seconds *int `json:"delete_message_seconds"`
		Days    *int `json:"delete_message_days"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	seconds := 0
	if b.Seconds != nil {
		seconds = *b.Seconds
		if seconds < 0 || seconds > 604800 {
			return 0, nil, invalidForm("delete_message_seconds", "NUMBER_TYPE_MAX", "int value should be less than or equal to 604800.")
		}
	} else if days := c.r.URL.Query().Get("delete_message_days"); days != "" || b.Days != nil {
		n, _ := strconv.Atoi(days)
		if b.Days != nil {
			n = *b.Days
		}
		if n < 0 || n > 7 {
			return 0, nil, invalidForm("delete_message_days", "NUMBER_TYPE_MAX", "int value should be less than or equal to 7.")
		}
		seconds = n * 86400
	}
	reason := c.reason()
	if reason == "" {
		reason = c.r.URL.Query().Get("reason")
	}
	g.bans[u.ID] = &discordgo.GuildBan{User: u, Reason: reason}
	if g.members[u.ID] != nil {
		s.removeMember(g, u.ID)
	}
	if seconds > 0 {
		cut := s.now().Add(-time.Duration(seconds) * time.Second)
		for _, cid := range g.channels {
			ch := s.channels[cid]
			var gone []string
			ch.msgs = slices.DeleteFunc(ch.msgs, func(m *discordgo.Message) bool {
				del := m.Author != nil && m.Author.ID == u.ID && !snowflakeTime(m.ID).Before(cut)
				if del {
					gone = append(gone, m.ID)
				}
				return del
			})
			if len(gone) > 0 {
				s.dispatchGuild(g.g.ID, "MESSAGE_DELETE_BULK", &discordgo.MessageDeleteBulk{Messages: gone, ChannelID: cid, GuildID: g.g.ID})
			}
		}
	}
	s.addAudit(g, discordgo.AuditLogActionMemberBanAdd, u.ID, reason)
	s.dispatchGuild(g.g.ID, "GUILD_BAN_ADD", &discordgo.GuildBanAdd{User: u, GuildID: g.g.ID})
	return 204, nil, nil
}

func (s *Server) deleteBan(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, nil, discordgo.PermissionBanMembers); err != nil {
		return 0, nil, err
	}
	b := g.bans[c.param("user")]
	if b == nil {
		return 0, nil, unknown(CodeUnknownBan, "Ban")
	}
	delete(g.bans, b.User.ID)
	s.addAudit(g, discordgo.AuditLogActionMemberBanRemove, b.User.ID, c.reason())
	s.dispatchGuild(g.g.ID, "GUILD_BAN_REMOVE", &discordgo.GuildBanRemove{User: b.User, GuildID: g.g.ID})
	return 204, nil, nil
}
