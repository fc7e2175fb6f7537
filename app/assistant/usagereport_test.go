package assistant

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// The usage tests' clock: 2023-11-14 22:13:20 UTC, so the window is
// 2023-10-16 to 2023-11-14.
const (
	usageToday = "2023-11-14"
	usageFirst = "2023-10-16"
)

// seedUsage writes roll-up rows as the turn writes them.
func seedUsage(t testing.TB, st *store.Store, rows ...string) {
	t.Helper()
	for _, r := range rows {
		if _, err := st.Writer().Exec(`INSERT INTO kimi_assistant_usage
			(day, guild_id, user_id, model, calls, prompt_tokens, completion_tokens, cached_tokens, turns) VALUES ` + r); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
	}
}

func seedErrors(t testing.TB, st *store.Store, rows ...string) {
	t.Helper()
	for _, r := range rows {
		if _, err := st.Writer().Exec(`INSERT INTO kimi_assistant_usage_errors (day, guild_id, user_id, kind, count) VALUES ` + r); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
	}
}

// seedTurns writes finished turns of conversation conv started at
// startedMS, one per duration.
func seedTurns(t testing.TB, st *store.Store, conv int64, startedMS int64, status string, durations ...int64) {
	t.Helper()
	for i, d := range durations {
		if _, err := st.Writer().Exec(`INSERT INTO kimi_assistant_turns
			(conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms, duration_ms)
			VALUES (?, 'message', ?, 7, 10, 100, ?, ?, ?)`, conv, 5000+i, status, startedMS, d); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUsageReport: the window's 30 days zero-filled and summed, by model,
// guild and top users, its errors by kind, its finished turns' latency
// percentiles and its tool calls by ToolStat's rules; a row a day before
// the window counts nowhere.
func TestUsageReport(t *testing.T) {
	ctx := context.Background()
	c, st, clk := newConversations(t)
	seedUsage(t, st,
		"('"+usageToday+"', 10, 7, 'kimi-k2', 3, 1000, 200, 800, 2)",
		"('"+usageToday+"', 20, 8, 'kimi-k2', 1, 500, 100, 0, 1)",
		"('2023-11-13', 10, 7, 'kimi-fallback', 1, 300, 30, 0, 1)",
		"('"+usageFirst+"', 0, 9, '', 0, 0, 0, 0, 1)",
		"('"+usageFirst+"', 20, 9, 'kimi-k2', 1, 40, 2, 0, 0)",
		"('2023-10-15', 10, 7, 'kimi-k2', 9, 99999, 9999, 0, 9)") // a day before the window
	for u := range 12 {
		seedUsage(t, st, fmt.Sprintf("('2023-11-01', 30, %d, 'kimi-k2', 1, %d, 0, 0, 1)", 100+u, 10+u))
	}
	seedErrors(t, st,
		"('"+usageToday+"', 10, 7, 'provider_5xx', 2)",
		"('2023-11-13', 20, 8, 'provider_5xx', 1)",
		"('2023-11-13', 20, 8, 'budget', 1)",
		"('2023-11-02', 20, 8, 'timeout', 0)",
		"('2023-10-15', 20, 8, 'rate_limit', 5)")
	rec := newRecorder(t, c) // conversation 1, its turn running (not counted)
	rec.call("kudos", "give_kudos", OutcomeOK, OutcomeOK, OutcomeFailed, OutcomeInactive)
	rec.call("", "browse_tools", OutcomeOK)
	clk.add(-31 * 24 * time.Hour)
	rec.call("kudos", "give_kudos", OutcomeFailed) // before the window
	clk.add(31 * 24 * time.Hour)
	durations := make([]int64, 100)
	for i := range durations {
		durations[i] = int64(100 - i) // 100 ms … 1 ms, not in order
	}
	seedTurns(t, st, 1, clk.now().UnixMilli()-time.Hour.Milliseconds(), StatusDone, durations...)
	seedTurns(t, st, 1, clk.now().Add(-31*24*time.Hour).UnixMilli(), StatusFailed, 90_000) // before the window

	r, err := c.UsageReport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	day := func(d string) UsageTotals {
		for _, x := range r.Days {
			if x.Day == d {
				return x.UsageTotals
			}
		}
		t.Fatalf("no day %s in the report", d)
		return UsageTotals{}
	}
	var users []uint64
	for _, u := range r.Users {
		users = append(users, u.UserID)
	}
	var models []string
	for _, m := range r.Models {
		models = append(models, fmt.Sprintf("%s=%d", m.Model, m.Tokens()))
	}
	var guilds []string
	for _, g := range r.Guilds {
		guilds = append(guilds, fmt.Sprintf("%d=%d", g.GuildID, g.Tokens()))
	}
	var usersTotal int64
	for u := range 12 {
		usersTotal += int64(10 + u)
	}
	for _, tt := range []struct {
		name      string
		got, want any
	}{
		{"window", r.From + ".." + r.To, usageFirst + ".." + usageToday},
		{"days", len(r.Days), UsageDays},
		{"first day", r.Days[0].Day, usageFirst},
		{"last day", r.Days[len(r.Days)-1].Day, usageToday},
		{"today", day(usageToday), UsageTotals{Calls: 4, PromptTokens: 1500, CompletionTokens: 300, CachedTokens: 800, Turns: 3}},
		{"yesterday", day("2023-11-13"), UsageTotals{Calls: 1, PromptTokens: 300, CompletionTokens: 30, Turns: 1}},
		{"a day without usage", day("2023-11-12"), UsageTotals{}},
		{"total tokens", r.Total.Tokens(), int64(1800 + 330 + 42 + usersTotal)},
		{"total turns", r.Total.Turns, int64(3 + 1 + 1 + 12)},
		{"models", models, []string{fmt.Sprintf("kimi-k2=%d", 1800+42+usersTotal), "kimi-fallback=330", "=0"}},
		{"guilds", guilds, []string{"10=1530", "20=642", fmt.Sprintf("30=%d", usersTotal), "0=0"}},
		{"top users", users, []uint64{7, 8, 9, 111, 110, 109, 108, 107, 106, 105}},
		{"top users count", len(r.Users), UsageTopUsers},
		{"errors", r.Errors, []UsageError{{"provider_5xx", 3}, {"budget", 1}, {"tool_error", 1}}}, // the failed give_kudos call
		{"finished", r.Finished, int64(100)},
		{"p50", r.P50, 50 * time.Millisecond},
		{"p99", r.P99, 99 * time.Millisecond},
		{"tools", r.Tools, []UsageTool{{Tool: "give_kudos", Module: "kudos", ToolStat: ToolStat{Calls: 3, Errors: 1}},
			{Tool: "browse_tools", ToolStat: ToolStat{Calls: 1}}}},
		{"empty", r.Empty(), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

// TestUsageReportEmpty: without records the window is still 30 zero
// days, and the report says it is empty.
func TestUsageReportEmpty(t *testing.T) {
	c, _, _ := newConversations(t)
	r, err := c.UsageReport(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Empty() || len(r.Days) != UsageDays || r.Total != (UsageTotals{}) || r.P99 != 0 || r.From != usageFirst {
		t.Errorf("report %+v: want 30 empty days from %s", r, usageFirst)
	}
}

// TestUsageReportKept: a report is kept until a row it reads changes
// (a roll-up row written or updated, an error counted, a turn ended, a
// tool call recorded, a turn deleted) or the UTC day turns.
func TestUsageReportKept(t *testing.T) {
	ctx := context.Background()
	c, st, clk := newConversations(t)
	rec := newRecorder(t, c)
	read := func() UsageReport {
		t.Helper()
		r, err := c.UsageReport(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	exec := func(q string, args ...any) func() {
		return func() {
			if _, err := st.Writer().Exec(q, args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tt := range []struct {
		name   string
		change func()
		// changed reports whether r differs from before as the change means.
		changed func(before, after UsageReport) bool
	}{
		{"nothing changed", func() {}, func(b, a UsageReport) bool { return reflect.DeepEqual(b, a) }},
		{"a roll-up row", exec(`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, prompt_tokens) VALUES (?, 10, 7, 'm', 5)`, usageToday),
			func(b, a UsageReport) bool { return a.Total.PromptTokens == b.Total.PromptTokens+5 }},
		{"a roll-up update", exec(`UPDATE kimi_assistant_usage SET prompt_tokens = prompt_tokens + 1`),
			func(b, a UsageReport) bool { return a.Total.PromptTokens == b.Total.PromptTokens+1 }},
		{"an error counted", exec(`INSERT INTO kimi_assistant_usage_errors (day, guild_id, user_id, kind, count) VALUES (?, 10, 7, 'busy', 1)`, usageToday),
			func(b, a UsageReport) bool { return len(a.Errors) == len(b.Errors)+1 }},
		{"a tool call", func() { rec.call("kudos", "give_kudos", OutcomeOK) },
			func(b, a UsageReport) bool { return len(a.Tools) == 1 && a.Tools[0].Calls == 1 }},
		{"a turn ended", func() {
			if err := c.FinishTurn(ctx, rec.turn, Finish{Status: StatusDone}); err != nil {
				t.Fatal(err)
			}
		}, func(b, a UsageReport) bool { return a.Finished == b.Finished+1 }},
		{"a turn deleted", exec(`DELETE FROM kimi_assistant_turns`),
			func(b, a UsageReport) bool { return a.Finished == 0 && len(a.Tools) == 0 }},
		{"the day turned", func() { clk.add(2 * time.Hour) },
			func(b, a UsageReport) bool { return a.To == "2023-11-15" && b.To == usageToday }},
	} {
		before := read()
		tt.change()
		if after := read(); !tt.changed(before, after) {
			t.Errorf("%s: report %+v after %+v", tt.name, after, before)
		}
	}
}

// TestUsageReportIndexed: every query of the report reads a migration
// 00016 roll-up by the window's days over its primary key (the top users'
// table in its tokens index's order, without a sort), never the roll-up
// of members (365 days × 20 guilds × 200 users is 1.46 million rows).
func TestUsageReportIndexed(t *testing.T) {
	_, st, _ := newConversations(t)
	for _, tt := range []struct {
		name, query, want string
		arg               any
	}{
		{"by day, model and guild", usageDailyQuery, "SEARCH kimi_assistant_usage_daily USING PRIMARY KEY (day>?)", usageFirst},
		{"top users", usageTopUsersQuery, "SCAN kimi_assistant_usage_users USING INDEX kimi_assistant_usage_users_tokens", nil},
		{"errors", usageErrorsQuery, "SEARCH kimi_assistant_usage_errors USING PRIMARY KEY (day>?)", usageFirst},
		{"latency", usageLatencyQuery, "SEARCH kimi_assistant_turn_latency USING PRIMARY KEY (day>?)", usageFirst},
		{"tools", usageToolsQuery, "SEARCH kimi_assistant_tool_usage USING PRIMARY KEY (day>?)", usageFirst},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var args []any
			if tt.arg != nil {
				args = append(args, tt.arg)
			}
			plan := explain(t, st, tt.query, args...)
			if !strings.Contains(plan, tt.want) {
				t.Errorf("plan %q: want %s", plan, tt.want)
			}
			if tt.name == "top users" && strings.Contains(plan, "TEMP B-TREE") {
				t.Errorf("plan %q sorts the users", plan)
			}
		})
	}
}

func explain(t *testing.T, st *store.Store, q string, args ...any) string {
	t.Helper()
	rows, err := st.Reader().QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// TestUsageReportTopUsersFollowTheWindow: the top users are the sums of
// exactly the window's days whichever way the clock moves: the first
// report fills the users' window, a day or more forward subtracts the
// days that left (and counts rows written meanwhile), a clock set back
// sums it afresh.
func TestUsageReportTopUsersFollowTheWindow(t *testing.T) {
	ctx := context.Background()
	c, st, clk := newConversations(t)
	day := func(offset int) string {
		return time.Unix(1_700_000_000, 0).AddDate(0, 0, offset).UTC().Format(time.DateOnly)
	}
	// Each user's tokens on each of 40 days around the window's first day,
	// so every move of the window changes the ranking.
	for d := -45; d <= 5; d++ {
		for u := 1; u <= 12; u++ {
			tokens := (u*37 + (d+50)*(u%5+1)*11) % 997
			seedUsage(t, st, fmt.Sprintf("('%s', %d, %d, 'kimi-k2', 1, %d, %d, 0, 1)", day(d), 10+u%3, u, tokens, u))
		}
	}
	want := func(from string) []UsageByUser {
		t.Helper()
		rows, err := st.Reader().Query(`SELECT user_id, sum(calls), sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(turns)
			FROM kimi_assistant_usage WHERE day >= ? GROUP BY user_id
			ORDER BY sum(prompt_tokens) + sum(completion_tokens) DESC, user_id LIMIT 10`, from)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var us []UsageByUser
		for rows.Next() {
			var u UsageByUser
			if err := rows.Scan(&u.UserID, &u.Calls, &u.PromptTokens, &u.CompletionTokens, &u.CachedTokens, &u.Turns); err != nil {
				t.Fatal(err)
			}
			us = append(us, u)
		}
		return us
	}
	for _, step := range []struct {
		name  string
		move  time.Duration
		write string // a row written before the report
	}{
		{"first report", 0, ""},
		{"a day on", 24 * time.Hour, "('" + day(1) + "', 99, 3, 'kimi-k2', 1, 5000, 0, 0, 1)"},
		{"five days on", 5 * 24 * time.Hour, "('" + day(6) + "', 99, 4, 'kimi-k2', 1, 7000, 0, 0, 1)"},
		{"the clock set back ten days", -10 * 24 * time.Hour, ""},
		{"a year on", 365 * 24 * time.Hour, ""},
	} {
		clk.add(step.move)
		if step.write != "" {
			seedUsage(t, st, step.write)
		}
		r, err := c.UsageReport(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if w := want(r.From); !reflect.DeepEqual(r.Users, w) {
			t.Errorf("%s (window from %s): top users\n%v\nwant\n%v", step.name, r.From, r.Users, w)
		}
	}
}

// TestUsageReportLatencyAsShown: a percentile read from the latency
// roll-up is the exact duration below a second and the exact duration
// rounded half up to the tenth of a second above, which is what the page
// shows (seconds to one decimal): a turn of 12.36 s reads 12.4 s, not
// 12.3 s.
func TestUsageReportLatencyAsShown(t *testing.T) {
	for _, tt := range []struct {
		name     string
		ms, want int64
	}{
		{"below a second", 850, 850},
		{"just below a second", 999, 999},
		{"a second", 1000, 1000},
		{"rounds down", 1949, 1900},
		{"rounds up", 12_360, 12_400},
		{"half rounds up", 12_350, 12_400},
		{"minutes", 123_456, 123_500},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, st, clk := newConversations(t)
			if _, err := st.Writer().Exec(`INSERT INTO kimi_assistant_conversations
				(id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms) VALUES (1, 10, 100, 1000, 7, 1, 1)`); err != nil {
				t.Fatal(err)
			}
			seedTurns(t, st, 1, clk.now().UnixMilli()-time.Hour.Milliseconds(), StatusDone, tt.ms)
			r, err := c.UsageReport(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := time.Duration(tt.want) * time.Millisecond
			if r.Finished != 1 || r.P50 != want || r.P99 != want {
				t.Errorf("finished %d, p50 %v, p99 %v; want 1, %v, %v", r.Finished, r.P50, r.P99, want, want)
			}
		})
	}
}
