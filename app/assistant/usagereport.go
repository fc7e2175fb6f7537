package assistant

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
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
	// Stamp names what the report was read from (the day and the usage
	// version): two reports with the same stamp are the same.
	Stamp string
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
	r, err := c.readUsageReport(ctx, db, now)
	if err != nil {
		return UsageReport{}, err
	}
	r.Stamp = today + "/" + strconv.FormatInt(version, 10)
	c.usage.ok, c.usage.day, c.usage.version, c.usage.report = true, today, version, r
	return r, nil
}

// readUsageReport reads the report of the window ending on now's UTC day
// from migration 00016's roll-ups, each a few hundred rows at most.
func (c *Conversations) readUsageReport(ctx context.Context, db *sql.DB, now time.Time) (UsageReport, error) {
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	first := midnight.AddDate(0, 0, -(UsageDays - 1))
	r := UsageReport{From: first.Format(time.DateOnly), To: midnight.Format(time.DateOnly)}
	wrap := func(what string, err error) error { return fmt.Errorf("assistant: usage report: %s: %w", what, err) }

	if err := c.advanceUsageWindow(ctx, r.From); err != nil {
		return r, wrap("top users' window", err)
	}
	if err := readDaily(ctx, db, &r, first, midnight); err != nil {
		return r, wrap("by day", err)
	}
	if err := scanTotals(ctx, db, usageTopUsersQuery, nil, func(key any, t UsageTotals) {
		r.Users = append(r.Users, UsageByUser{UserID: uint64(*key.(*int64)), UsageTotals: t})
	}, new(int64)); err != nil {
		return r, wrap("top users", err)
	}
	if err := readUsageErrors(ctx, db, r.From, &r); err != nil {
		return r, wrap("errors", err)
	}
	if err := readLatency(ctx, db, r.From, &r); err != nil {
		return r, wrap("latency", err)
	}
	if err := readUsageTools(ctx, db, r.From, &r); err != nil {
		return r, wrap("tool calls", err)
	}
	return r, nil
}

// readDaily reads the window's rows of kimi_assistant_usage_daily (day,
// guild and model) into the report's days, total, models and guilds.
func readDaily(ctx context.Context, db *sql.DB, r *UsageReport, first, last time.Time) error {
	byDay := map[string]UsageTotals{}
	byModel := map[string]UsageTotals{}
	byGuild := map[int64]UsageTotals{}
	rows, err := db.QueryContext(ctx, usageDailyQuery, r.From)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var day, model string
		var guild int64
		var t UsageTotals
		if err := rows.Scan(&day, &guild, &model, &t.Calls, &t.PromptTokens, &t.CompletionTokens, &t.CachedTokens, &t.Turns); err != nil {
			return err
		}
		byDay[day] = addTotals(byDay[day], t)
		byModel[model] = addTotals(byModel[model], t)
		byGuild[guild] = addTotals(byGuild[guild], t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		day := UsageDay{Day: d.Format(time.DateOnly), UsageTotals: byDay[d.Format(time.DateOnly)]}
		r.Days = append(r.Days, day)
		r.Total = addTotals(r.Total, day.UsageTotals)
	}
	for m, t := range byModel {
		r.Models = append(r.Models, UsageByModel{Model: m, UsageTotals: t})
	}
	slices.SortFunc(r.Models, func(a, b UsageByModel) int {
		return cmp.Or(cmp.Compare(b.Tokens(), a.Tokens()), cmp.Compare(a.Model, b.Model))
	})
	for g, t := range byGuild {
		r.Guilds = append(r.Guilds, UsageByGuild{GuildID: uint64(g), UsageTotals: t})
	}
	slices.SortFunc(r.Guilds, func(a, b UsageByGuild) int {
		return cmp.Or(cmp.Compare(b.Tokens(), a.Tokens()), cmp.Compare(a.GuildID, b.GuildID))
	})
	return nil
}

// advanceUsageWindow moves the top users' window (migration 00016's
// kimi_assistant_usage_users, counted from kimi_assistant_usage_window's
// first_day on) to start at first, a day per write transaction, so moving
// it by a month (the first report, or one after weeks unseen) never holds
// the single writer for seconds: forward it subtracts each day that left,
// backward (the first report, or the clock went back) it adds each day
// that came in — after each step the table is the sums from the window's
// first day on, as the triggers keep it. Nothing is written when the
// window already starts there.
func (c *Conversations) advanceUsageWindow(ctx context.Context, first string) error {
	for {
		var at string
		if err := c.st.Reader().QueryRowContext(ctx, `SELECT first_day FROM kimi_assistant_usage_window WHERE id = 1`).Scan(&at); err != nil {
			return err
		}
		if at == first {
			return nil
		}
		if err := c.st.Write(ctx, func(tx *sql.Tx) error { return usageWindowStep(ctx, tx, first) }); err != nil {
			return err
		}
	}
}

