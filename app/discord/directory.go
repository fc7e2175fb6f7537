package discord

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
)

// The directory: what the admin shows instead of ids, and the lists its
// pickers offer. Every lookup reads the session state and Kimi's member
// cache, never Discord; a member the bot does not know starts at most one
// background fetch (memberFetches), whose answer is in the cache for the
// next render.

// GuildInfo is a guild the bot is in.
type GuildInfo struct {
	ID      uint64
	Name    string
	IconURL string // "" without an icon
}

// ChannelInfo is a guild channel or thread. Category is the name of the
// category it is in ("" outside one; a thread's is its parent's).
type ChannelInfo struct {
	ID, GuildID, ParentID uint64
	Name, Category        string
	Type                  discordgo.ChannelType
	// Text is a channel messages can be posted in (text, announcement,
	// thread, voice chat), not a category, forum or stage.
	Text     bool
	Position int
}

// RoleInfo is a guild role. Color is 0xRRGGBB (0: none).
type RoleInfo struct {
	ID       uint64
	Name     string
	Color    int
	Position int
	Managed  bool
}

// MemberInfo is a guild member: the name shown in the guild (nickname,
// else global name, else username) and the username ("" when the shown
// name is the username).
type MemberInfo struct {
	ID          uint64
	DisplayName string
	Username    string
}

// memberFetchTimeout bounds a background member fetch.
const memberFetchTimeout = 10 * time.Second

// maxMemberFetches bounds the member fetches in flight: past it a miss
// fetches nothing (the next render asks again).
const maxMemberFetches = 8

// memberFetches are the members being fetched in the background.
type memberFetches struct {
	mu       sync.Mutex
	inflight map[memberKey]bool
}

// stateGuild returns the connected session and guild id from its state
// (nil, nil when not connected or unknown); the caller takes the state's
// read lock to read the guild.
func (b *Bot) stateGuild(id uint64) (*discordgo.Session, *discordgo.Guild) {
	s, err := b.session()
	if err != nil || s.State == nil || id == 0 {
		return nil, nil
	}
	g, err := s.State.Guild(idString(id))
	if err != nil || g == nil {
		return nil, nil
	}
	return s, g
}

// Guild returns the guild id as the bot knows it.
func (b *Bot) Guild(id uint64) (GuildInfo, bool) {
	s, g := b.stateGuild(id)
	if g == nil {
		return GuildInfo{}, false
	}
	s.State.RLock()
	defer s.State.RUnlock()
	info := GuildInfo{ID: id, Name: g.Name}
	if g.Icon != "" {
		info.IconURL = discordgo.EndpointGuildIcon(g.ID, g.Icon)
	}
	return info, info.Name != ""
}

// Channel returns the channel or thread id as the bot knows it.
func (b *Bot) Channel(id uint64) (ChannelInfo, bool) {
	s, err := b.session()
	if err != nil || s.State == nil || id == 0 {
		return ChannelInfo{}, false
	}
	c, err := s.State.Channel(idString(id))
	if err != nil || c == nil {
		return ChannelInfo{}, false
	}
	s.State.RLock()
	defer s.State.RUnlock()
	return channelInfo(s.State, c), true
}

// channelInfo reads c with its category's name; the state's read lock is
// held.
func channelInfo(st *discordgo.State, c *discordgo.Channel) ChannelInfo {
	info := ChannelInfo{ID: parseID(c.ID), GuildID: parseID(c.GuildID), ParentID: parseID(c.ParentID), Name: c.Name,
		Type: c.Type, Position: c.Position, Text: textChannel(c.Type)}
	parent := c.ParentID
	for range 2 { // a thread's parent is a channel, whose parent is the category
		if parent == "" {
			break
		}
		p, err := st.Channel(parent)
		if err != nil || p == nil {
			break
		}
		if p.Type == discordgo.ChannelTypeGuildCategory {
			info.Category = p.Name
			break
		}
		parent = p.ParentID
	}
	return info
}

// textChannel reports whether messages can be posted in a channel of t.
func textChannel(t discordgo.ChannelType) bool {
	switch t {
	case discordgo.ChannelTypeGuildText, discordgo.ChannelTypeGuildNews, discordgo.ChannelTypeGuildVoice,
		discordgo.ChannelTypeGuildNewsThread, discordgo.ChannelTypeGuildPublicThread, discordgo.ChannelTypeGuildPrivateThread:
		return true
	}
	return false
}

