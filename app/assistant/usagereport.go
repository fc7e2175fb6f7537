package assistant

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// Bounds of the usage report (/assistant/usage).
const (
	// UsageDays is the report's window: today (UTC) and the 29 days before.
	UsageDays = 30
	// UsageTopUsers is how many users the report ranks.
	UsageTopUsers = 10
)

// UsageTotals are token and call counts of the roll-up. Tokens is
// prompt plus completion (cached tokens are part of the prompt).
type UsageTotals struct {
	Calls, PromptTokens, CompletionTokens, CachedTokens, Turns int64
}

// Tokens is prompt plus completion tokens.
func (t UsageTotals) Tokens() int64 { return t.PromptTokens + t.CompletionTokens }

// UsageDay is one UTC day of the window.
type UsageDay struct {
	Day string // YYYY-MM-DD
	UsageTotals
}

// UsageByModel is the window's usage of one model served ("" when no
// response named one).
type UsageByModel struct {
	Model string
	UsageTotals
}

// UsageByGuild is the window's usage in one guild (0: direct messages).
type UsageByGuild struct {
	GuildID uint64
	UsageTotals
}

// UsageByUser is the window's usage of one user, every guild together.
type UsageByUser struct {
	UserID uint64
	UsageTotals
}

// UsageError is how many turns of the window ended in an error of Kind.
type UsageError struct {
	Kind  string
	Count int64
}

// UsageTool is the window's calls of one tool, counted by ToolStat's rules.
type UsageTool struct {
	Tool, Module string
	ToolStat
}

// UsageReport is the assistant's usage over the last UsageDays UTC days,
// read from the roll-up (kimi_assistant_usage, its error counts) and the
// turns and tool calls started in the window.
type UsageReport struct {
	// From and To are the window's first and last day (To is today).
	From, To string
	// Days are the window's days, oldest first, a day without usage zero.
	Days  []UsageDay
	Total UsageTotals
	// Models and Guilds are by tokens, most first; Users the top
	// UsageTopUsers by tokens.
	Models []UsageByModel
	Guilds []UsageByGuild
	Users  []UsageByUser
	// Finished is how many turns started in the window have ended; P50
	// and P99 their duration's percentiles (nearest rank; 0 without any).
	Finished int64
	P50, P99 time.Duration
	// Errors are by count, most first; Tools by calls, most first.
	Errors []UsageError
	Tools  []UsageTool
}

// Empty reports whether the window holds no usage at all.
func (r UsageReport) Empty() bool {
	return r.Total == UsageTotals{} && len(r.Errors) == 0 && r.Finished == 0 && len(r.Tools) == 0
}

// usageCache is the last report, kept while the usage version (migration
// 00015's triggers) and the day are those it was read at.
type usageCache struct {
	mu      sync.Mutex
	ok      bool
	day     string
	version int64
	report  UsageReport
}

// UsageReport returns the usage of the last UsageDays UTC days up to today
// on the storage's clock. A report is read again only when a row it reads
// changed (the usage version of migration 00015) or the day turned; the
// caller must not modify the slices of the report returned.
func (c *Conversations) UsageReport(ctx context.Context) (UsageReport, error) {
	now := c.now().UTC()
	today := now.Format(time.DateOnly)
	db := c.st.Reader()
	var version int64
	if err := db.QueryRowContext(ctx, `SELECT version FROM kimi_assistant_usage_version WHERE id = 1`).Scan(&version); err != nil {
		return UsageReport{}, fmt.Errorf("assistant: usage report: version: %w", err)
	}
	c.usage.mu.Lock()
	defer c.usage.mu.Unlock()
	if c.usage.ok && c.usage.day == today && c.usage.version == version {
		return c.usage.report, nil
	}
	r, err := readUsageReport(ctx, db, now)
	if err != nil {
		return UsageReport{}, err
	}
	c.usage.ok, c.usage.day, c.usage.version, c.usage.report = true, today, version, r
	return r, nil
}

// readUsageReport reads the report of the window ending on now's UTC day.
func readUsageReport(ctx context.Context, db *sql.DB, now time.Time) (UsageReport, error) {
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	first := midnight.AddDate(0, 0, -(UsageDays - 1))
	r := UsageReport{From: first.Format(time.DateOnly), To: midnight.Format(time.DateOnly)}
	sinceMS := first.UnixMilli()
	wrap := func(what string, err error) error { return fmt.Errorf("assistant: usage report: %s: %w", what, err) }

	byDay := map[string]UsageTotals{}
	if err := scanTotals(ctx, db, usageByDayQuery,
		r.From, func(key any, t UsageTotals) { byDay[*key.(*string)] = t }, new(string)); err != nil {
		return r, wrap("by day", err)
	}
	for d := first; !d.After(midnight); d = d.AddDate(0, 0, 1) {
		day := UsageDay{Day: d.Format(time.DateOnly), UsageTotals: byDay[d.Format(time.DateOnly)]}
		r.Days = append(r.Days, day)
		r.Total = addTotals(r.Total, day.UsageTotals)
	}
	if err := scanTotals(ctx, db, usageByModelQuery,
		r.From, func(key any, t UsageTotals) {
			r.Models = append(r.Models, UsageByModel{Model: *key.(*string), UsageTotals: t})
		}, new(string)); err != nil {
		return r, wrap("by model", err)
	}
	if err := scanTotals(ctx, db, usageByGuildQuery,
		r.From, func(key any, t UsageTotals) {
			r.Guilds = append(r.Guilds, UsageByGuild{GuildID: uint64(*key.(*int64)), UsageTotals: t})
		}, new(int64)); err != nil {
		return r, wrap("by guild", err)
	}
	if err := scanTotals(ctx, db, usageTopUsersQuery,
		r.From, func(key any, t UsageTotals) {
			r.Users = append(r.Users, UsageByUser{UserID: uint64(*key.(*int64)), UsageTotals: t})
		}, new(int64)); err != nil {
		return r, wrap("top users", err)
	}
	if err := readUsageErrors(ctx, db, r.From, &r); err != nil {
		return r, wrap("errors", err)
	}
	if err := readLatency(ctx, db, sinceMS, &r); err != nil {
		return r, wrap("latency", err)
	}
	if err := readUsageTools(ctx, db, sinceMS, &r); err != nil {
		return r, wrap("tool calls", err)
	}
	return r, nil
}

