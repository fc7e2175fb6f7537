package discord

import (
	"context"
	"log/slog"

	"github.com/kimiapp/kimi/app/store"
)

// STUB: the interactions work replaces this file.

type interactions struct{}

func newInteractions(log *slog.Logger, src sessionSource, guilds GuildConfig, st *store.Store) *interactions {
	return &interactions{}
}

// attach sets the host interactions are dispatched to.
func (x *interactions) attach(h Host) {}

// handlers are the discordgo handlers to add to every new session.
func (x *interactions) handlers() []any { return nil }

// commandsChanged re-syncs the commands, debounced.
func (x *interactions) commandsChanged() {}

// syncGuild pushes one guild's command set now.
func (x *interactions) syncGuild(ctx context.Context, guildID uint64) error { return ErrNotConnected }

// close stops pending syncs.
func (x *interactions) close() {}
