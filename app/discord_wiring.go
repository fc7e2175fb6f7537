package app

import (
	"context"
	"log/slog"

	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// newBot builds the Discord connection: the token from KIMI_DISCORD_TOKEN(_FILE)
// or the one stored on /discord, the cache sizes stored there (read once: a
// change applies at the next start). In demo mode (fake non-nil) it
// connects to the built-in fake Discord with the fake's token, whatever is
// stored: the real Discord is never contacted.
func newBot(ctx context.Context, st *store.Store, guilds *guildcfg.Service, bus discord.Publisher, root *slog.Logger,
	cfg config.Config, fake *fakediscord.Server) (*discord.Bot, error) {
	ds, err := settings.LoadDiscord(ctx, st)
	if err != nil {
		return nil, err
	}
	opts := discord.Options{
		Store: st, Guilds: guilds, Bus: bus, Logger: root,
		Token: cfg.DiscordToken.Reveal(), TokenSource: cfg.Origins[config.KeyDiscordToken],
		Getenv: func(string) string { return "" }, // config resolved KIMI_DISCORD_TOKEN(_FILE)
		Cache:  discord.CacheSizes{Messages: ds.CacheMessages, Members: ds.CacheMembers},
	}
	if fake != nil {
		opts.Transport, opts.Dialer = fake.Transport(), fake.Dialer()
		opts.Token, opts.TokenSource = fake.Token(), "demo"
	}
	return discord.New(opts)
}

// withServices is the module host as the bot sees it when core services
// are wired: every capability set the bot advertises (those of the stored
// intents) gains the capabilities only a wired service honours —
// proposals.v2 (the proposals service) and scheduled_results.v1 (the
// results outbox) — listed in extra.
type withServices struct {
	*host.Host
	extra []string
}

// SetCapabilities adds the wired services' capabilities to caps.
func (h withServices) SetCapabilities(ctx context.Context, caps sdk.Capabilities) error {
	return h.Host.SetCapabilities(ctx, withCapabilities(caps, h.extra...))
}

// withCapabilities returns caps with names added (the intents kept).
func withCapabilities(caps sdk.Capabilities, names ...string) sdk.Capabilities {
	return sdk.NewCapabilities(append(caps.Names(), names...), caps.MembersIntent(), caps.MessageContentIntent())
}

var (
	_ discord.Host             = withServices{}
	_ discord.CapabilitySetter = withServices{}
)
