package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

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
