package results_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// What DiscordAccess needs, as the appliance provides it.
var (
	_ results.GuildActivity = (*guildcfg.Service)(nil)
	_ results.MemberTiers   = (*discord.Bot)(nil)
	_ results.ChannelViews  = (*discord.ChannelViews)(nil)
)

func parseID(s string) uint64 {
	var v uint64
	fmt.Sscan(s, &v)
	return v
}

// TestDiscordAccess: the Discord side of a producer's access check against
// a real Bot on fakediscord — guild active, the owner's current tier at
// least the minimum, and the owner and the bot both able to view the
// origin and every message's channel; each refusal wraps ErrAccessDenied
// with its reason.
func TestDiscordAccess(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(guilds.Close)

	fake := fakediscord.New(fakediscord.Options{})
	t.Cleanup(fake.Close)
	// The bot is no administrator here, so overwrites apply to it.
	botPerms := int64(discordgo.PermissionViewChannel | discordgo.PermissionSendMessages | discordgo.PermissionReadMessageHistory)
	g := fake.AddGuild(fakediscord.GuildSpec{Name: "g", BotPermissions: &botPerms})
	other := fake.AddGuild(fakediscord.GuildSpec{Name: "other"})
	idle := fake.AddGuild(fakediscord.GuildSpec{Name: "idle"}) // never activated
	staff := fake.AddUser(discordgo.User{Username: "staffer"})
	member := fake.AddUser(discordgo.User{Username: "member"})
	outsider := fake.AddUser(discordgo.User{Username: "outsider"}) // staff by id, not a member
	fake.AddMember(g.ID, staff.ID)
	fake.AddMember(g.ID, member.ID)
	fake.AddMember(other.ID, staff.ID)
	fake.AddMember(idle.ID, staff.ID)
	deny := func(userID string) []*discordgo.PermissionOverwrite {
		return []*discordgo.PermissionOverwrite{{ID: userID, Type: discordgo.PermissionOverwriteTypeMember, Deny: discordgo.PermissionViewChannel}}
	}
	general := parseID(fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "general"}).ID)
	news := parseID(fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "news"}).ID)
	noStaff := parseID(fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "no-staff", Overwrites: deny(staff.ID)}).ID)
	noBot := parseID(fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "no-bot", Overwrites: deny(fake.BotID())}).ID)
	elsewhere := parseID(fake.AddChannel(fakediscord.ChannelSpec{GuildID: other.ID, Name: "elsewhere"}).ID)
	idleCh := parseID(fake.AddChannel(fakediscord.ChannelSpec{GuildID: idle.ID, Name: "idle"}).ID)
	for _, id := range []string{g.ID, other.ID} {
		target := guildcfg.GuildTarget(parseID(id))
		doc, err := guilds.Document(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("---\nbot_active: true\nstaff_user_ids: [%s, %s]\n---\n", staff.ID, outsider.ID)
		if _, err := guilds.Write(ctx, target, text, doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI}); err != nil {
			t.Fatal(err)
		}
	}

	bot, err := discord.New(discord.Options{Store: st, Guilds: guilds, Logger: slog.New(slog.DiscardHandler),
		Transport: fake.Transport(), Dialer: fake.Dialer(), Token: fake.Token(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	views := discord.NewChannelViews(bot)
	access := results.DiscordAccess{Guilds: guilds, Tiers: bot, Channels: views}
	if err := access.Check(ctx, results.Publication{GuildID: parseID(g.ID), OwnerID: parseID(staff.ID), OriginChannelID: general}, sdk.TierMember); err == nil || errors.Is(err, results.ErrAccessDenied) {
		t.Fatalf("Check before the bot connected = %v, want a failure that is no refusal", err)
	}
	bot.Start(ctx)
	t.Cleanup(func() { _ = bot.Close() })
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		// Every guild's GUILD_CREATE came (not only READY's placeholders,
		// whose permissions are unknown).
		if s := bot.Status(); s.State == discord.StateConnected && len(s.Guilds) == 3 &&
			!slices.ContainsFunc(s.Guilds, func(g discord.GuildStatus) bool { return g.Unavailable }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bot did not connect: %+v", bot.Status())
		}
	}
	if views.BotUserID() != parseID(fake.BotID()) {
		t.Fatalf("BotUserID = %d, want %s", views.BotUserID(), fake.BotID())
	}

	msgs := func(channels ...uint64) []sdk.ScheduledResultMessage {
		var out []sdk.ScheduledResultMessage
		for i, c := range channels {
			out = append(out, sdk.ScheduledResultMessage{Message: sdk.MessageRef{GuildID: parseID(g.ID), ChannelID: c, MessageID: uint64(100 + i)}})
		}
		return out
	}
	gid, staffID, memberID, outsiderID := parseID(g.ID), parseID(staff.ID), parseID(member.ID), parseID(outsider.ID)
	cases := []struct {
		name    string
		p       results.Publication
		min     sdk.TrustTier
		wantErr string // "" allowed; else the refusal's exact text
	}{
		{"staff owner, visible channels", results.Publication{GuildID: gid, OwnerID: staffID, OriginChannelID: general, Messages: msgs(general, news)}, sdk.TierStaff, ""},
		{"no origin, default minimum", results.Publication{GuildID: gid, OwnerID: memberID, Messages: msgs(news)}, 0, ""},
		{"owner below the minimum", results.Publication{GuildID: gid, OwnerID: memberID, OriginChannelID: general, Messages: msgs(general)}, sdk.TierStaff,
			fmt.Sprintf("results: access denied: owner %d is member, below staff", memberID)},
		{"guild not active", results.Publication{GuildID: parseID(idle.ID), OwnerID: staffID, OriginChannelID: idleCh, Messages: msgs(idleCh)}, sdk.TierMember,
			fmt.Sprintf("results: access denied: guild %s is not active", idle.ID)},
		{"owner left the guild", results.Publication{GuildID: gid, OwnerID: outsiderID, Messages: msgs(general)}, sdk.TierStaff,
			fmt.Sprintf("results: access denied: owner %d cannot view channel %d", outsiderID, general)},
		{"origin hidden from the owner", results.Publication{GuildID: gid, OwnerID: staffID, OriginChannelID: noStaff, Messages: msgs(general)}, sdk.TierMember,
			fmt.Sprintf("results: access denied: owner %d cannot view channel %d", staffID, noStaff)},
		{"output hidden from the bot", results.Publication{GuildID: gid, OwnerID: staffID, OriginChannelID: general, Messages: msgs(general, noBot)}, sdk.TierMember,
			fmt.Sprintf("results: access denied: the bot cannot view channel %d", noBot)},
		{"output in another guild", results.Publication{GuildID: gid, OwnerID: staffID, Messages: msgs(general, elsewhere)}, sdk.TierMember,
			fmt.Sprintf("results: access denied: owner %d cannot view channel %d", staffID, elsewhere)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := access.Check(ctx, c.p, c.min)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, results.ErrAccessDenied) || err.Error() != c.wantErr {
				t.Fatalf("Check = %v, want %q (results.ErrAccessDenied)", err, c.wantErr)
			}
		})
	}
}
