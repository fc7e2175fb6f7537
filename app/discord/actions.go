package discord

import (
	"context"
	"log/slog"

	"github.com/kimiapp/kimi/modules/sdk"
)

// STUB: the actions work replaces this file.

type actions struct{}

func newActions(log *slog.Logger, src sessionSource, guilds GuildConfig, cache *Cache) *actions {
	return &actions{}
}

// forModule returns module's view of the Discord actions (audit reasons
// carry its name).
func (a *actions) forModule(module string) sdk.DiscordActions { return nil }

// tier resolves a member's trust tier from their roles (cache, else fetch).
func (a *actions) tier(ctx context.Context, guildID, userID uint64) (sdk.TrustTier, error) {
	return sdk.TierMember, nil
}
