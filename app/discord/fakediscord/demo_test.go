package fakediscord

import (
	"testing"

	"github.com/bwmarrin/discordgo"
)

// TestSeedDemo: the demo guild as a discordgo session sees it — labelled, three channels in
// their category, two roles, the three demo members who can post; its @everyone may attach files
// and embed links.
func TestSeedDemo(t *testing.T) {
	t.Parallel()
	f := New(Options{})
	t.Cleanup(f.Close)
	d := f.SeedDemo()
	s := f.Session()
	s.Identify.Intents = discordgo.IntentsAll
	got := make(chan *discordgo.GuildCreate, 1)
	s.AddHandler(func(_ *discordgo.Session, g *discordgo.GuildCreate) { got <- g })
	open(t, s)
	g := recv(t, got, "GUILD_CREATE")
	if g.Name != DemoGuildName || len(g.Channels) != 4 || len(g.Roles) != 4 || len(g.Members) != 5 {
		t.Fatalf("demo guild = %q, %d channels, %d roles, %d members", g.Name, len(g.Channels), len(g.Roles), len(g.Members))
	}
	for _, r := range g.Roles {
		const want = discordgo.PermissionAttachFiles | discordgo.PermissionEmbedLinks | discordgo.PermissionSendMessages
		if r.ID == g.ID && r.Permissions&want != want {
			t.Fatalf("the demo's @everyone permissions = %b, want files, embeds and messages", r.Permissions)
		}
	}
	for _, id := range d.Channels {
		if _, err := f.PostMessage(id, d.Members[0], "hi"); err != nil {
			t.Fatalf("post in %s: %v", id, err)
		}
	}
	if len(f.Messages(d.Channels[1])) != 1 {
		t.Fatal("the demo post is not in its channel")
	}
}
