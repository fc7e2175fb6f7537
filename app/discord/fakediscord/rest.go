package fakediscord

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

func (s *Server) routes() {
	s.handle("GET", "/gateway", s.getGateway)
	s.handle("GET", "/gateway/bot", s.getGatewayBot)
	s.handle("GET", "/users/@me", func(*call) (int, any, *apiError) { return 200, s.bot, nil })
	s.handle("GET", "/users/{user}", s.getUser)
	s.handle("GET", "/applications/@me", s.getApplication)
	s.handle("GET", "/oauth2/applications/@me", s.getApplication)

	s.handle("GET", "/guilds/{guild}", s.getGuild)
	s.handle("GET", "/guilds/{guild}/channels", s.getGuildChannels)
	s.handle("POST", "/guilds/{guild}/channels", s.createGuildChannel)
	s.handle("GET", "/guilds/{guild}/roles", s.getRoles)
	s.handle("POST", "/guilds/{guild}/roles", s.createRole)
	s.handle("GET", "/guilds/{guild}/members", s.listMembers)
	s.handle("GET", "/guilds/{guild}/members/search", s.searchMembers)
	s.handle("GET", "/guilds/{guild}/members/{user}", s.getMember)
	s.handle("PATCH", "/guilds/{guild}/members/{user}", s.patchMember)
	s.handle("DELETE", "/guilds/{guild}/members/{user}", s.kickMember)
	s.handle("PUT", "/guilds/{guild}/members/{user}/roles/{role}", s.memberRole(true))
	s.handle("DELETE", "/guilds/{guild}/members/{user}/roles/{role}", s.memberRole(false))
	s.handle("GET", "/guilds/{guild}/bans", s.listBans)
	s.handle("GET", "/guilds/{guild}/bans/{user}", s.getBan)
	s.handle("PUT", "/guilds/{guild}/bans/{user}", s.createBan)
	s.handle("DELETE", "/guilds/{guild}/bans/{user}", s.deleteBan)
	s.handle("GET", "/guilds/{guild}/invites", s.guildInvites)
	s.handle("GET", "/guilds/{guild}/audit-logs", s.auditLog)

	s.handle("GET", "/channels/{channel}", s.getChannel)
	s.handle("PATCH", "/channels/{channel}", s.patchChannel)
	s.handle("DELETE", "/channels/{channel}", s.deleteChannel)
	s.handle("POST", "/channels/{channel}/threads", s.startThread)
	s.handle("GET", "/channels/{channel}/messages", s.history)
	s.handle("POST", "/channels/{channel}/messages", s.createMessage)
	s.handle("POST", "/channels/{channel}/messages/bulk-delete", s.bulkDelete)
	s.handle("GET", "/channels/{channel}/messages/{message}", s.getMessage)
	s.handle("PATCH", "/channels/{channel}/messages/{message}", s.editMessage)
	s.handle("DELETE", "/channels/{channel}/messages/{message}", s.deleteMessage)
	s.handle("PUT", "/channels/{channel}/messages/{message}/reactions/{emoji}/@me", s.react(true))
	s.handle("DELETE", "/channels/{channel}/messages/{message}/reactions/{emoji}/@me", s.react(false))
	s.handle("GET", "/channels/{channel}/pins", s.listPins)
	s.handle("PUT", "/channels/{channel}/pins/{message}", s.pin(true))
	s.handle("DELETE", "/channels/{channel}/pins/{message}", s.pin(false))
	s.handle("POST", "/channels/{channel}/invites", s.createInvite)
	s.handle("GET", "/invites/{code}", s.getInvite)
	s.handle("DELETE", "/invites/{code}", s.deleteInvite)

	s.handle("GET", "/applications/{app}/commands", s.getCommands)
	s.handle("PUT", "/applications/{app}/commands", s.overwriteCommands)
	s.handle("GET", "/applications/{app}/guilds/{guild}/commands", s.getCommands)
	s.handle("PUT", "/applications/{app}/guilds/{guild}/commands", s.overwriteCommands)

	s.dmRoutes()
	s.threadRoutes()

	s.handle("POST", "/interactions/{interaction}/{token}/callback", s.interactionCallback)
	s.handle("POST", "/webhooks/{app}/{token}", s.followup)
	s.handle("GET", "/webhooks/{app}/{token}/messages/{message}", s.webhookMessage)
	s.handle("PATCH", "/webhooks/{app}/{token}/messages/{message}", s.webhookEdit)
	s.handle("DELETE", "/webhooks/{app}/{token}/messages/{message}", s.webhookDelete)

	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, "", func(*call) (int, any, *apiError) {
			return 0, nil, &apiError{status: 404, Code: 0, Message: "404: Not Found"}
		})
	})
}

