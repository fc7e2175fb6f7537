package discord

import (
	"context"
	"errors"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
)

// ErrNotConnected is returned by every Discord call while no gateway
// session is connected.
var ErrNotConnected = errors.New("discord: not connected")

// sessionSource yields the connected session; *Bot is the production one,
// tests use a session opened against fakediscord.
type sessionSource interface {
	// session returns the connected session, or ErrNotConnected.
	session() (*discordgo.Session, error)
	// self returns the bot's user id and its application id (0 before the
	// first READY).
	self() (botID, appID uint64)
}

// GuildConfig is what the connection needs of the guild configuration;
// *guildcfg.Service implements it.
type GuildConfig interface {
	// Active reports whether Kimi is active in the guild.
	Active(guildID uint64) bool
	// Resolve returns a member's trust tier from their roles.
	Resolve(guildID, userID uint64, roles []uint64) sdk.TrustTier
}

// Publisher publishes core events; *events.Bus implements it.
type Publisher interface {
	PublishCore(topic string, payload any) error
}

// Host is what the connection needs of the module host; *host.Host
// implements it.
type Host interface {
	// RunCommand, RunAutocomplete and RunComponent dispatch an interaction
	// (commands by qualified name, "group.name" or "name"); refusals are
	// host.ErrNoHandler, host.ErrUnavailable, host.ErrExpired or a
	// *host.TierError, any other error is the handler's.
	RunCommand(ctx context.Context, name string, tier sdk.TrustTier, in sdk.Interaction) error
	RunAutocomplete(ctx context.Context, name string, tier sdk.TrustTier, in sdk.Interaction, option, current string) ([]sdk.Choice, error)
	RunComponent(ctx context.Context, kind sdk.ComponentKind, tier sdk.TrustTier, in sdk.Interaction) error
	// Commands are every module's global commands.
	Commands() []sdk.CommandSpec
	// GuildCommands are every module's commands for one guild.
	GuildCommands(guildID uint64) []sdk.CommandSpec
	// CommandGuilds are the guilds with guild commands staged or recorded
	// (a gone module's, which the next sync clears).
	CommandGuilds(ctx context.Context) ([]uint64, error)
	// GuildCommandsSynced tells the host Discord has the guild's set now.
	GuildCommandsSynced(ctx context.Context, guildID uint64) error
}

// requestOptions are the options of every REST call Kimi makes for a module
// or for itself: the caller's ctx bounds the request and Kimi's transport's
// rate-limit waits; discordgo neither sleeps on a 429 (uncancellable, under
// its bucket lock) nor repeats a request after a 502 (a POST may have been
// processed).
func requestOptions(ctx context.Context, extra ...discordgo.RequestOption) []discordgo.RequestOption {
	return append([]discordgo.RequestOption{
		discordgo.WithContext(ctx),
		discordgo.WithRetryOnRatelimit(false),
		discordgo.WithRestRetries(0),
	}, extra...)
}
