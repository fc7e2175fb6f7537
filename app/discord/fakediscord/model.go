package fakediscord

import (
	"slices"
	"time"

	"github.com/bwmarrin/discordgo"
)

type guild struct {
	g        *discordgo.Guild // without Channels/Roles/Members: those live below
	roles    []*discordgo.Role
	channels []string
	members  map[string]*discordgo.Member
	morder   []string
	bans     map[string]*discordgo.GuildBan
	audit    []*discordgo.AuditLogEntry
	commands []*discordgo.ApplicationCommand
}

type channel struct {
	c    *discordgo.Channel
	msgs []*discordgo.Message // ascending id
	pins []string
}

// GuildSpec seeds one guild.
type GuildSpec struct {
	ID, Name string
	// OwnerID defaults to the application owner.
	OwnerID string
	// BotPermissions are the bot's permissions, given by a "kimi" role the bot holds. Default:
	// administrator.
	BotPermissions *int64
	// EveryonePermissions are the @everyone role's permissions. Default: view the channels,
	// send messages, read their history and add reactions.
	EveryonePermissions *int64
}

// DefaultEveryonePermissions are a guild's @everyone permissions unless its spec sets them.
const DefaultEveryonePermissions int64 = discordgo.PermissionViewChannel | discordgo.PermissionSendMessages |
	discordgo.PermissionReadMessageHistory | discordgo.PermissionAddReactions

// AddGuild adds a guild with its @everyone role (no permissions beyond viewing and sending)
// and the bot as a member; it is dispatched as GUILD_CREATE to connected sessions.
func (s *Server) AddGuild(spec GuildSpec) *discordgo.Guild {
	s.mu.Lock()
	defer s.mu.Unlock()
	if spec.ID == "" {
		spec.ID = s.newID()
	}
	if spec.Name == "" {
		spec.Name = "guild " + spec.ID
	}
	if spec.OwnerID == "" {
		spec.OwnerID = s.opts.OwnerID
	}
	perms := int64(discordgo.PermissionAdministrator)
	if spec.BotPermissions != nil {
		perms = *spec.BotPermissions
	}
	g := &guild{
		g:       &discordgo.Guild{ID: spec.ID, Name: spec.Name, OwnerID: spec.OwnerID, JoinedAt: s.now().UTC()},
		members: map[string]*discordgo.Member{},
		bans:    map[string]*discordgo.GuildBan{},
	}
	everyone := &discordgo.Role{ID: spec.ID, Name: "@everyone", Permissions: DefaultEveryonePermissions}
	if spec.EveryonePermissions != nil {
		everyone.Permissions = *spec.EveryonePermissions
	}
	botRole := &discordgo.Role{ID: s.newID(), Name: s.opts.BotName, Permissions: perms, Managed: true, Position: 1}
	g.roles = []*discordgo.Role{everyone, botRole}
	s.guilds[spec.ID] = g
	s.gorder = append(s.gorder, spec.ID)
	s.addMemberLocked(g, s.bot, []string{botRole.ID})
	if owner := s.users[spec.OwnerID]; owner != nil {
		s.addMemberLocked(g, owner, nil)
	}
	s.dispatchGuild(spec.ID, "GUILD_CREATE", nil)
	return clone(s.guildObject(g, true))
}

// RemoveGuild removes a guild (the bot was kicked or the guild deleted): GUILD_DELETE.
func (s *Server) RemoveGuild(guildID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guilds[guildID]
	if g == nil {
		return
	}
	s.dispatchGuild(guildID, "GUILD_DELETE", &discordgo.Guild{ID: guildID})
	for _, c := range g.channels {
		delete(s.channels, c)
	}
	delete(s.guilds, guildID)
	s.gorder = slices.DeleteFunc(s.gorder, func(id string) bool { return id == guildID })
}

// ChannelSpec seeds one channel.
type ChannelSpec struct {
	ID, GuildID, Name string
	// Type defaults to a text channel.
	Type discordgo.ChannelType
	// ParentID is the category (or, for a thread, the parent channel).
	ParentID   string
	Overwrites []*discordgo.PermissionOverwrite
}

