package discord

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/bwmarrin/discordgo"
)

// dirRevisions is a number per guild that moves whenever what the
// directory answers about the guild may have changed (its name, channels,
// roles, the names of its cached members), and an epoch that moves for
// every guild at once (a new session's state). A page part rendered from
// the directory is good while the revision it read first is the current
// one: every change to the state is made before its bump (discordgo
// updates its state before it calls the handlers, SyncEvents keeps them in
// order, and the member cache bumps under its lock).
type dirRevisions struct {
	epoch  atomic.Uint64
	guilds sync.Map // uint64 → *atomic.Uint64
}

func (d *dirRevisions) counter(guild uint64) *atomic.Uint64 {
	if c, ok := d.guilds.Load(guild); ok {
		return c.(*atomic.Uint64)
	}
	c, _ := d.guilds.LoadOrStore(guild, new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

func (d *dirRevisions) bump(guild uint64) { d.counter(guild).Add(1) }

// revision is guild's revision: the epoch and its own count, both only
// growing, so their sum never repeats an earlier revision of the guild. A
// guild nothing bumped yet has no counter (0): asking makes none, so ids
// anyone asks about (a /guilds/{id} of any id) take no memory.
func (d *dirRevisions) revision(guild uint64) uint64 {
	if c, ok := d.guilds.Load(guild); ok {
		return d.epoch.Load() + c.(*atomic.Uint64).Load()
	}
	return d.epoch.Load()
}

// DirectoryRevision returns a number that changes whenever what the
// directory (Guild, Channel, Role, Member, the pickers' lists) answers
// about guild may have changed. Read it before reading the directory: a
// render made from what followed is good while the revision stays.
func (b *Bot) DirectoryRevision(guild uint64) uint64 { return b.cache.dir.revision(guild) }

// dirEvents are the handlers that bump a guild's directory revision after
// discordgo's state took an event that changes what the directory reads
// (registered after the state's own handling, which precedes every
// handler).
func (b *Bot) dirEvents() []any {
	d := &b.cache.dir
	bump := func(guildID string) {
		if id, err := strconv.ParseUint(guildID, 10, 64); err == nil {
			d.bump(id)
		}
	}
	return []any{
		func(_ *discordgo.Session, _ *discordgo.Ready) { d.epoch.Add(1) },
		func(_ *discordgo.Session, e *discordgo.GuildCreate) { bump(e.ID) },
		func(_ *discordgo.Session, e *discordgo.GuildUpdate) { bump(e.ID) },
		func(_ *discordgo.Session, e *discordgo.GuildDelete) { bump(e.ID) },
		func(_ *discordgo.Session, e *discordgo.ChannelCreate) { bump(e.GuildID) },
		func(_ *discordgo.Session, e *discordgo.ChannelUpdate) { bump(e.GuildID) },
		func(_ *discordgo.Session, e *discordgo.ChannelDelete) { bump(e.GuildID) },
		func(_ *discordgo.Session, e *discordgo.ThreadCreate) { bump(e.GuildID) },
		func(_ *discordgo.Session, e *discordgo.ThreadUpdate) { bump(e.GuildID) },
		func(_ *discordgo.Session, e *discordgo.ThreadDelete) { bump(e.GuildID) },
		func(_ *discordgo.Session, e *discordgo.ThreadListSync) { bump(e.GuildID) },
		func(_ *discordgo.Session, e *discordgo.GuildRoleCreate) { bump(e.GuildID) },
		func(_ *discordgo.Session, e *discordgo.GuildRoleUpdate) { bump(e.GuildID) },
		func(_ *discordgo.Session, e *discordgo.GuildRoleDelete) { bump(e.GuildID) },
	}
}
