package host

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

// onGuildChange fans a guild-configuration change out to the OnChange
// callbacks of each affected running module, contained and with the
// module's lifetime, then re-checks its invalid-guild health. Each module
// gets its changes on a queue of its own (in order), so a module whose
// callbacks hang delays only itself; one change's callbacks over all its
// guilds share one CallbackTimeout bound, the guilds left when it expires
// are skipped and reported in the module's health.
func (h *Host) onGuildChange(c guildcfg.Change) {
	h.mu.Lock()
	running := slices.Clone(h.started)
	h.mu.Unlock()
	for _, inst := range running {
		if inst.spec.GuildSettings == nil || !inst.running() {
			continue
		}
		var guilds []uint64
		switch {
		case c.Resync:
			guilds = h.guilds.GuildIDs()
		case c.Module == inst.name:
			guilds = []uint64{c.GuildID}
		case c.Module == "" && c.Target.Kind == guildcfg.KindGuild:
			// a server-setup change may flip the module's guild predicate
		default:
			continue
		}
		inst.enqueueChange(func() { h.deliverChange(inst, guilds) })
	}
}

// deliverChange runs inst's OnChange callbacks for guilds under one bound.
func (h *Host) deliverChange(inst *instance, guilds []uint64) {
	if !inst.running() {
		return
	}
	batch, cancel := context.WithTimeout(inst.ctx, h.opts.CallbackTimeout)
	defer cancel()
	skipped := 0
	for i, g := range guilds {
		if batch.Err() != nil {
			skipped = len(guilds) - i
			break
		}
		for _, fn := range inst.onChangeFuncs() {
			_ = h.callback(batch, inst, "guild_settings", "change in "+uintString(g), func(ctx context.Context) error {
				fn(ctx, g)
				return nil
			})
		}
	}
	if skipped > 0 && inst.running() {
		detail := fmt.Sprintf("guild settings change exceeded %s; %d guilds not notified", seconds(h.opts.CallbackTimeout), skipped)
		inst.log.Error(detail)
		h.health.constrain(inst.name, "guild_settings:batch", sdk.HealthDegraded, detail)
	} else if len(guilds) > 0 {
		// A later change that reached all its guilds clears the report
		// (one that names no guild, a server-setup change, does not).
		h.health.constrain(inst.name, "guild_settings:batch", sdk.HealthHealthy, "")
	}
	h.checkGuildSettings(inst.ctx, inst)
}

// checkGuildSettings reports (or clears) "invalid guild settings in …".
func (h *Host) checkGuildSettings(ctx context.Context, inst *instance) {
	if h.guilds == nil || inst.spec.GuildSettings == nil {
		return
	}
	list, err := h.guilds.List(ctx)
	if err != nil {
		inst.log.Warn("reading guild settings failed", "err", err)
		return
	}
	var bad []uint64
	for _, g := range list {
		if slices.Contains(g.InvalidModules, inst.name) {
			bad = append(bad, g.GuildID)
		}
	}
	if len(bad) == 0 {
		h.health.constrain(inst.name, "guild_settings", sdk.HealthHealthy, "")
		return
	}
	h.health.constrain(inst.name, "guild_settings", sdk.HealthDegraded, invalidGuildsDetail(bad))
}

func uintString(v uint64) string { return strconv.FormatUint(v, 10) }

// maxQueuedChanges bounds a module's queue of guild changes: past it the
// backlog collapses into one delivery for every guild (like guildcfg's
// Resync), so a slow module costs bounded memory.
const maxQueuedChanges = 64

// enqueueChange runs fn after the module's earlier guild changes, on a
// goroutine of the module's own (started when the queue fills, ended when
// it empties).
func (i *instance) enqueueChange(fn func()) {
	i.changeMu.Lock()
	defer i.changeMu.Unlock()
	i.changeQueue = append(i.changeQueue, fn)
	if len(i.changeQueue) > maxQueuedChanges {
		h := i.h
		i.changeQueue = append(i.changeQueue[:0], func() { h.deliverChange(i, h.guilds.GuildIDs()) })
	}
	if i.changeRunning {
		return
	}
	i.changeRunning = true
	go func() {
		for {
			i.changeMu.Lock()
			if len(i.changeQueue) == 0 || i.revoked() {
				i.changeQueue, i.changeRunning = nil, false
				i.changeMu.Unlock()
				return
			}
			next := i.changeQueue[0]
			i.changeQueue = i.changeQueue[1:]
			i.changeMu.Unlock()
			next()
		}
	}()
}