// Channels returns the guild's channels (not its threads or categories)
// in Discord's order: channels outside a category first, then each
// category's by position.
func (b *Bot) Channels(guildID uint64) []ChannelInfo {
	s, g := b.stateGuild(guildID)
	if g == nil {
		return nil
	}
	s.State.RLock()
	defer s.State.RUnlock()
	catPos := map[string]int{}
	for _, c := range g.Channels {
		if c.Type == discordgo.ChannelTypeGuildCategory {
			catPos[c.ID] = c.Position
		}
	}
	var out []ChannelInfo
	parentPos := map[uint64]int{}
	for _, c := range g.Channels {
		if c.Type == discordgo.ChannelTypeGuildCategory {
			continue
		}
		info := channelInfo(s.State, c)
		if p, ok := catPos[c.ParentID]; ok {
			parentPos[info.ID] = p + 1
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b ChannelInfo) int {
		return cmp.Or(cmp.Compare(parentPos[a.ID], parentPos[b.ID]), cmp.Compare(a.Category, b.Category),
			cmp.Compare(a.Position, b.Position), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Role returns the guild's role id as the bot knows it.
func (b *Bot) Role(guildID, roleID uint64) (RoleInfo, bool) {
	s, err := b.session()
	if err != nil || s.State == nil || guildID == 0 || roleID == 0 {
		return RoleInfo{}, false
	}
	r, err := s.State.Role(idString(guildID), idString(roleID))
	if err != nil || r == nil {
		return RoleInfo{}, false
	}
	s.State.RLock()
	defer s.State.RUnlock()
	return RoleInfo{ID: roleID, Name: r.Name, Color: r.Color, Position: r.Position, Managed: r.Managed}, true
}

// Roles returns the guild's roles, highest first (@everyone last).
func (b *Bot) Roles(guildID uint64) []RoleInfo {
	s, g := b.stateGuild(guildID)
	if g == nil {
		return nil
	}
	s.State.RLock()
	defer s.State.RUnlock()
	out := make([]RoleInfo, 0, len(g.Roles))
	for _, r := range g.Roles {
		if r != nil {
			out = append(out, RoleInfo{ID: parseID(r.ID), Name: r.Name, Color: r.Color, Position: r.Position, Managed: r.Managed})
		}
	}
	slices.SortFunc(out, func(a, b RoleInfo) int { return cmp.Or(cmp.Compare(b.Position, a.Position), cmp.Compare(a.ID, b.ID)) })
	return out
}

// Member returns the guild's member userID from the member cache or the
// session state. A member known to neither starts a background fetch (at
// most one per member, at most maxMemberFetches at once) and is reported
// unknown now.
func (b *Bot) Member(guildID, userID uint64) (MemberInfo, bool) {
	if guildID == 0 || userID == 0 {
		return MemberInfo{}, false
	}
	if m, ok := b.cache.peekMember(guildID, userID); ok {
		return MemberInfo{ID: userID, DisplayName: m.displayName(), Username: m.user}, true
	}
	s, err := b.session()
	if err != nil || s.State == nil {
		return MemberInfo{}, false
	}
	if m := stateMember(s, idString(guildID), idString(userID)); m != nil {
		info := MemberInfo{ID: userID, DisplayName: m.DisplayName(), Username: m.User.Username}
		if info.Username == info.DisplayName {
			info.Username = ""
		}
		return info, true
	}
	b.fetchMember(s, guildID, userID)
	return MemberInfo{}, false
}

// fetchMember asks Discord for a member in the background and keeps the
// answer in the member cache.
func (b *Bot) fetchMember(s *discordgo.Session, guildID, userID uint64) {
	k := memberKey{guildID, userID}
	f := &b.fetches
	f.mu.Lock()
	if f.inflight[k] || len(f.inflight) >= maxMemberFetches {
		f.mu.Unlock()
		return
	}
	if f.inflight == nil {
		f.inflight = map[memberKey]bool{}
	}
	f.inflight[k] = true
	f.mu.Unlock()
	go func() {
		defer func() {
			f.mu.Lock()
			delete(f.inflight, k)
			f.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(b.stopREST, memberFetchTimeout)
		defer cancel()
		m, err := s.GuildMember(idString(guildID), idString(userID), discordgo.WithContext(ctx))
		if err != nil {
			b.log.Debug("member lookup failed", "guild", guildID, "user", userID, "err", err)
			return
		}
		if c, ok := memberEntry(guildID, m, nil); ok {
			b.cache.putMember(c)
		}
	}()
}

// maxMemberSearch bounds the members SearchMembers returns.
const maxMemberSearch = 25

// SearchMembers returns at most limit (at most 25) of the guild's cached
// members whose shown name or username starts with prefix (case-
// insensitive), by shown name. An empty prefix matches none.
func (b *Bot) SearchMembers(guildID uint64, prefix string, limit int) []MemberInfo {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	if guildID == 0 || prefix == "" {
		return nil
	}
	limit = min(max(limit, 1), maxMemberSearch)
	out := b.cache.searchMembers(guildID, func(m *cachedMember) bool {
		return hasFoldPrefix(m.displayName(), prefix) || hasFoldPrefix(m.name, prefix) || hasFoldPrefix(m.user, prefix)
	}, limit)
	slices.SortFunc(out, func(a, b MemberInfo) int {
		return cmp.Or(cmp.Compare(strings.ToLower(a.DisplayName), strings.ToLower(b.DisplayName)), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// hasFoldPrefix reports whether s starts with lower (lower case).
func hasFoldPrefix(s, lower string) bool {
	return len(s) >= len(lower) && strings.EqualFold(s[:len(lower)], lower)
}
