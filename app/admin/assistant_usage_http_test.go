package admin

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/store"
)

// usageNow is the usage page tests' clock: 2023-11-14 22:13:20 UTC, so
// the page's window is 2023-10-16 to 2023-11-14.
var usageNow = time.Unix(1_700_000_000, 0)

// withUsage gives the server the assistant's records over its store on
// the usage clock; convs receives them.
func withUsage(convs **assistant.Conversations) func(*Options) {
	return func(o *Options) {
		c := assistant.NewConversations(o.Store, func() time.Time { return usageNow })
		o.Usage = c
		if convs != nil {
			*convs = c
		}
	}
}

// withoutUsage leaves the server without the assistant's records.
func withoutUsage(o *Options) { o.Usage = nil }

// seedUsageRows writes roll-up rows as the turn writes them.
func seedUsageRows(t testing.TB, st *store.Store, rows ...string) {
	t.Helper()
	for _, r := range rows {
		if _, err := st.Writer().Exec(`INSERT INTO kimi_assistant_usage
			(day, guild_id, user_id, model, calls, prompt_tokens, completion_tokens, cached_tokens, turns) VALUES ` + r); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
	}
}

// usageBar is one bar of the page's chart.
type usageBar struct{ x, y, w, h int }

var usageBarRE = regexp.MustCompile(`<rect class="chart-bar" x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)" data-day="([0-9-]+)">`)

// usageBars reads the chart's bars by day.
func usageBars(t *testing.T, body string) (map[string]usageBar, []string) {
	t.Helper()
	bars := map[string]usageBar{}
	var days []string
	for _, m := range usageBarRE.FindAllStringSubmatch(body, -1) {
		n := func(s string) int { v, _ := strconv.Atoi(s); return v }
		bars[m[5]] = usageBar{x: n(m[1]), y: n(m[2]), w: n(m[3]), h: n(m[4])}
		days = append(days, m[5])
	}
	return bars, days
}

