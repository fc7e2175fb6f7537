package proposals

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestKudosSetupThroughTheHost: `/kudos setup` on the real host with a real
// Bot proposes through Runtime.Proposals (the host's port bound to kudos),
// the card appears in the channel, a staff member approves it with the
// button, kudos' guild settings change and its OnChange fires, and the card
// shows "applied".
func TestKudosSetupThroughTheHost(t *testing.T) {
	ctx := context.Background()
	logs := &logBuffer{}
	root := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	specs := []sdk.Spec{kudos.Spec()}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Modules: specs, Logger: root})
	if err != nil {
		t.Fatal(err)
	}
	defer guilds.Close()
	fake := fakediscord.New(fakediscord.Options{})
	defer fake.Close()
	g := fake.AddGuild(fakediscord.GuildSpec{Name: "g"})
	general := fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "general"}).ID
	staff := fake.AddUser(discordgo.User{Username: "staffer"})
	fake.AddMember(g.ID, staff.ID)
	guildID := parse(g.ID)
	if _, err := guilds.Write(ctx, guildcfg.GuildTarget(guildID), fmt.Sprintf("---\nbot_active: true\nstaff_user_ids: [%s]\n---\n", staff.ID),
		guildcfg.EmptyRevision, guildcfg.Actor{Kind: guildcfg.ActorCLI}); err != nil {
		t.Fatal(err)
	}
	bot, err := discord.New(discord.Options{Store: st, Guilds: guilds, Logger: root, Transport: fake.Transport(), Dialer: fake.Dialer(),
		Token: fake.Token(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	var h *host.Host
	svc, err := New(Options{Store: st, Guilds: guilds, Discord: discord.NewCards(bot), Logger: root, KnownModule: func(name string) bool {
		m, ok := h.Module(name)
		return ok && m.State == host.StateRunning
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	h, err = host.New(ctx, host.Options{Specs: specs, Store: st, Guilds: guilds, Logger: root, Selection: []string{kudos.Name}, SelectionSet: true,
		Discord: bot, Proposals: svc})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	bot.RegisterCoreHandler("proposals", Buttons{S: svc})
	bot.Attach(h)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	bot.Start(ctx)
	defer bot.Close()
	waitFor(t, "the kudos command synced", func() bool {
		return slices.ContainsFunc(fake.Commands(g.ID), func(c *discordgo.ApplicationCommand) bool { return c.Name == "kudos" }) ||
			slices.ContainsFunc(fake.Commands(""), func(c *discordgo.ApplicationCommand) bool { return c.Name == "kudos" })
	})

	iid, err := fake.RunCommand(general, staff.ID, "kudos", &discordgo.ApplicationCommandInteractionDataOption{
		Name: "setup", Type: discordgo.ApplicationCommandOptionSubCommand,
		Options: []*discordgo.ApplicationCommandInteractionDataOption{{Name: "channel", Type: discordgo.ApplicationCommandOptionChannel, Value: general}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: ctx, st: st, guilds: guilds, fake: fake, bot: bot, svc: svc}
	reply := w.reply(iid)
	m := regexp.MustCompile("Proposed \\(`([0-9a-f]{32})`\\)").FindStringSubmatch(reply)
	if m == nil {
		t.Fatalf("/kudos setup replied %q", reply)
	}
	p := w.proposal(m[1])
	if p.Module != kudos.Name || p.Target != guildcfg.GuildModuleTarget(guildID, kudos.Name) || p.Card.ChannelID != parse(general) {
		t.Fatalf("proposal = %+v", p)
	}
	if strings.Contains(logs.String(), "kudos guild settings changed") {
		t.Fatal("kudos' OnChange fired before the approval")
	}
	if got := w.click(p, parse(staff.ID), "approve"); got != ReplyApplied {
		t.Fatalf("approve click: %q", got)
	}
	ms, _ := guilds.ModuleSettings(guildID, kudos.Name)
	if fmt.Sprint(ms.Values[kudos.FieldDigestChannel]) != general {
		t.Fatalf("kudos settings = %+v", ms.Values)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(logs.String(), "kudos guild settings changed") {
		if time.Now().After(deadline) {
			t.Fatal("kudos' OnChange did not fire")
		}
		time.Sleep(5 * time.Millisecond)
	}
	card := w.card(w.proposal(p.ID))
	if card.Embeds[0].Title != TitleApplied || len(buttonsOf(card)) != 0 {
		t.Fatalf("card = %+v", card.Embeds[0])
	}
}
