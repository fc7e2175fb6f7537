package fakediscord

import "github.com/bwmarrin/discordgo"

// DemoGuild is the seeded guild of demo mode (`kimi serve --demo`): ids of what SeedDemo made.
type DemoGuild struct {
	GuildID string
	// Channels are the text channels, in order (#welcome, #general, #help); Category holds them.
	Channels []string
	Category string
	// Members are the demo members a visitor may post as (not the bot, not the owner).
	Members []string
	// Roles: the moderators' role and the regulars'.
	ModRole, RegularRole string
}

// DemoGuildName labels the demo guild everywhere it is shown.
const DemoGuildName = "Kimi demo (not on Discord)"

// SeedDemo seeds the demo guild: a category with three text channels, two roles and three
// members beside the bot and the owner. It is deterministic apart from the snowflakes.
func (s *Server) SeedDemo() DemoGuild {
	g := s.AddGuild(GuildSpec{Name: DemoGuildName})
	d := DemoGuild{GuildID: g.ID}
	d.Category = s.AddChannel(ChannelSpec{GuildID: g.ID, Name: "Demo", Type: discordgo.ChannelTypeGuildCategory}).ID
	for _, name := range []string{"welcome", "general", "help"} {
		d.Channels = append(d.Channels, s.AddChannel(ChannelSpec{GuildID: g.ID, Name: name, ParentID: d.Category}).ID)
	}
	d.ModRole = s.AddRole(g.ID, discordgo.Role{Name: "moderators", Color: 0x3498db, Hoist: true}).ID
	d.RegularRole = s.AddRole(g.ID, discordgo.Role{Name: "regulars", Color: 0x2ecc71}).ID
	for _, m := range []struct {
		name  string
		roles []string
	}{{"ada", []string{d.ModRole}}, {"bo", []string{d.RegularRole}}, {"cy", nil}} {
		u := s.AddUser(discordgo.User{Username: m.name, GlobalName: m.name})
		s.AddMember(g.ID, u.ID, m.roles...)
		d.Members = append(d.Members, u.ID)
	}
	return d
}
