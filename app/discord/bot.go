package discord

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// SKELETON: the connection work fleshes this file out (token, intents,
// Kimi's reconnect loop, status, the /discord page's model).

// Options configures New.
type Options struct {
	// Store holds the token (a secret setting), the intents and the
	// command-sync state.
	Store *store.Store
	// Guilds is the guild configuration (activation, trust).
	Guilds GuildConfig
	// Bus receives the normalized discord.* events.
	Bus Publisher
	// Logger is the root logger (the bot logs with component=discord).
	Logger *slog.Logger
	// Getenv reads KIMI_DISCORD_TOKEN(_FILE) (nil: os.Getenv).
	Getenv func(string) string
	// Transport and Dialer replace the network (fakediscord in tests and
	// demo mode); nil means the real Discord.
	Transport http.RoundTripper
	Dialer    *websocket.Dialer
	// Cache sizes Kimi's own gateway caches.
	Cache CacheSizes
}

// Bot is Kimi's Discord connection.
type Bot struct {
	opts  Options
	log   *slog.Logger
	cache *Cache
	ing   *ingest
	act   *actions
	ix    *interactions

	mu    sync.Mutex
	sess  *discordgo.Session // connected session, nil when none
	botID atomic.Uint64
	appID atomic.Uint64
}

var (
	_ host.Discord  = (*Bot)(nil)
	_ sessionSource = (*Bot)(nil)
)

// New returns an unconnected bot.
func New(opts Options) (*Bot, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	b := &Bot{opts: opts, log: opts.Logger.With("component", "discord")}
	b.cache = NewCache(opts.Cache)
	b.ing = newIngest(b.log, opts.Bus, opts.Guilds, b.cache, b)
	b.act = newActions(b.log, b, opts.Guilds, b.cache)
	b.ix = newInteractions(b.log, b, opts.Guilds, opts.Store)
	return b, nil
}

// Attach sets the module host interactions are dispatched to; call it
// before Start.
func (b *Bot) Attach(h Host) { b.ix.attach(h) }

func (b *Bot) session() (*discordgo.Session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sess == nil {
		return nil, ErrNotConnected
	}
	return b.sess, nil
}

func (b *Bot) self() (botID, appID uint64) { return b.botID.Load(), b.appID.Load() }

// Actions returns module's Discord actions (host.Discord).
func (b *Bot) Actions(module string) sdk.DiscordActions { return b.act.forModule(module) }

// Tier resolves a member's trust tier (host.Discord).
func (b *Bot) Tier(ctx context.Context, guildID, userID uint64) (sdk.TrustTier, error) {
	return b.act.tier(ctx, guildID, userID)
}

// CommandsChanged re-syncs the commands, debounced (host.Discord).
func (b *Bot) CommandsChanged() { b.ix.commandsChanged() }

// SyncGuildCommands pushes one guild's commands now (host.Discord).
func (b *Bot) SyncGuildCommands(ctx context.Context, guildID uint64) error {
	return b.ix.syncGuild(ctx, guildID)
}