// AddChannel adds a channel, category or thread to a guild (CHANNEL_CREATE / THREAD_CREATE).
func (s *Server) AddChannel(spec ChannelSpec) *discordgo.Channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guilds[spec.GuildID]
	if g == nil {
		panic("fakediscord: AddChannel: unknown guild " + spec.GuildID)
	}
	if spec.ID == "" {
		spec.ID = s.newID()
	}
	ch := &discordgo.Channel{ID: spec.ID, GuildID: spec.GuildID, Name: spec.Name, Type: spec.Type,
		ParentID: spec.ParentID, PermissionOverwrites: spec.Overwrites, Position: len(g.channels)}
	if ch.Type == discordgo.ChannelTypeGuildPublicThread || ch.Type == discordgo.ChannelTypeGuildPrivateThread || ch.Type == discordgo.ChannelTypeGuildNewsThread {
		ch.ThreadMetadata = &discordgo.ThreadMetadata{ArchiveTimestamp: s.now().UTC(), AutoArchiveDuration: 1440}
		ch.OwnerID = s.opts.BotID
	}
	s.channels[ch.ID] = &channel{c: ch}
	g.channels = append(g.channels, ch.ID)
	event := "CHANNEL_CREATE"
	if ch.IsThread() {
		event = "THREAD_CREATE"
	}
	s.dispatchGuild(spec.GuildID, event, ch)
	return clone(ch)
}

// AddRole adds a role to a guild (GUILD_ROLE_CREATE).
func (s *Server) AddRole(guildID string, role discordgo.Role) *discordgo.Role {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guilds[guildID]
	if g == nil {
		panic("fakediscord: AddRole: unknown guild " + guildID)
	}
	if role.ID == "" {
		role.ID = s.newID()
	}
	r := &role
	insertRole(g, r)
	s.dispatchGuild(guildID, "GUILD_ROLE_CREATE", &discordgo.GuildRole{GuildID: guildID, Role: r})
	return clone(r)
}

// AddUser adds (or replaces) a user the fake knows; members and message authors are users.
func (s *Server) AddUser(u discordgo.User) *discordgo.User {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.ID == "" {
		u.ID = s.newID()
	}
	if u.Discriminator == "" {
		u.Discriminator = "0"
	}
	s.users[u.ID] = &u
	return clone(&u)
}

// AddMember makes a known user a member of a guild without an event (seeding); JoinGuild is the
// user action that dispatches GUILD_MEMBER_ADD.
func (s *Server) AddMember(guildID, userID string, roles ...string) *discordgo.Member {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, u := s.guilds[guildID], s.users[userID]
	if g == nil || u == nil {
		panic("fakediscord: AddMember: unknown guild or user")
	}
	return clone(s.addMemberLocked(g, u, roles))
}

func (s *Server) addMemberLocked(g *guild, u *discordgo.User, roles []string) *discordgo.Member {
	if roles == nil {
		roles = []string{}
	}
	m := &discordgo.Member{GuildID: g.g.ID, User: u, Roles: roles, JoinedAt: s.now().UTC()}
	if _, ok := g.members[u.ID]; !ok {
		g.morder = append(g.morder, u.ID)
	}
	g.members[u.ID] = m
	return m
}

// guildObject is the guild as REST (full=false) or GUILD_CREATE (full=true) shows it.
func (s *Server) guildObject(g *guild, full bool) *discordgo.Guild {
	out := *g.g
	out.Roles = g.roles
	out.MemberCount = len(g.members)
	if full {
		for _, id := range g.channels {
			c := s.channels[id].c
			if c.IsThread() {
				out.Threads = append(out.Threads, c)
			} else {
				out.Channels = append(out.Channels, c)
			}
		}
		for _, id := range g.morder {
			out.Members = append(out.Members, g.members[id])
		}
	}
	return &out
}

// insertRole adds a role at position 1, just above @everyone, as Discord places a new role.
func insertRole(g *guild, r *discordgo.Role) {
	for _, x := range g.roles {
		if x.Position >= 1 {
			x.Position++
		}
	}
	r.Position = 1
	g.roles = append(g.roles, r)
}