// usageWindowStep moves the window one step towards first in tx: forward,
// out go the days up to and with the next one that has rows; backward, in
// come the days from the previous one that has rows up to the window's
// first day (a gap with no rows is crossed in the same step).
func usageWindowStep(ctx context.Context, tx *sql.Tx, first string) error {
	var at string
	if err := tx.QueryRowContext(ctx, `SELECT first_day FROM kimi_assistant_usage_window WHERE id = 1`).Scan(&at); err != nil {
		return err
	}
	if at == first {
		return nil
	}
	var from, to string // the days [from, to) that leave or come in
	var day sql.NullString
	sign := "-"
	if at < first {
		if err := tx.QueryRowContext(ctx, `SELECT min(day) FROM kimi_assistant_usage WHERE day >= ?1 AND day < ?2`, at, first).Scan(&day); err != nil {
			return err
		}
		from, to = at, first
		if day.Valid && dayAfter(day.String) < first {
			to = dayAfter(day.String)
		}
	} else {
		sign = ""
		if err := tx.QueryRowContext(ctx, `SELECT max(day) FROM kimi_assistant_usage WHERE day >= ?1 AND day < ?2`, first, at).Scan(&day); err != nil {
			return err
		}
		from, to = first, at
		if day.Valid {
			from = day.String
		}
	}
	next := to
	if sign == "" {
		next = from
	}
	steps := []string{`INSERT INTO kimi_assistant_usage_users
		SELECT user_id, ` + sign + `sum(calls), ` + sign + `sum(prompt_tokens), ` + sign + `sum(completion_tokens), ` + sign + `sum(cached_tokens), ` + sign + `sum(turns)
		FROM kimi_assistant_usage WHERE day >= ?1 AND day < ?2 GROUP BY user_id
		ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
			completion_tokens = completion_tokens + excluded.completion_tokens,
			cached_tokens = cached_tokens + excluded.cached_tokens, turns = turns + excluded.turns`,
		`DELETE FROM kimi_assistant_usage_users
		WHERE calls = 0 AND prompt_tokens = 0 AND completion_tokens = 0 AND cached_tokens = 0 AND turns = 0`,
		`UPDATE kimi_assistant_usage_window SET first_day = ?3 WHERE id = 1`}
	for _, q := range steps {
		if _, err := tx.ExecContext(ctx, q, from, to, next); err != nil {
			return err
		}
	}
	return nil
}

// dayAfter is the UTC day after day (YYYY-MM-DD); a day that does not
// parse is returned as "9999-12-31", past every day.
func dayAfter(day string) string {
	t, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return "9999-12-31"
	}
	return t.AddDate(0, 0, 1).Format(time.DateOnly)
}

// The report's queries: each a range scan of a migration 00016 roll-up
// from the window's first day (the top users' table holds the window
// only, in the order of its tokens index).
const (
	usageDailyQuery = `SELECT day, guild_id, model, calls, prompt_tokens, completion_tokens, cached_tokens, turns
		FROM kimi_assistant_usage_daily WHERE day >= ?`
	usageTopUsersQuery = `SELECT user_id, calls, prompt_tokens, completion_tokens, cached_tokens, turns
		FROM kimi_assistant_usage_users ORDER BY prompt_tokens + completion_tokens DESC, user_id LIMIT 10` // UsageTopUsers
	usageErrorsQuery = `SELECT kind, sum(count) FROM kimi_assistant_usage_errors WHERE day >= ?
		GROUP BY kind HAVING sum(count) > 0 ORDER BY sum(count) DESC, kind`
	usageLatencyQuery = `SELECT ms, sum(count) FROM kimi_assistant_turn_latency WHERE day >= ? GROUP BY ms ORDER BY ms`
	usageToolsQuery   = `SELECT tool, module, sum(calls), sum(errors) FROM kimi_assistant_tool_usage
		WHERE day >= ? GROUP BY tool, module ORDER BY sum(calls) DESC, tool, module`
)

// scanTotals runs q (with arg unless nil) and hands each row's key
// (scanned into key) and totals to add.
func scanTotals(ctx context.Context, db *sql.DB, q string, arg any, add func(key any, t UsageTotals), key any) error {
	var args []any
	if arg != nil {
		args = append(args, arg)
	}
	rows, err := db.QueryContext(ctx, q, args...)
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
// (nearest rank) from their latency roll-up: durations exact below a
// second, to the nearest 100 ms (half up) above, as the page shows them.
func readLatency(ctx context.Context, db *sql.DB, from string, r *UsageReport) error {
	type bucket struct{ ms, n int64 }
	var buckets []bucket
	rows, err := db.QueryContext(ctx, usageLatencyQuery, from)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var b bucket
		if err := rows.Scan(&b.ms, &b.n); err != nil {
			return err
		}
		buckets, r.Finished = append(buckets, b), r.Finished+b.n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rank := func(p int64) time.Duration {
		i := (r.Finished*p + 99) / 100 // ceil(p% of n), 1-based
		for _, b := range buckets {
			if i <= b.n {
				return time.Duration(b.ms) * time.Millisecond
			}
			i -= b.n
		}
		return 0
	}
	if r.Finished > 0 {
		r.P50, r.P99 = rank(50), rank(99)
	}
	return nil
}

// readUsageTools reads the window's tool calls per tool and module from
// their roll-up (counted by ToolStat's rules).
func readUsageTools(ctx context.Context, db *sql.DB, from string, r *UsageReport) error {
	rows, err := db.QueryContext(ctx, usageToolsQuery, from)
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
