package admin

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

// directory is what the admin reads of the bot's directory to show names
// instead of ids: the bot's state and member cache, never a REST call per
// render. Options.Discord provides it when it is the bot.
type directory interface {
	Guild(id uint64) (discord.GuildInfo, bool)
	Channel(id uint64) (discord.ChannelInfo, bool)
	Role(guildID, roleID uint64) (discord.RoleInfo, bool)
	Member(guildID, userID uint64) (discord.MemberInfo, bool)
}

var _ directory = (*discord.Bot)(nil)

// namer builds the view values of names; a nil directory knows none (the
// ids are shown as unknown).
type namer struct{ dir directory }

// namer returns the names the bot knows.
func (s *Server) namer() namer {
	if d, ok := s.opts.Discord.(directory); ok && d != nil {
		return namer{dir: d}
	}
	return namer{}
}

// parseSnowflake reads a decimal Discord id (0 when it is none).
func parseSnowflake(id string) uint64 {
	v, err := strconv.ParseUint(strings.TrimSpace(id), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// Guild names a guild.
func (n namer) Guild(id uint64) templates.Name {
	v := templates.Name{Kind: templates.KindGuild, ID: idText(id)}
	if n.dir != nil && id != 0 {
		if g, ok := n.dir.Guild(id); ok {
			v.Known, v.Label, v.IconURL = true, g.Name, g.IconURL
		}
	}
	return v
}

// Channel names a channel (its category the detail).
func (n namer) Channel(id uint64) templates.Name {
	v := templates.Name{Kind: templates.KindChannel, ID: idText(id)}
	if n.dir != nil && id != 0 {
		if c, ok := n.dir.Channel(id); ok && c.Name != "" {
			v.Known, v.Label, v.Detail = true, c.Name, c.Category
		}
	}
	return v
}

// Role names a guild's role (with its colour).
func (n namer) Role(guildID, id uint64) templates.Name {
	v := templates.Name{Kind: templates.KindRole, ID: idText(id)}
	if n.dir != nil && id != 0 {
		if r, ok := n.dir.Role(guildID, id); ok && r.Name != "" {
			v.Known, v.Label = true, strings.TrimPrefix(r.Name, "@")
			if r.Color > 0 && r.Color <= 0xFFFFFF {
				v.Color = fmt.Sprintf("#%06x", r.Color)
			}
		}
	}
	return v
}

// Member names a guild's member (display name, username the detail).
func (n namer) Member(guildID, id uint64) templates.Name {
	v := templates.Name{Kind: templates.KindMember, ID: idText(id)}
	if n.dir != nil && id != 0 {
		if m, ok := n.dir.Member(guildID, id); ok && m.DisplayName != "" {
			v.Known, v.Label, v.Detail = true, m.DisplayName, m.Username
		}
	}
	return v
}

// User names a Discord user seen in one of the guilds (the first that
// knows it), for places without a guild such as an audit actor.
func (n namer) User(id uint64, guildIDs ...uint64) templates.Name {
	for _, g := range guildIDs {
		if g == 0 {
			continue
		}
		if v := n.Member(g, id); v.Known {
			v.Kind = templates.KindUser
			return v
		}
	}
	return templates.Name{Kind: templates.KindUser, ID: idText(id)}
}

// Channels names each of the ids ("" and non-ids skipped).
func (n namer) Channels(ids []uint64) []templates.Name {
	out := make([]templates.Name, 0, len(ids))
	for _, id := range ids {
		if id != 0 {
			out = append(out, n.Channel(id))
		}
	}
	return out
}

// Roles names each of the guild's role ids.
func (n namer) Roles(guildID uint64, ids []uint64) []templates.Name {
	out := make([]templates.Name, 0, len(ids))
	for _, id := range ids {
		if id != 0 {
			out = append(out, n.Role(guildID, id))
		}
	}
	return out
}

// Members names each of the guild's member ids.
func (n namer) Members(guildID uint64, ids []uint64) []templates.Name {
	out := make([]templates.Name, 0, len(ids))
	for _, id := range ids {
		if id != 0 {
			out = append(out, n.Member(guildID, id))
		}
	}
	return out
}

// idText is an id in decimal ("" for 0).
func idText(id uint64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatUint(id, 10)
}

// guildTitle is a guild page's browser title: its name, else its id.
func guildTitle(n templates.Name) string {
	if n.Known {
		return n.Label
	}
	return "Guild " + n.ID
}

// actorUserID is the Discord user an actor string names: "<@id>",
// "<@!id>" or "discord:id" (0 for another actor: an admin, "kimi").
func actorUserID(actor string) uint64 {
	switch {
	case strings.HasPrefix(actor, "discord:"):
		return parseSnowflake(strings.TrimPrefix(actor, "discord:"))
	case strings.HasPrefix(actor, "<@") && strings.HasSuffix(actor, ">"):
		return parseSnowflake(strings.TrimPrefix(actor[2:len(actor)-1], "!"))
	}
	return 0
}

// maxActorGuilds bounds the guilds an audit actor without a guild is
// looked up in (each miss may start a background member fetch).
const maxActorGuilds = 3

// auditNamer names audit rows: a Discord actor in the target's guild, else
// in the first of the bot's guilds.
type auditNamer struct {
	namer
	guilds []uint64
}

// auditNamer reads the bot's guilds once for a page of audit rows.
func (s *Server) auditNamer() auditNamer {
	a := auditNamer{namer: s.namer()}
	if s.opts.Discord != nil && a.dir != nil {
		for _, g := range s.opts.Discord.Status().Guilds {
			if id := parseSnowflake(g.ID); id != 0 && len(a.guilds) < maxActorGuilds {
				a.guilds = append(a.guilds, id)
			}
		}
	}
	return a
}

// name sets r's actor and target names from e: a "discord:<id>" actor, a
// configuration target (guild:1, guild:1:kudos, channel:2) and the demo's
// channel targets.
func (a auditNamer) name(r *templates.AuditRow, e store.AuditEntry) {
	var guild uint64
	if t, err := guildcfg.ParseTarget(e.Target); err == nil {
		switch t.Kind {
		case guildcfg.KindGuild:
			r.TargetName, guild = a.Guild(t.GuildID), t.GuildID
		case guildcfg.KindGuildModule:
			r.TargetName, r.TargetRest, guild = a.Guild(t.GuildID), t.Module+" settings", t.GuildID
		case guildcfg.KindChannel:
			r.TargetName = a.Channel(t.ChannelID)
		}
	} else if strings.HasPrefix(e.Action, "demo.") {
		if id := parseSnowflake(e.Target); id != 0 {
			r.TargetName = a.Channel(id)
		}
	}
	if id := actorUserID(e.Actor); id != 0 && r.Attempted == "" {
		r.ActorName = a.User(id, append([]uint64{guild}, a.guilds...)...)
	}
}