// TestAssistantUsagePage: /assistant/usage shows the roll-up's last 30
// UTC days as one bar per day, heights proportional to the day's tokens,
// with the table beside them; usage by model, guild (the bot's name for
// it when it knows one) and top users; the finished turns' latency; the
// errors by kind and the tool calls with their error rate.
func TestAssistantUsagePage(t *testing.T) {
	var convs *assistant.Conversations
	h := newHarness(t, withUsage(&convs))
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	h.fake.AddGuild(fakediscord.GuildSpec{ID: "4242", Name: "Tea Garden"})
	startBot(withToken(""))(t, h)
	discordWait(t, "the guild's name", func() bool {
		for _, g := range h.bot.Status().Guilds {
			if g.ID == "4242" && g.Name != "" {
				return true
			}
		}
		return false
	})
	seedUsageRows(t, h.st,
		"('2023-11-14', 4242, 7, 'kimi-k2', 3, 800, 200, 600, 2)",  // 1,000 tokens: the tallest day
		"('2023-11-13', 4343, 8, 'kimi-k2', 1, 400, 100, 0, 1)",    // 500
		"('2023-11-01', 4242, 9, 'kimi-backup', 1, 200, 50, 0, 1)", // 250
		"('2023-10-16', 4343, 9, 'kimi-k2', 1, 1, 0, 0, 0)",        // 1 token: still visible
		"('2023-10-15', 4242, 7, 'kimi-k2', 9, 90000, 9000, 0, 9)") // before the window
	if _, err := h.st.Writer().Exec(`INSERT INTO kimi_assistant_usage_errors (day, guild_id, user_id, kind, count)
		VALUES ('2023-11-14', 4242, 7, 'provider_5xx', 2), ('2023-11-13', 4343, 8, 'budget', 1)`); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tr := assistant.Trigger{Place: assistant.Place{GuildID: 4242, ChannelID: 100}, Kind: assistant.KindMessage,
		MessageID: 1, AuthorID: 7, AuthorName: "Bo", Text: "hi"}
	conv, err := convs.Open(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := convs.BeginTurn(ctx, conv, tr)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range []assistant.Outcome{assistant.OutcomeOK, assistant.OutcomeOK, assistant.OutcomeFailed, assistant.OutcomeInactive} {
		if err := convs.RecordToolCall(ctx, turn, assistant.ToolCall{Seq: i + 1, Tool: "give_kudos", Module: "kudos", Outcome: o}); err != nil {
			t.Fatal(err)
		}
	}
	if err := convs.FinishTurn(ctx, turn, assistant.Finish{Status: assistant.StatusDone}); err != nil {
		t.Fatal(err)
	}

	res := c.get("/assistant/usage")
	wantStatus(t, res, http.StatusOK)
	bars, days := usageBars(t, res.body)
	if len(days) != assistant.UsageDays || days[0] != "2023-10-16" || days[len(days)-1] != "2023-11-14" {
		t.Fatalf("bars for %d days %v, want 30 from 2023-10-16 to 2023-11-14", len(days), days)
	}
	plot := 170 - 15 // the chart's plot height (UsageChartBottom - UsageChartTop)
	heights := map[string]int{
		"2023-11-14": plot, // the tallest fills the plot
		"2023-11-13": 78,   // half of it (77.5 rounded)
		"2023-11-01": 39,   // a quarter (38.75)
		"2023-10-16": 1,    // a token is still a visible bar
	} // every other day: 0
	for _, d := range days {
		want := heights[d]
		if b := bars[d]; b.h != want || b.y+b.h != 170 {
			t.Errorf("%s: bar height %d at y %d, want %d standing on the axis (170)", d, b.h, b.y, want)
		}
	}
	prev := 0
	for _, d := range days {
		if b := bars[d]; b.x <= prev || b.w < 1 {
			t.Errorf("%s: bar at x %d width %d after x %d: want left to right", d, b.x, b.w, prev)
		} else {
			prev = b.x
		}
	}
	row := func(cells ...string) string { return "<td>" + strings.Join(cells, `</td><td class="num">`) + "</td>" }
	wantBody(t, res,
		`data-testid="usage-chart"`, "2023-11-14: 1,000 tokens",
		// The table beside the chart, newest first: day, tokens, prompt, completion, cached, calls, turns
		// (the seeded 2 and the turn finished below, which the roll-up counts under no model).
		row("2023-11-14", "1,000", "800", "200", "600", "3", "3"),
		row("2023-11-13", "500", "400", "100", "0", "1", "1"),
		// Totals of the window (not the day before it).
		`data-testid="usage-total-tokens">1,751<`, `data-testid="usage-total-turns">5<`,
		// By model, most tokens first.
		row("kimi-k2", "1,501", "1,201", "300", "600", "5", "3"),
		row("kimi-backup", "250", "200", "50", "0", "1", "1"),
		// By guild: the bot's name where it knows one, the id otherwise.
		row("Tea Garden (4242)", "1,250", "1,000", "250", "600", "4", "4"),
		row("4343", "501", "401", "100", "0", "2", "1"),
		// Top users.
		row("7", "1,000", "800", "200", "600", "3", "3"),
		// The turn that finished, its latency (0 ms on a still clock).
		`data-testid="usage-turns-finished">1<`, `data-testid="usage-p50">0 ms<`,
		// Errors by kind.
		`data-testid="usage-error-provider_5xx"><td><code>provider_5xx</code></td><td class="num">2<`,
		`data-testid="usage-error-budget"><td><code>budget</code></td><td class="num">1<`,
		// Tool calls by ToolStat's rules: 3 ran, 1 failed.
		`<tr data-testid="usage-tool-give_kudos"><td><code>give_kudos</code></td><td>kudos</td><td class="num">3</td><td class="num">1</td><td class="num">33%</td>`)
	if strings.Contains(res.body, "99,000") || strings.Contains(res.body, "2023-10-15") {
		t.Error("the page counts the day before its window")
	}
	if strings.Contains(res.body, ">hi<") {
		t.Error("the page shows a message's text")
	}
	wantBody(t, c.get("/assistant"), `href="/assistant/usage"`)
}

// TestAssistantUsagePageFollowsChanges: the page keeps its rendered
// report only while nothing under it changed: a roll-up row written since,
// and a guild the bot has come to know by name since, show at the next
// request.
func TestAssistantUsagePageFollowsChanges(t *testing.T) {
	h := newHarness(t, withUsage(nil))
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	startBot(withToken(""))(t, h)
	seedUsageRows(t, h.st, "('2023-11-14', 4242, 7, 'kimi-k2', 1, 800, 200, 0, 1)")
	wantBody(t, c.get("/assistant/usage"), `data-testid="usage-total-tokens">1,000<`, "<td>4242</td>")

	seedUsageRows(t, h.st, "('2023-11-13', 4242, 8, 'kimi-k2', 1, 400, 100, 0, 1)")
	wantBody(t, c.get("/assistant/usage"), `data-testid="usage-total-tokens">1,500<`)

	h.fake.AddGuild(fakediscord.GuildSpec{ID: "4242", Name: "Tea Garden"})
	discordWait(t, "the guild's name", func() bool {
		for _, g := range h.bot.Status().Guilds {
			if g.ID == "4242" && g.Name != "" {
				return true
			}
		}
		return false
	})
	wantBody(t, c.get("/assistant/usage"), "<td>Tea Garden (4242)</td>", `data-testid="usage-total-tokens">1,500<`)
}

// TestAssistantUsagePageStates: with no usage in the window the page says
// so instead of drawing an empty chart; a server without the assistant's
// records answers 503; a visitor is sent to sign in.
func TestAssistantUsagePageStates(t *testing.T) {
	for _, tt := range []struct {
		name     string
		opts     []func(*Options)
		seed     string // a roll-up row ("" none)
		signedIn bool
		status   int
		want     []string
		dontWant []string
	}{
		{name: "nothing recorded", opts: []func(*Options){withUsage(nil)}, signedIn: true, status: http.StatusOK,
			want: []string{`data-testid="empty-state"`, "No usage yet", "2023-10-16"}, dontWant: []string{`data-testid="usage-chart"`}},
		{name: "only before the window", opts: []func(*Options){withUsage(nil)}, seed: "('2023-10-15', 10, 7, 'kimi-k2', 1, 50, 5, 0, 1)",
			signedIn: true, status: http.StatusOK, want: []string{"No usage yet"}, dontWant: []string{`class="chart-bar"`}},
		{name: "one token today", opts: []func(*Options){withUsage(nil)}, seed: "('2023-11-14', 10, 7, 'kimi-k2', 1, 1, 0, 0, 1)",
			signedIn: true, status: http.StatusOK, want: []string{`data-testid="usage-chart"`, `data-testid="usage-errors-none"`, `data-testid="usage-tools-none"`,
				`data-testid="usage-p99">—<`}, dontWant: []string{"No usage yet"}},
		{name: "no records on this server", opts: []func(*Options){withoutUsage}, signedIn: true, status: http.StatusServiceUnavailable},
		{name: "a visitor", opts: []func(*Options){withUsage(nil)}, status: http.StatusSeeOther},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts...)
			h.createAdmin()
			c := h.newClient()
			if tt.signedIn {
				c.login(testUser, testPassword)
			}
			if tt.seed != "" {
				seedUsageRows(t, h.st, tt.seed)
			}
			res := c.get("/assistant/usage")
			wantStatus(t, res, tt.status)
			wantBody(t, res, tt.want...)
			for _, s := range tt.dontWant {
				if strings.Contains(res.body, s) {
					t.Errorf("the page has %q", s)
				}
			}
		})
	}
}

