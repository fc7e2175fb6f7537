package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestPrepareDemo: the first start of a demo data directory makes Kimi
// active in the demo guild (its moderators staff, its regulars regular) with
// both privileged intents on; a later start leaves the operator's changes
// alone; the demo guild keeps its ids across restarts.
func TestPrepareDemo(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(guilds.Close)

	f1 := fakediscord.New(fakediscord.Options{})
	d := f1.SeedDemo()
	f1.Close()
	f2 := fakediscord.New(fakediscord.Options{})
	if again := f2.SeedDemo(); again.GuildID != d.GuildID || again.ModRole != d.ModRole || again.Members[0] != d.Members[0] || again.Channels[1] != d.Channels[1] {
		t.Fatalf("the demo guild's ids changed between starts: %+v then %+v", d, again)
	}
	f2.Close()

	if _, err := prepareDemo(ctx, st, guilds, d); err != nil {
		t.Fatal(err)
	}
	gid, _ := strconv.ParseUint(d.GuildID, 10, 64)
	if !guilds.Active(gid) {
		t.Fatal("the demo guild is not active after the first start")
	}
	mod, _ := strconv.ParseUint(d.Members[0], 10, 64)
	modRole, _ := strconv.ParseUint(d.ModRole, 10, 64)
	regRole, _ := strconv.ParseUint(d.RegularRole, 10, 64)
	if got := guilds.Resolve(gid, mod, []uint64{modRole}); got != sdk.TierStaff {
		t.Fatalf("a moderator resolves to %v, want staff", got)
	}
	if got := guilds.Resolve(gid, mod, []uint64{regRole}); got != sdk.TierRegular {
		t.Fatalf("a regular resolves to %v, want regular", got)
	}
	ds, err := settings.LoadDiscord(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if !ds.Members || !ds.MessageContent {
		t.Fatalf("intents after the first demo start = %+v, want both on", ds)
	}

	// The operator switches Kimi off in the demo guild and the intents off:
	// the next start keeps that.
	target := guildcfg.GuildTarget(gid)
	doc, err := guilds.Document(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guilds.Write(ctx, target, "---\nbot_active: false\n---\n", doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorAdmin, Name: "admin"}); err != nil {
		t.Fatal(err)
	}
	if err := settings.SaveDiscordIntents(ctx, st, false, false, settings.Actor{Name: "admin"}); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareDemo(ctx, st, guilds, d); err != nil {
		t.Fatal(err)
	}
	if guilds.Active(gid) {
		t.Fatal("a later demo start switched the demo guild back on")
	}
	if ds, _ := settings.LoadDiscord(ctx, st); ds.Members || ds.MessageContent {
		t.Fatalf("a later demo start changed the operator's intents: %+v", ds)
	}
}
