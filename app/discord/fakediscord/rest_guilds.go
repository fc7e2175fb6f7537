package fakediscord

import (
	"strconv"

	"github.com/bwmarrin/discordgo"
)

func (s *Server) getGuild(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	return 200, s.guildObject(g, false), nil
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