// TestAssistantUsageMetrics: /metrics counts the model calls and tokens
// of every response recorded and the turns finished by model and outcome,
// with no user, guild or content in any series; the counters stay when
// the records they came from are deleted (they are the process's, not the
// database's), and a server without the records has none.
func TestAssistantUsageMetrics(t *testing.T) {
	const (
		userID  = 987654321987
		guildID = 876543219876
		text    = "canary-question-text"
	)
	var convs *assistant.Conversations
	h := newHarness(t, withUsage(&convs))
	ctx := context.Background()
	turnOf := func(msg uint64) assistant.TurnID {
		tr := assistant.Trigger{Place: assistant.Place{GuildID: guildID, ChannelID: 100}, Kind: assistant.KindMessage,
			MessageID: msg, AuthorID: userID, AuthorName: "Bo", Text: text}
		conv, err := convs.Open(ctx, tr)
		if err != nil {
			t.Fatal(err)
		}
		turn, err := convs.BeginTurn(ctx, conv, tr)
		if err != nil {
			t.Fatal(err)
		}
		return turn
	}
	scrape := func() string {
		res := h.newClient().get("/metrics", "Authorization", "Bearer metrics-secret-token")
		wantStatus(t, res, http.StatusOK)
		return grepLines(res.body, "kimi_assistant_")
	}
	if got := scrape(); strings.Contains(got, "kimi_assistant_tokens_total{") {
		t.Errorf("series before any usage:\n%s", got)
	}
	t1 := turnOf(1)
	for _, u := range []assistant.Usage{{Model: "kimi-k2", PromptTokens: 100, CompletionTokens: 10, CachedTokens: 60},
		{Model: "kimi-k2", PromptTokens: 150, CompletionTokens: 20}} {
		if err := convs.RecordUsage(ctx, t1, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := convs.FinishTurn(ctx, t1, assistant.Finish{Status: assistant.StatusDone, Reply: "canary-answer-text"}); err != nil {
		t.Fatal(err)
	}
	t2 := turnOf(2)
	if err := convs.RecordUsage(ctx, t2, assistant.Usage{Model: "kimi-k2", PromptTokens: 7}); err != nil {
		t.Fatal(err)
	}
	if err := convs.FinishTurn(ctx, t2, assistant.Finish{Status: assistant.StatusFailed, ErrorKind: assistant.KindProvider}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`kimi_assistant_model_calls_total{model="kimi-k2"} 3`,
		`kimi_assistant_tokens_total{kind="prompt",model="kimi-k2"} 257`,
		`kimi_assistant_tokens_total{kind="completion",model="kimi-k2"} 30`,
		`kimi_assistant_tokens_total{kind="cached",model="kimi-k2"} 60`,
		`kimi_assistant_turns_total{model="kimi-k2",outcome="done"} 1`,
		`kimi_assistant_turns_total{model="kimi-k2",outcome="failed"} 1`,
	}
	check := func(when string) {
		t.Helper()
		got := scrape() + "\n"
		for _, w := range want {
			if !strings.Contains(got, w+"\n") {
				t.Errorf("%s: no %s in:\n%s", when, w, got)
			}
		}
		for _, leak := range []string{strconv.Itoa(userID), strconv.Itoa(guildID), text, "canary-answer-text", "user", "guild"} {
			if strings.Contains(got, leak) {
				t.Errorf("%s: the assistant's series show %q:\n%s", when, leak, got)
			}
		}
	}
	check("after two turns")
	if _, err := h.st.Writer().Exec(`DELETE FROM kimi_assistant_conversations`); err != nil {
		t.Fatal(err)
	}
	check("after their records were deleted")

	bare := newHarness(t, withoutUsage)
	res := bare.newClient().get("/metrics", "Authorization", "Bearer metrics-secret-token")
	if strings.Contains(res.body, "kimi_assistant_") {
		t.Errorf("a server without the records has assistant series:\n%s", grepLines(res.body, "kimi_assistant_"))
	}
}

// TestHumanMillis: the page's latency is milliseconds below a second and
// seconds to one decimal, rounded half up, above (12,350 ms is 12.4 s,
// where a float's 12.35 would print 12.3), so it matches the latency
// roll-up's buckets.
func TestHumanMillis(t *testing.T) {
	for _, tt := range []struct {
		ms   int64
		want string
	}{
		{850, "850 ms"}, {999, "999 ms"}, {1000, "1.0 s"}, {1949, "1.9 s"}, {1950, "2.0 s"},
		{12_349, "12.3 s"}, {12_350, "12.4 s"}, {12_400, "12.4 s"}, {123_456, "123.5 s"},
	} {
		if got := humanMillis(time.Duration(tt.ms) * time.Millisecond); got != tt.want {
			t.Errorf("humanMillis(%d ms) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}
