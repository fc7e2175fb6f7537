package fakediscord

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Threads beyond their channel routes: thread members (GET
// /channels/{channel}/thread-members/{user}, 404 10007 when absent), the guild's active threads
// (GET /guilds/{guild}/threads/active) and a channel's archived public threads (GET
// /channels/{channel}/threads/archived/public, newest archived first); and the guild's vanity
// invite (GET /guilds/{guild}/vanity-url: 403 50013 without Manage Guild, 403 50001 without the
// VANITY_URL feature).

// CodeMissingAccess is Discord's "Missing Access".
const CodeMissingAccess = 50001

// CodeInvalidChannelType is Discord's "Cannot execute action on this channel type".
const CodeInvalidChannelType = 50024

func (s *Server) threadRoutes() {
	s.handle("GET", "/channels/{channel}/thread-members/{user}", s.getThreadMember)
	s.handle("GET", "/guilds/{guild}/threads/active", s.activeThreads)
	s.handle("GET", "/channels/{channel}/threads/archived/public", s.archivedPublicThreads)
	s.handle("GET", "/guilds/{guild}/vanity-url", s.vanityURL)
}

// AddThreadMember adds a user to a thread. announce dispatches THREAD_MEMBERS_UPDATE, as
// Discord does when someone joins; without it the membership is seeded quietly (a session
// learns it only by REST).
func (s *Server) AddThreadMember(threadID, userID string, announce bool) *discordgo.ThreadMember {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[threadID]
	if ch == nil || !ch.c.IsThread() || s.users[userID] == nil {
		panic("fakediscord: AddThreadMember: unknown thread or user")
	}
	if s.side.threadMembers == nil {
		s.side.threadMembers = map[string]map[string]*discordgo.ThreadMember{}
	}
	members := s.side.threadMembers[threadID]
	if members == nil {
		members = map[string]*discordgo.ThreadMember{}
		s.side.threadMembers[threadID] = members
	}
	tm := &discordgo.ThreadMember{ID: threadID, UserID: userID, JoinTimestamp: s.now().UTC()}
	members[userID] = tm
	ch.c.MemberCount = len(members)
	if announce {
		s.dispatchGuild(ch.c.GuildID, "THREAD_MEMBERS_UPDATE", &discordgo.ThreadMembersUpdate{ID: threadID, GuildID: ch.c.GuildID,
			MemberCount: len(members), AddedMembers: []discordgo.AddedThreadMember{{ThreadMember: tm}}})
	}
	return clone(tm)
}

// ArchiveThread archives (or unarchives) a thread, quietly: Discord's THREAD_UPDATE is not
// sent, so a session's state keeps what it knew (a test of the REST lists sets this).
func (s *Server) ArchiveThread(threadID string, archived bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[threadID]
	if ch == nil || ch.c.ThreadMetadata == nil {
		panic("fakediscord: ArchiveThread: unknown thread " + threadID)
	}
	ch.c.ThreadMetadata.Archived = archived
	ch.c.ThreadMetadata.ArchiveTimestamp = s.now().UTC()
}

// SetVanityURL gives a guild the VANITY_URL feature with an invite code and its uses ("" takes
// the feature away). The guild object changes quietly (no GUILD_UPDATE).
func (s *Server) SetVanityURL(guildID, code string, uses int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guilds[guildID]
	if g == nil {
		panic("fakediscord: SetVanityURL: unknown guild " + guildID)
	}
	g.g.Features = slices.DeleteFunc(g.g.Features, func(f discordgo.GuildFeature) bool { return f == discordgo.GuildFeatureVanityURL })
	g.g.VanityURLCode = code
	if s.side.vanity == nil {
		s.side.vanity = map[string]vanity{}
	}
	delete(s.side.vanity, guildID)
	if code != "" {
		g.g.Features = append(g.g.Features, discordgo.GuildFeatureVanityURL)
		s.side.vanity[guildID] = vanity{code: code, uses: uses}
	}
}

type vanity struct {
	code string
	uses int
}

// visibleThread reports whether the bot sees thread ch: its parent's View Channel, and for a
// private thread membership or Manage Threads.
func (s *Server) visibleThread(g *guild, ch *discordgo.Channel) bool {
	perms := s.permissions(g, s.opts.BotID, ch)
	if perms&discordgo.PermissionViewChannel == 0 {
		return false
	}
	if ch.Type == discordgo.ChannelTypeGuildPrivateThread {
		return s.side.threadMembers[ch.ID][s.opts.BotID] != nil || perms&discordgo.PermissionManageThreads != 0
	}
	return true
}

func (s *Server) getThreadMember(c *call) (int, any, *apiError) {
	ch, g, err := s.channelOf(c.param("channel"))
	if err != nil {
		return 0, nil, err
	}
	if !ch.c.IsThread() {
		return 0, nil, &apiError{status: http.StatusBadRequest, Code: CodeInvalidChannelType, Message: "Cannot execute action on this channel type"}
	}
	if !s.visibleThread(g, ch.c) {
		return 0, nil, &apiError{status: http.StatusForbidden, Code: CodeMissingAccess, Message: "Missing Access"}
	}
	tm := s.side.threadMembers[ch.c.ID][c.param("user")]
	if tm == nil {
		return 0, nil, unknown(CodeUnknownMember, "Member")
	}
	out := *tm
	if c.r.URL.Query().Get("with_member") == "true" {
		out.Member = g.members[tm.UserID]
	}
	return 200, &out, nil
}

// threadsList is Discord's list of threads with the bot's own thread members.
type threadsList struct {
	Threads []*discordgo.Channel      `json:"threads"`
	Members []*discordgo.ThreadMember `json:"members"`
	HasMore *bool                     `json:"has_more,omitempty"`
}

func (s *Server) botMembers(threads []*discordgo.Channel) []*discordgo.ThreadMember {
	out := []*discordgo.ThreadMember{}
	for _, t := range threads {
		if tm := s.side.threadMembers[t.ID][s.opts.BotID]; tm != nil {
			out = append(out, tm)
		}
	}
	return out
}

func (s *Server) activeThreads(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	out := []*discordgo.Channel{}
	for _, id := range g.channels {
		ch := s.channels[id].c
		if ch.IsThread() && (ch.ThreadMetadata == nil || !ch.ThreadMetadata.Archived) && s.visibleThread(g, ch) {
			out = append(out, ch)
		}
	}
	return 200, &threadsList{Threads: out, Members: s.botMembers(out)}, nil
}

func (s *Server) archivedPublicThreads(c *call) (int, any, *apiError) {
	ch, g, err := s.readableChannel(c)
	if err != nil {
		return 0, nil, err
	}
	q := c.r.URL.Query()
	limit, err := intQuery(q, "limit", 50, 2, 100)
	if err != nil {
		return 0, nil, err
	}
	var before time.Time
	if b := q.Get("before"); b != "" {
		t, perr := time.Parse(time.RFC3339, b)
		if perr != nil {
			return 0, nil, invalidForm("before", "DATE_TIME_TYPE_PARSE", "Could not parse "+strings.TrimSpace(b)+". Should be ISO8601.")
		}
		before = t
	}
	var all []*discordgo.Channel
	for _, id := range g.channels {
		t := s.channels[id].c
		if t.ParentID == ch.c.ID && (t.Type == discordgo.ChannelTypeGuildPublicThread || t.Type == discordgo.ChannelTypeGuildNewsThread) &&
			t.ThreadMetadata != nil && t.ThreadMetadata.Archived && (before.IsZero() || t.ThreadMetadata.ArchiveTimestamp.Before(before)) {
			all = append(all, t)
		}
	}
	slices.SortStableFunc(all, func(a, b *discordgo.Channel) int {
		return b.ThreadMetadata.ArchiveTimestamp.Compare(a.ThreadMetadata.ArchiveTimestamp)
	})
	more := len(all) > limit
	if more {
		all = all[:limit]
	}
	if all == nil {
		all = []*discordgo.Channel{}
	}
	return 200, &threadsList{Threads: all, Members: s.botMembers(all), HasMore: &more}, nil
}

func (s *Server) vanityURL(c *call) (int, any, *apiError) {
	g, err := s.guildOf(c.param("guild"))
	if err != nil {
		return 0, nil, err
	}
	if err := s.botNeeds(g, nil, discordgo.PermissionManageGuild); err != nil {
		return 0, nil, err
	}
	v, ok := s.side.vanity[g.g.ID]
	if !ok {
		return 0, nil, &apiError{status: http.StatusForbidden, Code: CodeMissingAccess, Message: "Missing Access"}
	}
	return 200, map[string]any{"code": v.code, "uses": v.uses}, nil
}