func (s *Server) getGateway(*call) (int, any, *apiError) {
	return 200, map[string]string{"url": s.GatewayURL()}, nil
}

func (s *Server) getGatewayBot(*call) (int, any, *apiError) {
	return 200, map[string]any{"url": s.GatewayURL(), "shards": 1,
		"session_start_limit": map[string]int{"total": 1000, "remaining": 999, "reset_after": 86400000, "max_concurrency": 1}}, nil
}

func (s *Server) getUser(c *call) (int, any, *apiError) {
	u := s.users[c.param("user")]
	if u == nil {
		return 0, nil, unknown(CodeUnknownUser, "User")
	}
	return 200, u, nil
}

func (s *Server) getApplication(*call) (int, any, *apiError) { return 200, s.app, nil }

func (s *Server) getGuild(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	return 200, s.guildObject(g, false), nil
}

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

func (s *Server) getRoles(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	return 200, g.roles, nil
}

func (s *Server) createRole(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, nil, discordgo.PermissionManageRoles); err != nil {
		return 0, nil, err
	}
	var b discordgo.RoleParams
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	r := &discordgo.Role{ID: s.newID(), Name: b.Name}
	if r.Name == "" {
		r.Name = "new role"
	}
	if b.Permissions != nil {
		r.Permissions = *b.Permissions
	}
	if b.Color != nil {
		r.Color = *b.Color
	}
	insertRole(g, r)
	s.addAudit(g, discordgo.AuditLogActionRoleCreate, r.ID, c.reason())
	s.dispatchGuild(g.g.ID, "GUILD_ROLE_CREATE", &discordgo.GuildRole{GuildID: g.g.ID, Role: r})
	return 200, r, nil
}

// reason is the X-Audit-Log-Reason header, URL-decoded as Discord decodes it.
func (c *call) reason() string {
	r := c.r.Header.Get("X-Audit-Log-Reason")
	if d, err := url.PathUnescape(r); err == nil {
		return d
	}
	return r
}

func intQuery(q url.Values, name string, def, lo, hi int) (int, *apiError) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, invalidForm(name, "NUMBER_TYPE_COERCE", "Value \""+v+"\" is not int.")
	}
	if n < lo {
		return 0, invalidForm(name, "NUMBER_TYPE_MIN", "int value should be greater than or equal to "+strconv.Itoa(lo)+".")
	}
	if n > hi {
		return 0, invalidForm(name, "NUMBER_TYPE_MAX", "int value should be less than or equal to "+strconv.Itoa(hi)+".")
	}
	return n, nil
}

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

func (s *Server) auditLog(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, nil, discordgo.PermissionViewAuditLogs); err != nil {
		return 0, nil, err
	}
	q := c.r.URL.Query()
	limit, err := intQuery(q, "limit", 50, 1, 100)
	if err != nil {
		return 0, nil, err
	}
	action, _ := strconv.Atoi(q.Get("action_type"))
	out := &discordgo.GuildAuditLog{AuditLogEntries: []*discordgo.AuditLogEntry{}, Users: []*discordgo.User{}}
	users := map[string]bool{}
	for i := len(g.audit) - 1; i >= 0 && len(out.AuditLogEntries) < limit; i-- {
		e := g.audit[i]
		if (q.Get("user_id") != "" && e.UserID != q.Get("user_id")) || (action != 0 && int(*e.ActionType) != action) ||
			(q.Get("before") != "" && cmpID(e.ID, q.Get("before")) >= 0) {
			continue
		}
		out.AuditLogEntries = append(out.AuditLogEntries, e)
		if !users[e.UserID] && s.users[e.UserID] != nil {
			users[e.UserID] = true
			out.Users = append(out.Users, s.users[e.UserID])
		}
	}
	return 200, out, nil
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

func (s *Server) readableChannel(c *call) (*channel, *guild, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return nil, nil, err
	}
	if err := s.botNeeds(g, ch.c, discordgo.PermissionViewChannel|discordgo.PermissionReadMessageHistory); err != nil {
		return nil, nil, err
	}
	return ch, g, nil
}

