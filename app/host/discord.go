package host

import (
	"context"

	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Discord is what the host needs of the Discord connection; *discord.Bot is
// the production one. Nil (no connection configured) keeps every Discord
// action failing with ErrDiscordNotConnected after the declaration check.
type Discord interface {
	// Actions returns module's Discord actions. The host has already
	// checked the action against the module's declaration and revocation;
	// the connection applies the guild, channel and target rules.
	Actions(module string) sdk.DiscordActions
	// Tier resolves a member's trust tier from their roles (gateway cache,
	// else a fetch).
	Tier(ctx context.Context, guildID, userID uint64) (sdk.TrustTier, error)
	// CommandsChanged tells the connection the set of registered commands
	// changed after READY (it re-syncs, debounced).
	CommandsChanged()
	// SyncGuildCommands pushes one guild's command set to Discord now; a
	// failure is returned (the port wraps it in *sdk.CommandSyncError).
	SyncGuildCommands(ctx context.Context, guildID uint64) error
}

// CommandsReadier is a Discord connection that can sync the commands at
// once when the host's start has registered them all, instead of waiting
// out CommandsChanged's debounce (discord.Bot).
type CommandsReadier interface {
	CommandsReady()
}

// Bus is the host's event bus (nil when a test replaced it): the Discord
// connection publishes the normalized discord.* events on it.
func (h *Host) Bus() *events.Bus { return h.bus }
