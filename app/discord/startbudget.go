package discord

import (
	"context"
	"fmt"
	"time"

	"github.com/bwmarrin/discordgo"
)

// The session start budget. Discord allows a bot SessionStartLimit.Total
// Identifies per window (1,000 a day is usual) and, past it, resets the
// bot's token for the rest of the window. Before each Identify the loop
// reads gateway/bot afresh (the count Discord keeps, so a restart or a
// second process using the token is seen) and does not identify when that
// would leave fewer than the reserve: max(startReserveMin, 5% of Total).
// The reserve keeps room for the operator's own reconnects (which may
// spend it, down to the last start) and for what the count cannot see in
// time (another process identifying with the same token between the read
// and Kimi's Identify). Stopped for the budget, the loop waits, on one
// timer, until the window resets, then goes on by itself; nothing polls.
// When gateway/bot cannot be read, the last reading is used, less the
// Identifies the frame filter saw written since (frames_session.go).

// startReserveMin is the least reserve of session starts the loop keeps.
const startReserveMin = 10

// A budget stop waits until the reset plus startBudgetMargin (reset_after
// is in milliseconds, and clocks differ), and at least startBudgetRetryMin
// (a window Discord reports as already reset is read again after it, not
// at once).
const (
	startBudgetMargin   = time.Second
	startBudgetRetryMin = time.Minute
)

// startReserve is the reserve kept of total session starts.
func startReserve(total int) int {
	return max(startReserveMin, total/20)
}

// StartLimitStop is a stop for the session start budget: the loop does not
// identify until ResetAt (or the operator's Reconnect).
type StartLimitStop struct {
	Remaining, Total, Reserve int
	ResetAt                   time.Time
}

// Message explains the stop and what follows.
func (s StartLimitStop) Message() string {
	return fmt.Sprintf("Discord's session start budget is nearly spent (%d of %d left, resets at %s); "+
		"Kimi keeps %d in reserve and stopped reconnecting until then. It connects again by itself at the reset; "+
		"Reconnect now spends one from the reserve.",
		s.Remaining, s.Total, s.ResetAt.UTC().Format("2006-01-02 15:04 UTC"), s.Reserve)
}

// clock is the reconnect loop's time: its backoff waits, the "stayed up"
// rule and the budget's reset. Tests drive it by hand.
type clock interface {
	Now() time.Time
	// After is a timer: its channel receives once d has passed; stop
	// cancels it.
	After(d time.Duration) (c <-chan time.Time, stop func())
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) After(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTimer(d)
	return t.C, func() { t.Stop() }
}

var _ clock = realClock{}

// onIdentify hears each Identify the frame filter saw written.
func (b *Bot) onIdentify() {
	defer b.watch.Notify()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.identifies++
	if b.startLimit.Total > 0 && b.startLimit.Remaining > 0 {
		b.startLimit.Remaining--
	}
	b.log.Debug("identify sent", "session_starts_left", b.startLimit.Remaining)
}

// onInvalidated hears an Invalid Session the frame filter turned into the
// end of the connection.
func (b *Bot) onInvalidated(resumable bool) {
	v := int32(invalidResumable)
	if !resumable {
		v = invalidFresh
	}
	b.invalidated.Store(v)
}

// What an Invalid Session left for the next attempt (Bot.invalidated).
const (
	invalidNone = iota
	invalidResumable
	invalidFresh
)

// readStartLimit reads gateway/bot: the shards and the session start
// limit, its reset as a moment on the loop's clock.
func (b *Bot) readStartLimit(ctx context.Context, sess *discordgo.Session) error {
	ctx, cancel := context.WithTimeout(ctx, infoTimeout)
	defer cancel()
	gb, err := sess.GatewayBot(requestOptions(ctx)...)
	if err != nil {
		return fmt.Errorf("discord: read gateway/bot: %w", err)
	}
	l := gb.SessionStartLimit
	if l.Total < 0 || l.Remaining < 0 || l.Remaining > l.Total || l.ResetAfter < 0 {
		return fmt.Errorf("discord: read gateway/bot: implausible session_start_limit %+v", l)
	}
	reset := time.Duration(l.ResetAfter) * time.Millisecond
	b.mu.Lock()
	b.shards = gb.Shards
	b.startLimit = SessionStartLimit{Total: l.Total, Remaining: l.Remaining, ResetAfter: reset,
		ResetAt: b.clock.Now().Add(reset), MaxConcurrency: l.MaxConcurrency}
	b.mu.Unlock()
	if gb.Shards > 1 {
		b.log.Warn("Discord recommends more shards than Kimi runs", "recommended", gb.Shards)
	}
	return nil
}

// startAllowed reads the budget before an Identify and says whether it
// may be sent: nil, or the stop. manual (the operator's Reconnect) may
// spend the reserve down to the last start.
func (b *Bot) startAllowed(ctx context.Context, sess *discordgo.Session, manual bool) *StartLimitStop {
	readErr := b.readStartLimit(ctx, sess)
	if readErr != nil {
		b.log.Warn("reading the session start limit failed; counting from the last reading", "err", readErr)
	}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.startLimit
	if l.Total == 0 {
		return nil // never read: nothing to go by
	}
	if readErr != nil && !l.ResetAt.After(now) && l.Remaining < l.Total {
		// The window reset since the last reading, which is all there is
		// to go by: Discord's count starts again.
		l.Remaining, l.ResetAt = l.Total, now.Add(24*time.Hour)
		b.startLimit = l
	}
	floor := startReserve(l.Total)
	if manual {
		floor = 0
	}
	if l.Remaining-1 >= floor {
		return nil
	}
	return &StartLimitStop{Remaining: l.Remaining, Total: l.Total, Reserve: startReserve(l.Total), ResetAt: l.ResetAt}
}

// stopForBudget records a budget stop.
func (b *Bot) stopForBudget(st *StartLimitStop) {
	defer b.watch.Notify()
	b.log.Error("session start budget nearly spent; not identifying until it resets",
		"remaining", st.Remaining, "total", st.Total, "reserve", st.Reserve, "reset_at", st.ResetAt)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.reason, b.fatal, b.retryAt, b.sess = StateStopped, st.Message(), nil, st.ResetAt, nil
	b.cache.dir.epoch.Add(1)
	b.budget = st
}

// waitBudget waits out a budget stop: until its reset (true), a Reconnect
// (true, w set) or ctx's end (false).
func (b *Bot) waitBudget(ctx context.Context, st *StartLimitStop) (w *wakeup, ok bool) {
	wait := max(st.ResetAt.Sub(b.clock.Now())+startBudgetMargin, startBudgetRetryMin)
	c, stop := b.clock.After(wait)
	defer stop()
	select {
	case <-ctx.Done():
		return nil, false
	case wk := <-b.wake:
		return &wk, true
	case <-c:
		b.log.Info("session start budget reset; connecting again")
		return nil, true
	}
}