func (s *Server) history(c *call) (int, any, *apiError) {
	ch, _, err := s.readableChannel(c)
	if err != nil {
		return 0, nil, err
	}
	q := c.r.URL.Query()
	limit, err := intQuery(q, "limit", 50, 1, MaxMessagesPerFetch)
	if err != nil {
		return 0, nil, err
	}
	before, after, around := q.Get("before"), q.Get("after"), q.Get("around")
	msgs := ch.msgs
	pos := func(id string) int { // first index with msgs[i].ID >= id
		i, _ := slices.BinarySearchFunc(msgs, id, func(m *discordgo.Message, id string) int { return cmpID(m.ID, id) })
		return i
	}
	var sel []*discordgo.Message
	switch {
	case around != "":
		i := pos(around)
		lo := max(i-limit/2, 0)
		hi := min(lo+limit, len(msgs))
		lo = max(hi-limit, 0)
		sel = msgs[lo:hi]
	case before != "":
		i := pos(before)
		sel = msgs[max(i-limit, 0):i]
	case after != "":
		i := pos(after)
		if i < len(msgs) && msgs[i].ID == after {
			i++
		}
		sel = msgs[i:min(i+limit, len(msgs))]
	default:
		sel = msgs[max(len(msgs)-limit, 0):]
	}
	out := slices.Clone(sel)
	slices.Reverse(out) // Discord answers newest first
	return 200, wires(out), nil
}

func (s *Server) getMessage(c *call) (int, any, *apiError) {
	ch, _, err := s.readableChannel(c)
	if err != nil {
		return 0, nil, err
	}
	_, m := ch.message(c.param("message"))
	if m == nil {
		return 0, nil, unknown(CodeUnknownMessage, "Message")
	}
	return 200, wire(m), nil
}

var (
	userMentionRe = regexp.MustCompile(`<@!?(\d+)>`)
	roleMentionRe = regexp.MustCompile(`<@&(\d+)>`)
)

