package discord

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// resyncSpecs is a set with every shape Kimi converts: a group of two
// subcommands, a required option after an optional one, string and integer
// choices, an integer's bounds.
func resyncSpecs() []sdk.CommandSpec {
	return []sdk.CommandSpec{
		{Name: "give", Group: "kudos", GroupDescription: "Kudos", Description: "Give kudos", MinTier: sdk.TierMember,
			Options: []sdk.CommandOption{
				{Name: "reason", Kind: sdk.OptionString, Description: "Why"},
				{Name: "member", Kind: sdk.OptionUser, Description: "Who", Required: true},
			}},
		{Name: "top", Group: "kudos", Description: "The leaderboard", MinTier: sdk.TierMember,
			Options: []sdk.CommandOption{{Name: "days", Kind: sdk.OptionInteger, Description: "Days",
				MinValue: new(int64(1)), MaxValue: new(int64(30)), Choices: nil}}},
		{Name: "color", Description: "Pick a color", MinTier: sdk.TierMember,
			Options: []sdk.CommandOption{
				{Name: "name", Kind: sdk.OptionString, Description: "Color", Required: true,
					Choices: []sdk.Choice{{Name: "Red", Value: "red"}, {Name: "Blue", Value: "blue"}}},
				{Name: "shade", Kind: sdk.OptionInteger, Description: "Shade",
					Choices: []sdk.Choice{{Name: "light", Value: 1}, {Name: "dark", Value: 2}}},
			}},
	}
}

// TestIxSyncChecksDiscordsList: a set synced once is pushed again on the
// next connect only when Discord's own list no longer has it (the commands
// deleted on the developer portal, a fresh fake, another set put there) or
// the application is another one; with the same application and Discord's
// list unchanged there is no second overwrite. Global and per-guild scopes.
func TestIxSyncChecksDiscordsList(t *testing.T) {
	const otherApp = "900000000000000077"
	cases := []struct {
		name  string
		guild bool
		// change alters Discord's side between the two syncs; it returns the
		// fake and application the second sync goes to.
		change   func(t *testing.T, f *fakediscord.Server, s *discordgo.Session, guild string) (*fakediscord.Server, *discordgo.Session, string)
		wantPUTs int // the second sync's overwrites
	}{
		{name: "unchanged", wantPUTs: 0,
			change: func(_ *testing.T, f *fakediscord.Server, s *discordgo.Session, _ string) (*fakediscord.Server, *discordgo.Session, string) {
				return f, s, f.AppID()
			}},
		{name: "unchanged guild", guild: true, wantPUTs: 0,
			change: func(_ *testing.T, f *fakediscord.Server, s *discordgo.Session, _ string) (*fakediscord.Server, *discordgo.Session, string) {
				return f, s, f.AppID()
			}},
		{name: "deleted on Discord", wantPUTs: 1, change: clearCommands},
		{name: "deleted on Discord guild", guild: true, wantPUTs: 1, change: clearCommands},
		{name: "another set on Discord", wantPUTs: 1,
			change: func(t *testing.T, f *fakediscord.Server, s *discordgo.Session, guild string) (*fakediscord.Server, *discordgo.Session, string) {
				if _, err := s.ApplicationCommandBulkOverwrite(f.AppID(), guild, []*discordgo.ApplicationCommand{
					{Name: "color", Description: "Pick a colour"}}); err != nil {
					t.Fatal(err)
				}
				return f, s, f.AppID()
			}},
		{name: "another application", wantPUTs: 1,
			change: func(t *testing.T, _ *fakediscord.Server, _ *discordgo.Session, _ string) (*fakediscord.Server, *discordgo.Session, string) {
				f := newFake(t, fakediscord.Options{AppID: otherApp})
				return f, openSession(t, f, discordgo.IntentsGuilds), otherApp
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if _, err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			f := newFake(t, fakediscord.Options{})
			var guild string
			var guildID uint64
			if tc.guild {
				guild = f.AddGuild(fakediscord.GuildSpec{Name: "g"}).ID
				guildID = parseID(guild)
			}
			s := openSession(t, f, discordgo.IntentsGuilds)
			x := newInteractions(slog.New(slog.DiscardHandler), newTestSource(f, s), nil, st)
			t.Cleanup(x.close)
			route := globalPUT
			if tc.guild {
				route = "PUT /applications/{app}/guilds/{guild}/commands"
			}

			if err := x.push(ctx, s, f.AppID(), guildID, resyncSpecs(), false); err != nil {
				t.Fatal(err)
			}
			if n := len(f.RequestsTo(route)); n != 1 {
				t.Fatalf("first sync's overwrites = %d, want 1", n)
			}
			f2, s2, app := tc.change(t, f, s, guild)
			before := len(f2.RequestsTo(route))
			if err := x.push(ctx, s2, app, guildID, resyncSpecs(), false); err != nil {
				t.Fatal(err)
			}
			if n := len(f2.RequestsTo(route)) - before; n != tc.wantPUTs {
				t.Fatalf("second sync's overwrites = %d, want %d", n, tc.wantPUTs)
			}
			got := map[string]bool{}
			for _, c := range f2.Commands(guild) {
				got[c.Name] = true
			}
			if len(got) != 2 || !got["kudos"] || !got["color"] {
				t.Fatalf("Discord's commands after the second sync = %v, want kudos and color", got)
			}
			// A third sync over the set Discord now has sends nothing.
			before = len(f2.RequestsTo(route))
			if err := x.push(ctx, s2, app, guildID, resyncSpecs(), false); err != nil {
				t.Fatal(err)
			}
			if n := len(f2.RequestsTo(route)) - before; n != 0 {
				t.Fatalf("third sync's overwrites = %d, want 0", n)
			}
		})
	}
}

// clearCommands deletes the scope's commands on Discord (as the developer
// portal would).
func clearCommands(t *testing.T, f *fakediscord.Server, s *discordgo.Session, guild string) (*fakediscord.Server, *discordgo.Session, string) {
	if _, err := s.ApplicationCommandBulkOverwrite(f.AppID(), guild, []*discordgo.ApplicationCommand{}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Commands(guild)); n != 0 {
		t.Fatalf("commands after clearing = %d", n)
	}
	return f, s, f.AppID()
}
