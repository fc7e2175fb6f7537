package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestNewBotDemoConnectsToTheFake: in demo mode the bot connects to the
// built-in fake with the fake's token, whatever token is stored, and the
// stored cache sizes are the ones in use.
func TestNewBotDemoConnectsToTheFake(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	who := settings.Actor{Name: "t"}
	if err := settings.SaveDiscordToken(ctx, st, "a-real-token-that-must-not-be-used", who); err != nil {
		t.Fatal(err)
	}
	if err := settings.SaveDiscordCache(ctx, st, 321, 654, who); err != nil {
		t.Fatal(err)
	}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer guilds.Close()
	fake := fakediscord.New(fakediscord.Options{})
	defer fake.Close()
	demo := fake.SeedDemo()
	bus := events.New(events.Options{Logger: slog.New(slog.DiscardHandler)})
	defer bus.Close(0)
	bot, err := newBot(ctx, st, guilds, bus, slog.New(slog.DiscardHandler), config.Config{Origins: map[string]string{}}, fake)
	if err != nil {
		t.Fatal(err)
	}
	bot.Start(ctx)
	defer bot.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := bot.Status()
		if s.State == discord.StateConnected && len(s.Guilds) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not connected to the fake: %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	s := bot.Status()
	if s.TokenSource != "demo" || s.Guilds[0].ID != demo.GuildID || s.Cache.Messages != 321 || s.Cache.Members != 654 {
		t.Fatalf("status = %+v", s)
	}
	if gs := fake.GatewayStats(); gs.Identifies != 1 {
		t.Fatalf("identifies = %d", gs.Identifies)
	}
}

// TestServiceCapabilitiesOnlyWhenWired: the host advertises proposals.v2
// and scheduled_results.v1 only through the wiring that has the services
// (withServices), with the intents' capabilities kept; the bare intents
// do not carry them.
func TestServiceCapabilitiesOnlyWhenWired(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer guilds.Close()
	h, err := host.New(ctx, host.Options{Store: st, Guilds: guilds, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	caps := discord.Intents{Members: true}.Capabilities()
	if caps.Has(sdk.CapProposals) || caps.Has(sdk.CapScheduledResults) {
		t.Fatal("the intents alone advertise a service's capability")
	}
	if err := h.SetCapabilities(ctx, caps); err != nil {
		t.Fatal(err)
	}
	if h.Capabilities().Has(sdk.CapProposals) || h.Capabilities().Has(sdk.CapScheduledResults) {
		t.Fatal("the host advertises a service's capability without the service")
	}
	if err := (withServices{Host: h, extra: []string{sdk.CapProposals, sdk.CapScheduledResults}}).SetCapabilities(ctx, caps); err != nil {
		t.Fatal(err)
	}
	got := h.Capabilities()
	if !got.Has(sdk.CapProposals) || !got.Has(sdk.CapScheduledResults) || !got.Has(sdk.CapDiscordMembers) || !got.MembersIntent() || got.MessageContentIntent() {
		t.Fatalf("capabilities = %v", got.Names())
	}
}