// buildMessage validates a payload and builds the message it creates, from author into ch.
func (s *Server) buildMessage(c *call, ch *channel, author *discordgo.User) (*discordgo.Message, *apiError) {
	var b messageBody
	if err := c.decode(&b); err != nil {
		return nil, err
	}
	if err := validateMessage(&b, len(c.files), true); err != nil {
		return nil, err
	}
	var m discordgo.Message
	if err := json.Unmarshal(c.body, &m); err != nil && len(c.body) > 0 {
		return nil, invalidForm("_errors", "MODEL_TYPE_CONVERT", "Could not interpret the body as JSON.")
	}
	m.ID = s.newID()
	m.ChannelID = ch.c.ID
	m.GuildID = ch.c.GuildID
	m.Author = author
	m.Timestamp = s.now().UTC()
	m.Attachments = nil
	for _, f := range c.files {
		a := *f
		a.ID = s.newID()
		a.URL = s.URL() + "/attachments/" + ch.c.ID + "/" + a.ID + "/" + url.PathEscape(a.Filename)
		a.ProxyURL = a.URL
		m.Attachments = append(m.Attachments, &a)
	}
	if m.Embeds == nil {
		m.Embeds = []*discordgo.MessageEmbed{}
	}
	if b.MessageReference != nil && b.MessageReference.MessageID != "" {
		rc := ch
		if b.MessageReference.ChannelID != "" && b.MessageReference.ChannelID != ch.c.ID {
			rc = s.channels[b.MessageReference.ChannelID]
		}
		var ref *discordgo.Message
		if rc != nil {
			_, ref = rc.message(b.MessageReference.MessageID)
		}
		fail := b.MessageReference.FailIfNotExists == nil || *b.MessageReference.FailIfNotExists
		switch {
		case ref == nil && fail:
			return nil, invalidForm("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
		case ref != nil:
			m.Type = discordgo.MessageTypeReply
			m.ReferencedMessage = ref
			m.MessageReference = &discordgo.MessageReference{MessageID: ref.ID, ChannelID: ref.ChannelID, GuildID: ref.GuildID}
		default:
			m.MessageReference = nil
		}
	}
	s.resolveMentions(&m, b.AllowedMentions)
	return &m, nil
}

// resolveMentions fills the mention fields from the content, as allowed_mentions permits.
func (s *Server) resolveMentions(m *discordgo.Message, am *discordgo.MessageAllowedMentions) {
	allowed := func(kind discordgo.AllowedMentionType, list []string, id string) bool {
		if am == nil {
			return true
		}
		return slices.Contains(am.Parse, kind) || slices.Contains(list, id)
	}
	m.Mentions = []*discordgo.User{}
	m.MentionRoles = []string{}
	for _, sm := range userMentionRe.FindAllStringSubmatch(m.Content, -1) {
		u := s.users[sm[1]]
		if u != nil && (am == nil || allowed(discordgo.AllowedMentionTypeUsers, am.Users, u.ID)) &&
			!slices.ContainsFunc(m.Mentions, func(x *discordgo.User) bool { return x.ID == u.ID }) {
			m.Mentions = append(m.Mentions, u)
		}
	}
	if m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && (am == nil || am.RepliedUser) {
		u := m.ReferencedMessage.Author
		if !slices.ContainsFunc(m.Mentions, func(x *discordgo.User) bool { return x.ID == u.ID }) {
			m.Mentions = append(m.Mentions, u)
		}
	}
	for _, sm := range roleMentionRe.FindAllStringSubmatch(m.Content, -1) {
		var roles []string
		if am != nil {
			roles = am.Roles
		}
		if am == nil || allowed(discordgo.AllowedMentionTypeRoles, roles, sm[1]) {
			m.MentionRoles = append(m.MentionRoles, sm[1])
		}
	}
	if strings.Contains(m.Content, "@everyone") || strings.Contains(m.Content, "@here") {
		m.MentionEveryone = am == nil || slices.Contains(am.Parse, discordgo.AllowedMentionTypeEveryone)
	}
}

func (s *Server) createMessage(c *call) (int, any, *apiError) {
	if dm := s.channels[c.param("channel")]; dm != nil && dm.c.Type == discordgo.ChannelTypeDM {
		return s.dmMessage(c, dm)
	}
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	need := int64(discordgo.PermissionViewChannel | discordgo.PermissionSendMessages)
	if ch.c.IsThread() {
		need = discordgo.PermissionViewChannel | discordgo.PermissionSendMessagesInThreads
	}
	if err := s.botNeeds(g, ch.c, need); err != nil {
		return 0, nil, err
	}
	if len(c.files) > 0 {
		if err := s.botNeeds(g, ch.c, discordgo.PermissionAttachFiles); err != nil {
			return 0, nil, err
		}
	}
	m, err := s.buildMessage(c, ch, s.bot)
	if err != nil {
		return 0, nil, err
	}
	s.storeMessage(ch, m)
	c.created = m
	return 200, wire(m), nil
}

// storeMessage appends a message and dispatches MESSAGE_CREATE.
func (s *Server) storeMessage(ch *channel, m *discordgo.Message) {
	ch.msgs = append(ch.msgs, m)
	ch.c.LastMessageID = m.ID
	s.dispatchMessage("MESSAGE_CREATE", m)
}

// applyEdit applies an edit payload to m (content, embeds, components, flags, attachments).
func (s *Server) applyEdit(c *call, m *discordgo.Message) *apiError {
	var b messageBody
	if err := c.decode(&b); err != nil {
		return err
	}
	if err := validateMessage(&b, len(c.files), false); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(c.body, &fields)
	var edited discordgo.Message
	_ = json.Unmarshal(c.body, &edited)
	if _, ok := fields["content"]; ok {
		m.Content = edited.Content
		s.resolveMentions(m, b.AllowedMentions)
	}
	if _, ok := fields["embeds"]; ok {
		m.Embeds = edited.Embeds
	}
	if _, ok := fields["components"]; ok {
		m.Components = edited.Components
	}
	if _, ok := fields["flags"]; ok {
		m.Flags = edited.Flags
	}
	if _, ok := fields["attachments"]; ok {
		keep := map[string]bool{}
		for _, a := range b.Attachments {
			keep[a.ID] = true
		}
		m.Attachments = slices.DeleteFunc(m.Attachments, func(a *discordgo.MessageAttachment) bool { return !keep[a.ID] })
	}
	for _, f := range c.files {
		a := *f
		a.ID = s.newID()
		m.Attachments = append(m.Attachments, &a)
	}
	m.EditedTimestamp = ptrTime(s.now().UTC())
	return nil
}

func (s *Server) editMessage(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	_, m := ch.message(c.param("message"))
	if m == nil {
		return 0, nil, unknown(CodeUnknownMessage, "Message")
	}
	if m.Author == nil || m.Author.ID != s.opts.BotID {
		return 0, nil, &apiError{status: 403, Code: 50005, Message: "Cannot edit a message authored by another user"}
	}
	if err := s.botNeeds(g, ch.c, discordgo.PermissionViewChannel); err != nil {
		return 0, nil, err
	}
	if err := s.applyEdit(c, m); err != nil {
		return 0, nil, err
	}
	s.dispatchMessage("MESSAGE_UPDATE", m)
	return 200, wire(m), nil
}

func (s *Server) deleteMessage(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	i, m := ch.message(c.param("message"))
	if m == nil {
		return 0, nil, unknown(CodeUnknownMessage, "Message")
	}
	if m.Author == nil || m.Author.ID != s.opts.BotID {
		if err := s.botNeeds(g, ch.c, discordgo.PermissionManageMessages); err != nil {
			return 0, nil, err
		}
		s.addAudit(g, discordgo.AuditLogActionMessageDelete, m.Author.ID, c.reason())
	}
	ch.msgs = slices.Delete(ch.msgs, i, i+1)
	s.dispatchGuild(ch.c.GuildID, "MESSAGE_DELETE", &discordgo.MessageDelete{Message: &discordgo.Message{ID: m.ID, ChannelID: ch.c.ID, GuildID: ch.c.GuildID}})
	return 204, nil, nil
}

func (s *Server) bulkDelete(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, ch.c, discordgo.PermissionManageMessages); err != nil {
		return 0, nil, err
	}
	var b struct {
		Messages []string `json:"messages"`
	}
	if err := c.decode(&b); err != nil {
		return 0, nil, err
	}
	if len(b.Messages) < 2 || len(b.Messages) > 100 {
		return 0, nil, &apiError{status: 400, Code: CodeBulkDeleteCount,
			Message: "You must provide at least 2 and fewer than 100 messages to delete."}
	}
	old := s.now().Add(-14 * 24 * time.Hour)
	for _, id := range b.Messages {
		if snowflakeTime(id).Before(old) {
			return 0, nil, &apiError{status: 400, Code: CodeBulkDeleteTooOld, Message: "You can only bulk delete messages that are under 14 days old."}
		}
	}
	var gone []string
	for _, id := range b.Messages {
		if i, m := ch.message(id); m != nil {
			ch.msgs = slices.Delete(ch.msgs, i, i+1)
			gone = append(gone, id)
		}
	}
	s.addAudit(g, discordgo.AuditLogActionMessageBulkDelete, ch.c.ID, c.reason())
	s.dispatchGuild(ch.c.GuildID, "MESSAGE_DELETE_BULK", &discordgo.MessageDeleteBulk{Messages: gone, ChannelID: ch.c.ID, GuildID: ch.c.GuildID})
	return 204, nil, nil
}