func (s *Server) role(g *guild, id string) *discordgo.Role {
	for _, r := range g.roles {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// permissions computes a member's permissions in a channel (ch may be nil for guild-level), as
// Discord does: @everyone, then roles, administrator and owner; then channel overwrites.
func (s *Server) permissions(g *guild, userID string, ch *discordgo.Channel) int64 {
	if g.g.OwnerID == userID {
		return allPermissions
	}
	m := g.members[userID]
	if m == nil {
		return 0
	}
	perms := int64(0)
	if r := s.role(g, g.g.ID); r != nil {
		perms = r.Permissions
	}
	for _, id := range m.Roles {
		if r := s.role(g, id); r != nil {
			perms |= r.Permissions
		}
	}
	if perms&discordgo.PermissionAdministrator != 0 {
		return allPermissions
	}
	if ch == nil {
		return perms
	}
	if ch.IsThread() && ch.ParentID != "" {
		if p := s.channels[ch.ParentID]; p != nil {
			ch = p.c
		}
	}
	var allow, deny int64
	for _, o := range ch.PermissionOverwrites {
		if o.Type == discordgo.PermissionOverwriteTypeRole && o.ID == g.g.ID {
			perms = perms&^o.Deny | o.Allow
		}
	}
	for _, o := range ch.PermissionOverwrites {
		if o.Type == discordgo.PermissionOverwriteTypeRole && o.ID != g.g.ID && slices.Contains(m.Roles, o.ID) {
			allow |= o.Allow
			deny |= o.Deny
		}
	}
	perms = perms&^deny | allow
	for _, o := range ch.PermissionOverwrites {
		if o.Type == discordgo.PermissionOverwriteTypeMember && o.ID == userID {
			perms = perms&^o.Deny | o.Allow
		}
	}
	return perms
}

// botNeeds answers 403 50013 unless the bot has every bit of need in the guild/channel.
func (s *Server) botNeeds(g *guild, ch *discordgo.Channel, need int64) *apiError {
	if s.permissions(g, s.opts.BotID, ch)&need != need {
		return errMissingPermissions
	}
	return nil
}

// lookups for handlers (s.mu held)

func (s *Server) guildOf(id string) (*guild, *apiError) {
	g := s.guilds[id]
	if g == nil {
		return nil, unknown(CodeUnknownGuild, "Guild")
	}
	return g, nil
}

func (s *Server) channelOf(id string) (*channel, *guild, *apiError) {
	c := s.channels[id]
	if c == nil || s.guilds[c.c.GuildID] == nil { // a DM channel is known to the DM routes alone
		return nil, nil, unknown(CodeUnknownChannel, "Channel")
	}
	return c, s.guilds[c.c.GuildID], nil
}

func (c *channel) message(id string) (int, *discordgo.Message) {
	i, ok := slices.BinarySearchFunc(c.msgs, id, func(m *discordgo.Message, id string) int { return cmpID(m.ID, id) })
	if !ok {
		return -1, nil
	}
	return i, c.msgs[i]
}

// cmpID orders snowflakes numerically.
func cmpID(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Guild returns the guild as GUILD_CREATE shows it (channels, roles, members), or nil.
func (s *Server) Guild(id string) *discordgo.Guild {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guilds[id]
	if g == nil {
		return nil
	}
	return clone(s.guildObject(g, true))
}

// Member returns a guild member, or nil.
func (s *Server) Member(guildID, userID string) *discordgo.Member {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guilds[guildID]
	if g == nil || g.members[userID] == nil {
		return nil
	}
	return clone(g.members[userID])
}

// Ban returns a guild ban, or nil.
func (s *Server) Ban(guildID, userID string) *discordgo.GuildBan {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guilds[guildID]
	if g == nil || g.bans[userID] == nil {
		return nil
	}
	return clone(g.bans[userID])
}

// Messages returns a channel's messages, oldest first.
func (s *Server) Messages(channelID string) []*discordgo.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[channelID]
	if c == nil {
		return nil
	}
	return cloneMessages(c.msgs)
}

// Commands returns the registered commands: global for guildID "", else the guild's.
func (s *Server) Commands(guildID string) []*discordgo.ApplicationCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	if guildID == "" {
		return clone(s.global)
	}
	if g := s.guilds[guildID]; g != nil {
		return clone(g.commands)
	}
	return nil
}

// AuditLog returns a guild's audit-log entries, newest first.
func (s *Server) AuditLog(guildID string) []*discordgo.AuditLogEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.guilds[guildID]; g != nil {
		out := clone(g.audit)
		slices.Reverse(out)
		return out
	}
	return nil
}

// addAudit records an audit-log entry by the bot and dispatches GUILD_AUDIT_LOG_ENTRY_CREATE.
func (s *Server) addAudit(g *guild, action discordgo.AuditLogAction, target, reason string) {
	s.addAuditBy(g, s.opts.BotID, action, target, reason)
}

// addAuditBy records an audit log entry of user's.
func (s *Server) addAuditBy(g *guild, user string, action discordgo.AuditLogAction, target, reason string) {
	a := action
	e := &discordgo.AuditLogEntry{ID: s.newID(), TargetID: target, UserID: user, ActionType: &a, Reason: reason}
	g.audit = append(g.audit, e)
	s.dispatchGuild(g.g.ID, "GUILD_AUDIT_LOG_ENTRY_CREATE", struct {
		*discordgo.AuditLogEntry
		GuildID string `json:"guild_id"`
	}{e, g.g.ID})
}

// allPermissions is every permission bit Discord defines (discordgo's PermissionAll misses the
// newer ones, such as moderating members).
const allPermissions int64 = 1<<51 - 1

func ptrTime(t time.Time) *time.Time { return &t }
