package discord

import (
	"log/slog"
)

// STUB: the events work replaces this file (normalization, Kimi's caches).

// CacheSizes bound Kimi's own gateway caches; zero fields take defaults.
type CacheSizes struct {
	// Messages is how many recent messages are kept for the before-content
	// of edits and deletes.
	Messages int
	// Members is how many guild members (with their roles) are kept.
	Members int
}

// Cache is Kimi's bounded cache of gateway state: recent messages, members
// and their roles, the bot's own message ids.
type Cache struct{}

// NewCache returns an empty cache bounded by sizes.
func NewCache(sizes CacheSizes) *Cache { return &Cache{} }

// MemberRoles returns a cached member's role ids.
func (c *Cache) MemberRoles(guildID, userID uint64) ([]uint64, bool) { return nil, false }

// ingest normalizes gateway events into discord.* topics.
type ingest struct{}

func newIngest(log *slog.Logger, pub Publisher, guilds GuildConfig, cache *Cache, src sessionSource) *ingest {
	return &ingest{}
}

// handlers are the discordgo handlers to add to every new session.
func (in *ingest) handlers() []any { return nil }