func (s *Server) react(add bool) handler {
	return func(c *call) (int, any, *apiError) {
		ch, g, err := s.readableChannel(c)
		if err != nil {
			return 0, nil, err
		}
		_, m := ch.message(c.param("message"))
		if m == nil {
			return 0, nil, unknown(CodeUnknownMessage, "Message")
		}
		emoji, _ := url.PathUnescape(c.param("emoji"))
		if add {
			if err := s.botNeeds(g, ch.c, discordgo.PermissionAddReactions); err != nil {
				return 0, nil, err
			}
		}
		s.setReaction(m, emoji, s.opts.BotID, add)
		return 204, nil, nil
	}
}

// setReaction adds or removes one user's reaction and dispatches the event.
func (s *Server) setReaction(m *discordgo.Message, emoji, userID string, add bool) {
	name, id, _ := strings.Cut(emoji, ":")
	var r *discordgo.MessageReactions
	for _, x := range m.Reactions {
		if x.Emoji.Name == name {
			r = x
		}
	}
	me := userID == s.opts.BotID
	switch {
	case add && r == nil:
		r = &discordgo.MessageReactions{Emoji: &discordgo.Emoji{Name: name, ID: id}}
		m.Reactions = append(m.Reactions, r)
		fallthrough
	case add:
		r.Count++
		r.Me = r.Me || me
	case r != nil:
		r.Count--
		if me {
			r.Me = false
		}
		if r.Count <= 0 {
			m.Reactions = slices.DeleteFunc(m.Reactions, func(x *discordgo.MessageReactions) bool { return x == r })
		}
	default:
		return
	}
	ev := &discordgo.MessageReaction{UserID: userID, MessageID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID, Emoji: discordgo.Emoji{Name: name, ID: id}}
	if add {
		s.dispatchGuild(m.GuildID, "MESSAGE_REACTION_ADD", ev)
	} else {
		s.dispatchGuild(m.GuildID, "MESSAGE_REACTION_REMOVE", ev)
	}
}

