package admin

import (
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

// mentionDirectory is the bot's directory as message text's mentions read
// it (its state and member cache, never a REST call); Options.Discord
// provides it when it is the bot.
type mentionDirectory interface {
	Member(guildID, userID uint64) (discord.MemberInfo, bool)
	Channel(id uint64) (discord.ChannelInfo, bool)
	Role(guildID, roleID uint64) (discord.RoleInfo, bool)
}

var _ mentionDirectory = (*discord.Bot)(nil)

// mentions names the mentions of a guild's message text (guildID 0: users
// and roles unknown, channels still named) from the bot's directory; nil
// when there is no bot.
func (s *Server) mentions(guildID uint64) templates.Mentions {
	dir, ok := s.opts.Discord.(mentionDirectory)
	if !ok || dir == nil {
		return nil
	}
	if b, isBot := dir.(*discord.Bot); isBot && b == nil {
		return nil
	}
	return guildMentions{dir: dir, guildID: guildID}
}

// mentionsIn is mentions for the guild of a channel (by its id, as text).
func (s *Server) mentionsIn(channelID string) templates.Mentions {
	m := s.mentions(0)
	gm, ok := m.(guildMentions)
	if !ok {
		return m
	}
	id, _ := strconv.ParseUint(channelID, 10, 64)
	if ch, ok := gm.dir.Channel(id); ok {
		gm.guildID = ch.GuildID
	}
	return gm
}

// auditMentions names the mentions of an audit entry's detail: the guild
// its target or detail starts with ("guild:42…"), else the guild of the
// channel its target is, else none (channels still named).
func (s *Server) auditMentions(e store.AuditEntry) templates.Mentions {
	for _, v := range []string{e.Target, e.Detail} {
		if rest, ok := strings.CutPrefix(v, "guild:"); ok {
			digits, _, _ := strings.Cut(rest, ":")
			digits, _, _ = strings.Cut(digits, " ")
			if id, err := strconv.ParseUint(digits, 10, 64); err == nil {
				return s.mentions(id)
			}
		}
	}
	return s.mentionsIn(e.Target)
}

// guildMentions names one guild's members and roles, and any channel.
type guildMentions struct {
	dir     mentionDirectory
	guildID uint64
}

func (g guildMentions) MentionUser(id uint64) (string, bool) {
	if g.guildID == 0 {
		return "", false
	}
	m, ok := g.dir.Member(g.guildID, id)
	return m.DisplayName, ok && m.DisplayName != ""
}

func (g guildMentions) MentionChannel(id uint64) (string, bool) {
	c, ok := g.dir.Channel(id)
	return c.Name, ok && c.Name != ""
}

func (g guildMentions) MentionRole(id uint64) (string, int, bool) {
	if g.guildID == 0 {
		return "", 0, false
	}
	r, ok := g.dir.Role(g.guildID, id)
	return r.Name, r.Color, ok && r.Name != ""
}

// fallbackMentions asks first, then then what first does not know.
type fallbackMentions struct{ first, then templates.Mentions }

func (f fallbackMentions) MentionUser(id uint64) (string, bool) {
	if f.first != nil {
		if n, ok := f.first.MentionUser(id); ok {
			return n, true
		}
	}
	return f.then.MentionUser(id)
}

func (f fallbackMentions) MentionChannel(id uint64) (string, bool) {
	if f.first != nil {
		if n, ok := f.first.MentionChannel(id); ok {
			return n, true
		}
	}
	return f.then.MentionChannel(id)
}

func (f fallbackMentions) MentionRole(id uint64) (string, int, bool) {
	if f.first != nil {
		if n, c, ok := f.first.MentionRole(id); ok {
			return n, c, true
		}
	}
	return f.then.MentionRole(id)
}

// demoMentions names the demo guild's members, channels and roles as the
// demo chat lists them: the names the bot's directory has not learnt yet
// (a member it has not fetched), without their colours.
type demoMentions struct{ users, channels, roles map[uint64]string }

func newDemoMentions(g templates.DemoGuild) demoMentions {
	index := func(ls []templates.DemoLink) map[uint64]string {
		m := make(map[uint64]string, len(ls))
		for _, l := range ls {
			if id, err := strconv.ParseUint(l.ID, 10, 64); err == nil {
				m[id] = l.Name
			}
		}
		return m
	}
	return demoMentions{users: index(g.Members), channels: index(g.Channels), roles: index(g.Roles)}
}

func (d demoMentions) MentionUser(id uint64) (string, bool) {
	n, ok := d.users[id]
	return n, ok
}

func (d demoMentions) MentionChannel(id uint64) (string, bool) {
	n, ok := d.channels[id]
	return n, ok
}

func (d demoMentions) MentionRole(id uint64) (string, int, bool) {
	n, ok := d.roles[id]
	return n, 0, ok
}
