package assistant

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/sdk"
)

// The limits' refusals (issue 26 item 2; the original has none, reference
// assistant.md §10).
const (
	// DailyBudgetText refuses a trigger once the member's or the guild's
	// daily token budget is spent.
	DailyBudgetText = "I've reached today's usage limit here. It resets at 00:00 UTC."
	// MonthlyBudgetText refuses a trigger once the global monthly cap is
	// spent.
	MonthlyBudgetText = "I've reached this month's usage limit. It resets on the 1st at 00:00 UTC."
)

// RateWindow is the sliding window of settings' user_turns_per_10min.
const RateWindow = 10 * time.Minute

// RateLimitText refuses a member's trigger past their turns in
// RateWindow; wait is how long until the oldest of them leaves it.
func RateLimitText(wait time.Duration) string {
	s := int64((wait + time.Second - 1) / time.Second)
	return "You're asking faster than I can answer. Try again in " + strconv.FormatInt(max(s, 1), 10) + " s."
}

// rateKey is one member in one guild (0 for DMs).
type rateKey struct{ guild, user uint64 }

// rateEntry is a member's admitted turns in the window, oldest first, and
// whether the refusal was already said since the window filled.
type rateEntry struct {
	starts []time.Time
	told   bool
}

// rateWindow counts each member's admitted turns per guild over the last
// RateWindow, in memory (a restart forgets it; the daily budgets are the
// durable limit).
type rateWindow struct {
	mu sync.Mutex
	m  map[rateKey]*rateEntry
	// sweepAt is the map's size at which the next check or take drops
	// every member whose window is empty (then twice what is left, at
	// least minSweep: amortized constant time per call).
	sweepAt int
}

// minSweep is the smallest map the window sweeps.
const minSweep = 4096

func (w *rateWindow) entry(k rateKey, now time.Time) *rateEntry {
	if w.m == nil {
		w.m = map[rateKey]*rateEntry{}
	}
	if len(w.m) >= max(w.sweepAt, minSweep) {
		for key, e := range w.m {
			if e.expire(now); len(e.starts) == 0 {
				delete(w.m, key)
			}
		}
		w.sweepAt = 2 * len(w.m)
	}
	e := w.m[k]
	if e == nil {
		e = &rateEntry{}
		w.m[k] = e
	}
	e.expire(now)
	return e
}

func (e *rateEntry) expire(now time.Time) {
	i := 0
	for i < len(e.starts) && !now.Before(e.starts[i].Add(RateWindow)) {
		i++
	}
	e.starts = e.starts[i:]
	if len(e.starts) == 0 {
		e.told = false
	}
}

// check reports, without counting a turn, whether k is at limit: then
// wait until the window frees, and say is true the first time only (the
// one reply before silence).
func (w *rateWindow) check(k rateKey, now time.Time, limit int) (limited bool, wait time.Duration, say bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.entry(k, now)
	if len(e.starts) < limit {
		return false, 0, false
	}
	say = !e.told
	e.told = true
	return true, e.starts[len(e.starts)-limit].Add(RateWindow).Sub(now), say
}

// take counts an admitted turn of k, or refuses as check does when the
// window filled meanwhile.
func (w *rateWindow) take(k rateKey, now time.Time, limit int) (limited bool, wait time.Duration, say bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.entry(k, now)
	if len(e.starts) >= limit {
		say = !e.told
		e.told = true
		return true, e.starts[len(e.starts)-limit].Add(RateWindow).Sub(now), say
	}
	e.starts = append(e.starts, now)
	e.told = false
	return false, 0, false
}

// refusal is a trigger the limits refused: the text to reply (""
// for silence) and the roll-up's kind.
type refusal struct {
	text, kind string
}

// exempt reports whether the caller passes every limit: the bot owner
// always, staff when the setting says so.
func exempt(in Incoming, l settings.AssistantLimits) bool {
	return in.Owner || (l.ExemptStaff && in.Tier.AtLeast(sdk.TierStaff))
}

// guildBudget is the guild's daily token budget: its document's
// assistant.daily_tokens, else the setting.
func (a *Assistant) guildBudget(in Incoming, l settings.AssistantLimits) int64 {
	if a.o.Guilds != nil {
		if p, ok := a.o.Guilds.AssistantFor(in.Place.GuildID, in.Place.ChannelID, in.Place.ParentID); ok && p.DailyTokens > 0 {
			return p.DailyTokens
		}
	}
	return l.GuildDailyTokens
}