func (s *Server) listPins(c *call) (int, any, *apiError) {
	ch, _, err := s.readableChannel(c)
	if err != nil {
		return 0, nil, err
	}
	out := []*discordgo.Message{}
	for i := len(ch.pins) - 1; i >= 0; i-- {
		if _, m := ch.message(ch.pins[i]); m != nil {
			out = append(out, m)
		}
	}
	return 200, wires(out), nil
}

func (s *Server) pin(add bool) handler {
	return func(c *call) (int, any, *apiError) {
		ch, g, err := s.channelOf(c.param("channel"))
		if err != nil {
			return 0, nil, err
		}
		if err := s.botNeeds(g, ch.c, discordgo.PermissionManageMessages); err != nil {
			return 0, nil, err
		}
		_, m := ch.message(c.param("message"))
		if m == nil {
			return 0, nil, unknown(CodeUnknownMessage, "Message")
		}
		pinned := slices.Contains(ch.pins, m.ID)
		switch {
		case add && !pinned:
			if len(ch.pins) >= 50 {
				return 0, nil, &apiError{status: 400, Code: 30003, Message: "Maximum number of pins reached (50)"}
			}
			ch.pins = append(ch.pins, m.ID)
		case !add && pinned:
			ch.pins = slices.DeleteFunc(ch.pins, func(id string) bool { return id == m.ID })
		}
		m.Pinned = add
		action := discordgo.AuditLogActionMessagePin
		if !add {
			action = discordgo.AuditLogActionMessageUnpin
		}
		s.addAudit(g, action, m.ID, c.reason())
		s.dispatchGuild(g.g.ID, "CHANNEL_PINS_UPDATE", &discordgo.ChannelPinsUpdate{ChannelID: ch.c.ID, GuildID: g.g.ID, LastPinTimestamp: s.now().UTC().Format(time.RFC3339)})
		return 204, nil, nil
	}
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

// commands

func (s *Server) commandList(c *call) (*[]*discordgo.ApplicationCommand, *apiError) {
	if c.param("app") != s.opts.AppID {
		return nil, &apiError{status: 403, Code: 20012, Message: "You are not authorized to perform this action on this application"}
	}
	if gid := c.param("guild"); gid != "" {
		g, err := s.guildOf(gid)
		if err != nil {
			return nil, err
		}
		return &g.commands, nil
	}
	return &s.global, nil
}

func (s *Server) getCommands(c *call) (int, any, *apiError) {
	list, err := s.commandList(c)
	if err != nil {
		return 0, nil, err
	}
	if *list == nil {
		return 200, []*discordgo.ApplicationCommand{}, nil
	}
	return 200, *list, nil
}

func (s *Server) overwriteCommands(c *call) (int, any, *apiError) {
	list, err := s.commandList(c)
	if err != nil {
		return 0, nil, err
	}
	var cmds []*discordgo.ApplicationCommand
	if err := c.decode(&cmds); err != nil {
		return 0, nil, err
	}
	if err := validateCommands(cmds); err != nil {
		return 0, nil, err
	}
	old := map[string]string{}
	for _, o := range *list {
		old[strconv.Itoa(int(o.Type))+"/"+o.Name] = o.ID
	}
	out := make([]*discordgo.ApplicationCommand, 0, len(cmds))
	for _, cmd := range cmds {
		n := *cmd
		if n.Type == 0 {
			n.Type = discordgo.ChatApplicationCommand
		}
		n.ApplicationID = s.opts.AppID
		n.GuildID = c.param("guild")
		if id, ok := old[strconv.Itoa(int(n.Type))+"/"+n.Name]; ok {
			n.ID = id
		} else {
			n.ID = s.newID()
		}
		n.Version = s.newID()
		out = append(out, &n)
	}
	*list = out
	return 200, out, nil
}
