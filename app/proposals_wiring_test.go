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

// TestProposalsCapabilityOnlyWhenWired: the host advertises proposals.v2
// only through the wiring that has the proposals service (withProposals),
// with the intents' capabilities kept; the bare intents do not carry it.
func TestProposalsCapabilityOnlyWhenWired(t *testing.T) {
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
	if caps.Has(sdk.CapProposals) {
		t.Fatal("the intents alone advertise proposals.v2")
	}
	if err := h.SetCapabilities(ctx, caps); err != nil {
		t.Fatal(err)
	}
	if h.Capabilities().Has(sdk.CapProposals) {
		t.Fatal("the host advertises proposals.v2 without the service")
	}
	if err := (withProposals{h}).SetCapabilities(ctx, caps); err != nil {
		t.Fatal(err)
	}
	got := h.Capabilities()
	if !got.Has(sdk.CapProposals) || !got.Has(sdk.CapDiscordMembers) || !got.MembersIntent() || got.MessageContentIntent() {
		t.Fatalf("capabilities = %v", got.Names())
	}
}