// limit applies the limits to an admitted trigger before any row or
// provider call: the member's rate in RateWindow, then the daily budgets
// (the member's in this guild, the guild's) and the monthly cap, from the
// roll-up. ok is true when the turn may run (it is then counted in the
// rate window).
func (a *Assistant) limit(ctx context.Context, in Incoming, log *slog.Logger) (refusal, bool) {
	l, err := settings.LoadAssistantLimits(ctx, a.o.Settings)
	if err != nil {
		log.Warn("limit settings unreadable, using the defaults", "err", err)
		l = settings.DefaultAssistantLimits()
	}
	if exempt(in, l) {
		return refusal{}, true
	}
	now := a.clock.Now()
	key := rateKey{in.Place.GuildID, in.UserID}
	rated := func(wait time.Duration, say bool) refusal {
		r := refusal{kind: UsageRateLimit}
		// /ask is always answered: its deferred response would
		// otherwise stand as "thinking" (it is no channel message).
		if say || in.Kind == KindAsk {
			r.text = RateLimitText(wait)
		}
		return r
	}
	if limited, wait, say := a.rate.check(key, now, l.UserTurnsPer10Min); limited {
		return rated(wait, say), false
	}
	spent, err := a.o.Store.Spent(ctx, in.Place.GuildID, in.UserID, now, l.MonthlyTokens > 0)
	if err != nil {
		// Fail open: a budget unread is no reason to refuse; the rate
		// limit still holds.
		log.Warn("reading the tokens spent failed; the budgets are not applied", "err", err)
	} else {
		switch {
		case l.MonthlyTokens > 0 && spent.AllMonth >= l.MonthlyTokens:
			return refusal{text: MonthlyBudgetText, kind: UsageBudget}, false
		case spent.UserDay >= l.UserDailyTokens:
			return refusal{text: DailyBudgetText, kind: UsageBudget}, false
		case in.Place.GuildID != 0 && spent.GuildDay >= a.guildBudget(in, l):
			return refusal{text: DailyBudgetText, kind: UsageBudget}, false
		}
	}
	if limited, wait, say := a.rate.take(key, now, l.UserTurnsPer10Min); limited {
		return rated(wait, say), false
	}
	return refusal{}, true
}

// refuse answers a refused trigger (nothing for silence) and counts it in
// the roll-up's errors.
func (a *Assistant) refuse(ctx context.Context, in Incoming, s Surface, r refusal, log *slog.Logger) {
	if err := a.o.Store.RecordRefusal(ctx, in.Place.GuildID, in.UserID, r.kind); err != nil {
		log.Warn("counting a refusal failed", "kind", r.kind, "err", err)
	}
	if r.text == "" {
		return
	}
	if err := s.Busy(ctx, r.text); err != nil {
		log.Warn("refusal reply failed", "kind", r.kind, "err", err)
	}
}

// UsageText is a member's /usage: their tokens today and this month in
// guildID against their daily budget; with staff, the guild's today
// against its budget too. Exempt callers are told so. In DMs (guild 0)
// it is their DM tokens against the same per-user daily budget, which
// limit applies to DMs on its own (guild 0 is its own place; no guild
// budget there, and the tier is member, so only the owner is exempt).
func (a *Assistant) UsageText(ctx context.Context, guildID, userID uint64, tier sdk.TrustTier, owner bool) (string, error) {
	l, err := settings.LoadAssistantLimits(ctx, a.o.Settings)
	if err != nil {
		return "", fmt.Errorf("assistant: usage: %w", err)
	}
	spent, err := a.o.Store.Spent(ctx, guildID, userID, a.clock.Now(), false)
	if err != nil {
		return "", fmt.Errorf("assistant: usage: %w", err)
	}
	in := Incoming{Place: Place{GuildID: guildID}, UserID: userID, Tier: tier, Owner: owner}
	where := "here"
	if guildID == 0 {
		where = "in our direct messages"
	}
	text := "Your assistant usage " + where + ": " + tokens(spent.UserDay) + " tokens today of your " + tokens(l.UserDailyTokens) +
		" daily budget, " + tokens(spent.UserMonth) + " this month."
	if exempt(in, l) {
		text += " You are exempt from the limits."
	}
	if guildID != 0 && (tier.AtLeast(sdk.TierStaff) || owner) {
		text += "\nThis server: " + tokens(spent.GuildDay) + " tokens today of its " + tokens(a.guildBudget(in, l)) + " daily budget."
	}
	return text + "\nBudgets reset at 00:00 UTC.", nil
}

// tokens writes n with thousands separators.
func tokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
