package discord

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// guildArrivalWait is how long AwaitReady waits, after READY, for guilds
// that READY listed and that have not arrived: a guild in an outage stays
// unavailable, and discord.py's on_ready gives such guilds about 2 s.
const guildArrivalWait = 5 * time.Second

// ErrNoToken is AwaitReady's answer when no token is configured: there is
// no gateway to wait for.
var ErrNoToken = errors.New("discord: no bot token is configured")

// AwaitReady waits until the gateway is ready as the original host's
// on_ready means it: the current session's READY came and every guild it
// listed has arrived (its GUILD_CREATE) or, for a guild still
// unavailable (an outage), guildArrivalWait after READY, so a module's
// Start may call Discord. It returns nil then; ErrNoToken at once without a token; an
// error naming the reason at once when the bot stopped (a fatal close);
// ctx's error when ctx ends first (the caller bounds the wait). Call it
// after Start.
func (b *Bot) AwaitReady(ctx context.Context) error {
	token, _, err := b.currentToken(ctx)
	if err != nil {
		return fmt.Errorf("discord: await ready: %w", err)
	}
	if token == "" {
		return ErrNoToken
	}
	changed := b.Watch(ctx)
	var arrival <-chan time.Time // armed at READY: the guilds still to come get guildArrivalWait
	for {
		st := b.Status()
		ready := st.State == StateConnected && b.ready.Load()
		switch {
		case st.State == StateStopped:
			return fmt.Errorf("discord: await ready: the bot stopped: %s", st.Reason)
		case ready && allArrived(st.Guilds):
			return nil
		case ready && arrival == nil:
			t := time.NewTimer(b.guildArrival)
			defer t.Stop()
			arrival = t.C
		}
		select {
		case _, ok := <-changed:
			if !ok {
				return fmt.Errorf("discord: await ready: %w", context.Cause(ctx))
			}
		case <-arrival:
			b.log.Warn("starting without the guilds that are still unavailable", "waited", b.guildArrival)
			return nil
		case <-ctx.Done():
			return fmt.Errorf("discord: await ready: %w", context.Cause(ctx))
		}
	}
}

// allArrived reports whether no guild of READY is still unavailable.
func allArrived(gs []GuildStatus) bool {
	for _, g := range gs {
		if g.Unavailable {
			return false
		}
	}
	return true
}