// usageSums are the roll-up's sums in UsageTotals' order.
const usageSums = `sum(calls), sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(turns)`

// The report's queries: each a range scan of its table's day (or time)
// from the window's first day, the roll-up's over its primary key. A
// GROUP BY term's unary + keeps the planner from grouping in the order of
// the guild or user index instead, which reads every row of the year.
const (
	usageByDayQuery   = `SELECT day, ` + usageSums + ` FROM kimi_assistant_usage WHERE day >= ? GROUP BY day`
	usageByModelQuery = `SELECT model, ` + usageSums + ` FROM kimi_assistant_usage WHERE day >= ?
		GROUP BY +model ORDER BY sum(prompt_tokens) + sum(completion_tokens) DESC, model`
	usageByGuildQuery = `SELECT guild_id, ` + usageSums + ` FROM kimi_assistant_usage WHERE day >= ?
		GROUP BY +guild_id ORDER BY sum(prompt_tokens) + sum(completion_tokens) DESC, guild_id`
	usageTopUsersQuery = `SELECT user_id, ` + usageSums + ` FROM kimi_assistant_usage WHERE day >= ?
		GROUP BY +user_id ORDER BY sum(prompt_tokens) + sum(completion_tokens) DESC, user_id LIMIT 10` // UsageTopUsers
	usageErrorsQuery = `SELECT kind, sum(count) FROM kimi_assistant_usage_errors WHERE day >= ?
		GROUP BY kind HAVING sum(count) > 0 ORDER BY sum(count) DESC, kind`
	usageToolsQuery = `SELECT tool, module, ` + toolStatsCounts + ` FROM kimi_assistant_tool_calls
		WHERE created_ms >= ? AND ` + toolStatsRan + ` GROUP BY +tool, +module ORDER BY count(*) DESC, tool, module`
)

// scanTotals runs q with arg and hands each row's key (scanned into key)
// and totals to add.
func scanTotals(ctx context.Context, db *sql.DB, q, arg string, add func(key any, t UsageTotals), key any) error {
	rows, err := db.QueryContext(ctx, q, arg)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var t UsageTotals
		if err := rows.Scan(key, &t.Calls, &t.PromptTokens, &t.CompletionTokens, &t.CachedTokens, &t.Turns); err != nil {
			return err
		}
		add(key, t)
	}
	return rows.Err()
}

func addTotals(a, b UsageTotals) UsageTotals {
	return UsageTotals{Calls: a.Calls + b.Calls, PromptTokens: a.PromptTokens + b.PromptTokens,
		CompletionTokens: a.CompletionTokens + b.CompletionTokens, CachedTokens: a.CachedTokens + b.CachedTokens,
		Turns: a.Turns + b.Turns}
}

func readUsageErrors(ctx context.Context, db *sql.DB, from string, r *UsageReport) error {
	rows, err := db.QueryContext(ctx, usageErrorsQuery, from)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var e UsageError
		if err := rows.Scan(&e.Kind, &e.Count); err != nil {
			return err
		}
		r.Errors = append(r.Errors, e)
	}
	return rows.Err()
}

// readLatency reads the finished turns' count and duration percentiles
// (nearest rank) over the started_ms index.
func readLatency(ctx context.Context, db *sql.DB, sinceMS int64, r *UsageReport) error {
	const where = ` FROM kimi_assistant_turns WHERE started_ms >= ? AND status <> 'running'`
	if err := db.QueryRowContext(ctx, `SELECT count(*)`+where, sinceMS).Scan(&r.Finished); err != nil {
		return err
	}
	if r.Finished == 0 {
		return nil
	}
	rank := func(p int64) (time.Duration, error) {
		i := (r.Finished*p+99)/100 - 1 // ceil(p% of n), 1-based, to 0-based
		var ms int64
		err := db.QueryRowContext(ctx, `SELECT duration_ms`+where+` ORDER BY duration_ms LIMIT 1 OFFSET ?`, sinceMS, i).Scan(&ms)
		return time.Duration(ms) * time.Millisecond, err
	}
	var err error
	if r.P50, err = rank(50); err != nil {
		return err
	}
	r.P99, err = rank(99)
	return err
}

// readUsageTools counts the window's tool calls per tool and module by
// ToolStat's rules (toolStatsCounts).
func readUsageTools(ctx context.Context, db *sql.DB, sinceMS int64, r *UsageReport) error {
	rows, err := db.QueryContext(ctx, usageToolsQuery, sinceMS)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var t UsageTool
		if err := rows.Scan(&t.Tool, &t.Module, &t.Calls, &t.Errors); err != nil {
			return err
		}
		r.Tools = append(r.Tools, t)
	}
	return rows.Err()
}
