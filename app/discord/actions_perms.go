package discord

import (
	"context"
	"net/http"
	"slices"

	"github.com/bwmarrin/discordgo"
)

// canRead is what CanViewChannel requires: viewing the channel and reading
// its history.
const canRead = discordgo.PermissionViewChannel | discordgo.PermissionReadMessageHistory

func (m *moduleActions) CanViewChannel(ctx context.Context, guildID, userID, channelID uint64) (bool, error) {
	s, g, err := m.guild(guildID)
	if err != nil {
		return false, err
	}
	s.State.RLock()
	unavailable := g.Unavailable
	s.State.RUnlock()
	if unavailable {
		// READY's placeholder, before GUILD_CREATE brings its roles and
		// channels: unknown, not a refusal (its permissions would read 0).
		return false, actionError(nil, "guild %d is not available yet", guildID)
	}
	c, err := m.channel(ctx, s, channelID)
	if err != nil {
		return false, err
	}
	if parseID(c.GuildID) != guildID {
		return false, nil
	}
	mem, err := member(ctx, s, guildID, userID)
	if err != nil {
		// Discord did not answer who the member is: unknown, not a refusal.
		return false, actionError(err, "the member %d of guild %d could not be fetched", userID, guildID)
	}
	if mem == nil {
		return false, nil
	}
	base := c
	if isThread(c.Type) && c.ParentID != "" {
		p, err := lookupChannel(ctx, s, parseID(c.ParentID))
		if err != nil || p == nil {
			return false, nil
		}
		base = p
	}
	s.State.RLock()
	perms := channelPermissions(g, base, idString(userID), mem.Roles)
	s.State.RUnlock()
	if perms&canRead != canRead {
		return false, nil
	}
	if c.Type == discordgo.ChannelTypeGuildPrivateThread {
		return m.threadMember(ctx, s, c, userID), nil
	}
	return true, nil
}

// threadMember reports whether userID is a member of the private thread c:
// the state's (c is its copy) bot membership and the thread members it
// learnt from THREAD_MEMBERS_UPDATE, else a REST fetch (404: not a member).
func (m *moduleActions) threadMember(ctx context.Context, s *discordgo.Session, c *discordgo.Channel, userID uint64) bool {
	if botID, _ := m.a.src.self(); botID == userID && c.Member != nil {
		return true
	}
	uid := idString(userID)
	if slices.ContainsFunc(c.Members, func(tm *discordgo.ThreadMember) bool { return tm != nil && tm.UserID == uid }) {
		return true
	}
	var tm *discordgo.ThreadMember
	err := restJSON(ctx, s, http.MethodGet, discordgo.EndpointThreadMember(c.ID, idString(userID)), nil, &tm)
	return err == nil && tm != nil
}

// channelPermissions computes a member's permissions in channel c as Discord
// does: the guild owner has all; @everyone and the member's roles, where
// administrator grants all; then the channel's overwrites: @everyone's, the
// roles' (denies, then allows, combined), the member's own. The state's
// read lock is held.
func channelPermissions(g *discordgo.Guild, c *discordgo.Channel, userID string, roles []string) int64 {
	if g.OwnerID == userID {
		return discordgo.PermissionAll
	}
	var perms int64
	for _, r := range g.Roles {
		if r.ID == g.ID || slices.Contains(roles, r.ID) {
			perms |= r.Permissions
		}
	}
	if perms&discordgo.PermissionAdministrator != 0 {
		return discordgo.PermissionAll
	}
	var allow, deny int64
	for _, o := range c.PermissionOverwrites {
		switch {
		case o.Type == discordgo.PermissionOverwriteTypeRole && o.ID == g.ID:
			perms = perms&^o.Deny | o.Allow
		case o.Type == discordgo.PermissionOverwriteTypeRole && slices.Contains(roles, o.ID):
			allow |= o.Allow
			deny |= o.Deny
		}
	}
	perms = perms&^deny | allow
	for _, o := range c.PermissionOverwrites {
		if o.Type == discordgo.PermissionOverwriteTypeMember && o.ID == userID {
			perms = perms&^o.Deny | o.Allow
		}
	}
	return perms
}
