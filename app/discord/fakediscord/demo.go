package fakediscord

import (
	"strconv"

	"github.com/bwmarrin/discordgo"
)

// DemoGuild is the seeded guild of demo mode (`kimi serve --demo`): ids of what SeedDemo made.
type DemoGuild struct {
	GuildID string
	// Channels are the text channels, in order (#welcome, #general, #help); Category holds them.
	Channels []string
	Category string
	// Members are the demo members a visitor may post as (not the bot, not the owner).
	Members []string
	// MemberNames are the members' usernames, in Members's order.
	MemberNames []string
	// Roles: the moderators' role and the regulars'.
	ModRole, RegularRole string
}

// DemoGuildName labels the demo guild everywhere it is shown.
const DemoGuildName = "Kimi demo (not on Discord)"

// demoID is the n-th fixed snowflake of the demo guild (created 2025-01-01): the demo guild,
// its channels, roles and members keep their ids across restarts, so what the demo's data
// directory holds about them (the guild's configuration, module data) still applies.
func demoID(n uint64) string {
	const base = uint64(1735689600000-discordEpoch) << 22
	return strconv.FormatUint(base+n, 10)
}

// demoEveryonePermissions are the demo guild's @everyone permissions: the default ones, and
// attaching files and embedding links, so a task with an attachment or an embed saves.
const demoEveryonePermissions = DefaultEveryonePermissions | discordgo.PermissionAttachFiles | discordgo.PermissionEmbedLinks

// SeedDemo seeds the demo guild: a category with three text channels, two roles and three
// members beside the bot and the owner, with the same ids every time (see demoID); its
// @everyone may also attach files and embed links.
func (s *Server) SeedDemo() DemoGuild {
	everyone := demoEveryonePermissions
	g := s.AddGuild(GuildSpec{ID: demoID(1), Name: DemoGuildName, EveryonePermissions: &everyone})
	d := DemoGuild{GuildID: g.ID}
	d.Category = s.AddChannel(ChannelSpec{ID: demoID(2), GuildID: g.ID, Name: "Demo", Type: discordgo.ChannelTypeGuildCategory}).ID
	for i, name := range []string{"welcome", "general", "help"} {
		d.Channels = append(d.Channels, s.AddChannel(ChannelSpec{ID: demoID(3 + uint64(i)), GuildID: g.ID, Name: name, ParentID: d.Category}).ID)
	}
	d.ModRole = s.AddRole(g.ID, discordgo.Role{ID: demoID(6), Name: "moderators", Color: 0x3498db, Hoist: true}).ID
	d.RegularRole = s.AddRole(g.ID, discordgo.Role{ID: demoID(7), Name: "regulars", Color: 0x2ecc71}).ID
	for i, m := range []struct {
		name  string
		roles []string
	}{{"ada", []string{d.ModRole}}, {"bo", []string{d.RegularRole}}, {"cy", nil}} {
		u := s.AddUser(discordgo.User{ID: demoID(8 + uint64(i)), Username: m.name, GlobalName: m.name})
		s.AddMember(g.ID, u.ID, m.roles...)
		d.Members = append(d.Members, u.ID)
		d.MemberNames = append(d.MemberNames, m.name)
	}
	return d
}
