package assistant

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/llm"
)

// Error kinds of the usage roll-up (kimi_assistant_usage_errors.kind):
// how a turn ended in an error, or why a trigger was refused before any
// provider call, counted per UTC day, guild and user without content.
const (
	// UsageProvider4xx: the provider answered 4xx (429 included).
	UsageProvider4xx = "provider_4xx"
	// UsageProvider5xx: the provider answered 5xx, or could not be
	// reached (connection, request timeout, cooldown, anything else).
	UsageProvider5xx = "provider_5xx"
	// UsageProviderStall: the stream stalled (no byte for the stall
	// timeout) or broke mid-stream.
	UsageProviderStall = "provider_stall"
	// UsageToolError: a tool call failed (counted per call, the turn
	// carries on).
	UsageToolError = "tool_error"
	// UsageTimeout: the whole-turn deadline passed.
	UsageTimeout = "timeout"
	// UsageBusy: admission refused the trigger (too many turns at once,
	// or the conversation already answering).
	UsageBusy = "busy"
	// UsageBudget: a daily or monthly token budget was spent.
	UsageBudget = "budget"
	// UsageRateLimit: the member started too many turns in ten minutes.
	UsageRateLimit = "rate_limit"
	// UsageIterationCap: the turn ran out of model calls.
	UsageIterationCap = "iteration_cap"
	// UsageDelivery and UsageStorage: the answer could not be delivered,
	// or the turn's rows could not be read.
	UsageDelivery = "delivery"
	UsageStorage  = "storage"
)

// UsageRetention is how long the roll-up keeps a day's rows.
const UsageRetention = 365 * 24 * time.Hour

// dayLayout is the roll-up's day, in UTC.
const dayLayout = "2006-01-02"

// usageDay is t's UTC day as the roll-up keys it.
func usageDay(t time.Time) string { return t.UTC().Format(dayLayout) }

// providerUsageKind is the roll-up's kind of a failed model call.
func providerUsageKind(err error) string {
	var he *llm.HTTPError
	switch {
	case errors.Is(err, llm.ErrStall), errors.As(err, &he) && he.MidStream:
		return UsageProviderStall
	case he != nil && he.Status >= http.StatusBadRequest && he.Status < http.StatusInternalServerError:
		return UsageProvider4xx
	}
	return UsageProvider5xx
}

// usageKindOf maps a finished turn's error kind to the roll-up's (""
// when the ending is no error: done or cancelled).
func usageKindOf(errorKind string) string {
	switch errorKind {
	case "", KindCancelled:
		return ""
	case KindDeadline:
		return UsageTimeout
	case KindIterationCap:
		return UsageIterationCap
	case KindDelivery:
		return UsageDelivery
	case KindStorage:
		return UsageStorage
	case KindProvider:
		return UsageProvider5xx
	}
	return errorKind
}

// pruner runs the roll-up's 365-day pruning at most once a UTC day, in
// the first write of that day (no loop: the writes drive it).
type pruner struct {
	mu  sync.Mutex
	day string
}

// due reports whether day has not been pruned yet.
func (p *pruner) due(day string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.day != day
}

func (p *pruner) done(day string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.day = day
}

// pruneUsageTx deletes the roll-up's rows older than UsageRetention
// before now.
func pruneUsageTx(ctx context.Context, tx txn, now time.Time) error {
	cutoff := usageDay(now.Add(-UsageRetention))
	if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_assistant_usage WHERE day < ?`, cutoff); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM kimi_assistant_usage_errors WHERE day < ?`, cutoff)
	return err
}

// usageWrite runs fn in one write transaction with the day's pruning
// when it is due.
func (c *Conversations) usageWrite(ctx context.Context, fn func(tx txn, day string) error) error {
	now := c.now()
	day := usageDay(now)
	prune := c.prune.due(day)
	err := c.write(ctx, func(tx txn) error {
		if prune {
			if err := pruneUsageTx(ctx, tx, now); err != nil {
				return fmt.Errorf("prune the usage roll-up: %w", err)
			}
		}
		return fn(tx, day)
	})
	if err == nil && prune {
		c.prune.done(day)
	}
	return err
}

