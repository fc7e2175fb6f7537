package discord

import (
	"context"
	"slices"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// TestDirectory: the bot's directory names a guild, its channels (with
// their category, in Discord's order, threads and categories left out of
// the list), its roles (highest first, with colours) and its members from
// its state and member cache; a member it does not know is unknown now,
// fetched once in the background, and known at the next lookup; the
// member search matches a prefix of the shown name or the username, at
// most 25; nothing is known without a connection or for an unknown id.
func TestDirectory(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	const gid = "333333333333333333"
	f.AddGuild(fakediscord.GuildSpec{ID: gid, Name: "Tea Garden"})
	cat := f.AddChannel(fakediscord.ChannelSpec{GuildID: gid, Name: "Info", Type: discordgo.ChannelTypeGuildCategory})
	rules := f.AddChannel(fakediscord.ChannelSpec{GuildID: gid, Name: "rules", ParentID: cat.ID})
	general := f.AddChannel(fakediscord.ChannelSpec{GuildID: gid, Name: "general"})
	voice := f.AddChannel(fakediscord.ChannelSpec{GuildID: gid, Name: "Lounge", Type: discordgo.ChannelTypeGuildVoice, ParentID: cat.ID})
	thread := f.AddChannel(fakediscord.ChannelSpec{GuildID: gid, Name: "docs thread", Type: discordgo.ChannelTypeGuildPublicThread, ParentID: rules.ID})
	mods := f.AddRole(gid, discordgo.Role{Name: "Moderators", Color: 0x3498db, Position: 5})
	regs := f.AddRole(gid, discordgo.Role{Name: "Regulars", Color: 0, Position: 2})
	ada := f.AddUser(discordgo.User{Username: "ada", GlobalName: "Ada Lovelace"})
	f.AddMember(gid, ada.ID)
	others := []string{}
	for _, name := range []string{"adam", "adele", "bo"} {
		u := f.AddUser(discordgo.User{Username: name})
		f.AddMember(gid, u.ID)
		others = append(others, u.ID)
	}

	b, _ := connBot(t, f, connStore(t), connOpts{token: "Bot " + f.Token()})
	if _, ok := b.Guild(parseID(gid)); ok {
		t.Error("a guild is known before the bot connected")
	}
	b.Start(context.Background())
	connWaitFor(t, "the guild", func() bool { _, ok := b.Guild(parseID(gid)); return ok })

	if g, _ := b.Guild(parseID(gid)); g.Name != "Tea Garden" {
		t.Errorf("guild = %+v", g)
	}
	for _, tt := range []struct {
		id             string
		name, category string
		text           bool
	}{
		{rules.ID, "rules", "Info", true},
		{general.ID, "general", "", true},
		{voice.ID, "Lounge", "Info", true},
		{thread.ID, "docs thread", "Info", true},
		{cat.ID, "Info", "", false},
	} {
		c, ok := b.Channel(parseID(tt.id))
		if !ok || c.Name != tt.name || c.Category != tt.category || c.Text != tt.text || c.GuildID != parseID(gid) {
			t.Errorf("channel %s = %+v, %v; want %s in %q, text %v", tt.id, c, ok, tt.name, tt.category, tt.text)
		}
	}
	var names []string
	for _, c := range b.Channels(parseID(gid)) {
		names = append(names, c.Category+"/"+c.Name)
	}
	if want := []string{"/general", "Info/rules", "Info/Lounge"}; !slices.Equal(names, want) {
		t.Errorf("channels = %v, want %v", names, want)
	}
	var roles []string
	all := b.Roles(parseID(gid))
	for _, r := range all {
		roles = append(roles, r.Name)
	}
	if !slices.IsSortedFunc(all, func(a, b RoleInfo) int { return b.Position - a.Position }) || len(roles) != 4 ||
		roles[len(roles)-1] != "@everyone" || slices.Index(roles, "Moderators") > slices.Index(roles, "Regulars") {
		t.Errorf("roles = %v, want highest first (Moderators above Regulars), @everyone last", roles)
	}
	if r, ok := b.Role(parseID(gid), parseID(mods.ID)); !ok || r.Name != "Moderators" || r.Color != 0x3498db {
		t.Errorf("role = %+v, %v", r, ok)
	}
	if r, ok := b.Role(parseID(gid), parseID(regs.ID)); !ok || r.Color != 0 {
		t.Errorf("role = %+v, %v", r, ok)
	}

	if _, ok := b.Member(parseID(gid), parseID(ada.ID)); ok {
		t.Fatal("a member the bot never saw is known without a fetch")
	}
	connWaitFor(t, "ada fetched", func() bool { _, ok := b.Member(parseID(gid), parseID(ada.ID)); return ok })
	if m, _ := b.Member(parseID(gid), parseID(ada.ID)); m.DisplayName != "Ada Lovelace" || m.Username != "ada" {
		t.Errorf("ada = %+v", m)
	}
	for _, u := range b.SearchMembers(parseID(gid), "x", 1) {
		t.Errorf("search x found %+v", u)
	}
	// The others become known as ada did: looked up, then fetched.
	connWaitFor(t, "every member fetched", func() bool {
		known := 0
		for _, id := range others {
			if _, ok := b.Member(parseID(gid), parseID(id)); ok {
				known++
			}
		}
		return known == len(others)
	})
	var found []string
	for _, m := range b.SearchMembers(parseID(gid), "AD", 25) {
		found = append(found, m.DisplayName)
	}
	if want := []string{"Ada Lovelace", "adam", "adele"}; !slices.Equal(found, want) {
		t.Errorf("search AD = %v, want %v (prefix of the shown name or the username)", found, want)
	}
	if got := b.SearchMembers(parseID(gid), "ad", 2); len(got) != 2 {
		t.Errorf("search with limit 2 = %d members", len(got))
	}
	for _, unknown := range []bool{
		func() bool { _, ok := b.Channel(42); return ok }(),
		func() bool { _, ok := b.Role(parseID(gid), 42); return ok }(),
		func() bool { _, ok := b.Guild(42); return ok }(),
	} {
		if unknown {
			t.Error("an unknown id is known")
		}
	}
}