// addUsageTx adds one response to the day's roll-up row of guild, user
// and model.
func addUsageTx(ctx context.Context, tx txn, day string, guild, user int64, model string, u Usage) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO kimi_assistant_usage
		(day, guild_id, user_id, model, calls, prompt_tokens, completion_tokens, cached_tokens) VALUES (?, ?, ?, ?, 1, ?, ?, ?)
		ON CONFLICT (day, guild_id, user_id, model) DO UPDATE SET calls = calls + 1,
		prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens,
		cached_tokens = cached_tokens + excluded.cached_tokens`,
		day, guild, user, model, u.PromptTokens, u.CompletionTokens, u.CachedTokens)
	return err
}

// addTurnTx counts one turn in the day's roll-up under model.
func addTurnTx(ctx context.Context, tx txn, day string, guild, user int64, model string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, turns) VALUES (?, ?, ?, ?, 1)
		ON CONFLICT (day, guild_id, user_id, model) DO UPDATE SET turns = turns + 1`, day, guild, user, model)
	return err
}

// addErrorTx counts one error of kind in the day's roll-up.
func addErrorTx(ctx context.Context, tx txn, day string, guild, user int64, kind string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO kimi_assistant_usage_errors (day, guild_id, user_id, kind, count) VALUES (?, ?, ?, ?, 1)
		ON CONFLICT (day, guild_id, user_id, kind) DO UPDATE SET count = count + 1`, day, guild, user, clip(kind, 64))
	return err
}

// RecordRefusal counts a trigger refused before any provider call (kind
// UsageBusy, UsageBudget or UsageRateLimit) in the roll-up's errors; it
// writes no conversation or turn row.
func (c *Conversations) RecordRefusal(ctx context.Context, guildID, userID uint64, kind string) error {
	if userID == 0 || kind == "" {
		return fmt.Errorf("assistant: record a refusal: user %d, kind %q (both required)", userID, kind)
	}
	err := c.usageWrite(ctx, func(tx txn, day string) error {
		return addErrorTx(ctx, tx, day, int64(guildID), int64(userID), kind)
	})
	if err != nil {
		return fmt.Errorf("assistant: record a refusal: %w", err)
	}
	return nil
}

// Spent is the tokens (prompt plus completion) a budget counts.
type Spent struct {
	// UserDay and UserMonth are the member's in the guild (0 for DMs)
	// today and this month; GuildDay the whole guild's today; AllMonth
	// every guild's and DM's this month.
	UserDay, UserMonth, GuildDay, AllMonth int64
}

// Spent reads the roll-up's tokens of userID in guildID for the UTC day
// and month of now; AllMonth only when all. The guild's and everyone's
// sums read migration 00016's daily roll-up (a row per day, guild and
// model), not the members' rows.
func (c *Conversations) Spent(ctx context.Context, guildID, userID uint64, now time.Time, all bool) (Spent, error) {
	day := usageDay(now)
	month := day[:8] + "01"
	var s Spent
	db := c.st.Reader()
	err := db.QueryRowContext(ctx, `SELECT
			coalesce(sum(CASE WHEN day = ? THEN prompt_tokens + completion_tokens END), 0),
			coalesce(sum(prompt_tokens + completion_tokens), 0)
		FROM kimi_assistant_usage WHERE user_id = ? AND guild_id = ? AND day >= ? AND day <= ?`,
		day, int64(userID), int64(guildID), month, day).Scan(&s.UserDay, &s.UserMonth)
	if err == nil {
		err = db.QueryRowContext(ctx, `SELECT coalesce(sum(prompt_tokens + completion_tokens), 0)
			FROM kimi_assistant_usage_daily WHERE day = ? AND guild_id = ?`, day, int64(guildID)).Scan(&s.GuildDay)
	}
	if err == nil && all {
		err = db.QueryRowContext(ctx, `SELECT coalesce(sum(prompt_tokens + completion_tokens), 0)
			FROM kimi_assistant_usage_daily WHERE day >= ? AND day <= ?`, month, day).Scan(&s.AllMonth)
	}
	if err != nil {
		return Spent{}, fmt.Errorf("assistant: read the tokens spent: %w", err)
	}
	return s, nil
}
