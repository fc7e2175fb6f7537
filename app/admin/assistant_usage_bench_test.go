package admin

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// BenchmarkAssistantUsagePage drives /assistant/usage over a year of the
// roll-up (365 days × 20 guilds × 200 members each: 1.46 million rows,
// 120,000 of them in the page's 30 days) with 10,000 finished turns and
// 20,000 tool calls in the window, and /assistant/conversations over
// 100,000 conversations, each from 50 signed-in clients like
// BenchmarkOverviewParallel, beside the overview page on the same
// database in the same run. Budget: p99 ≤ 20 ms each; each page's
// ratio-to-overview is its p99 over the overview's.
//
// The usage page keeps its report until a row it reads changes
// (migration 00015's usage version): usage-cold measures the page with a
// roll-up row written before every request, one client at a time, so
// every request reads the report afresh.
//
// The conversations page lists 100,000 conversations, each with one
// finished turn (seeded once).
func BenchmarkAssistantUsagePage(b *testing.B) {
	h := newHarness(b, withUsage(nil))
	h.createAdmin()
	seedUsageYear(b, h.st)
	var overview float64
	b.Run("overview", func(b *testing.B) { overview = benchPage(b, h, "/") })
	ratio := func(b *testing.B, p99 float64) {
		if overview > 0 {
			b.ReportMetric(p99/overview, "ratio-to-overview")
		}
	}
	b.Run("usage", func(b *testing.B) { ratio(b, benchPage(b, h, "/assistant/usage")) })
	b.Run("usage-cold", func(b *testing.B) { ratio(b, benchUsageCold(b, h)) })
	var seeded sync.Once // b.Run calls the function again for each b.N
	b.Run("conversations", func(b *testing.B) {
		seeded.Do(func() { seedBenchConversations(b, h.st, 100_000) })
		ratio(b, benchPage(b, h, "/assistant/conversations"))
	})
}

// benchUsageCold requests /assistant/usage after a roll-up write each
// time, and reports (and returns) the p99 in milliseconds.
func benchUsageCold(b *testing.B, h *harness) float64 {
	c := h.newClient()
	c.login(testUser, testPassword)
	all := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if _, err := h.st.Writer().Exec(`UPDATE kimi_assistant_usage SET calls = calls + 1
			WHERE day = '2023-11-14' AND guild_id = 1 AND user_id = ? AND model = 'kimi-k2'`, 1+i%200); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		res := c.get("/assistant/usage")
		all = append(all, time.Since(start))
		if res.StatusCode != http.StatusOK {
			b.Fatalf("GET /assistant/usage = %d", res.StatusCode)
		}
	}
	b.StopTimer()
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(float64(len(all)-1)*p)].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	return pct(0.99)
}

// seedUsageYear writes the year of roll-up rows ending on usageNow's day
// (guilds 1 to 20, each with its own 200 members), their error counts (one
// kind a guild a day), and 10,000 finished turns with 20,000 tool calls
// in the window.
func seedUsageYear(b *testing.B, st *store.Store) {
	b.Helper()
	for _, q := range []string{
		`WITH RECURSIVE d(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM d WHERE n < 364),
			g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 20),
			u(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM u WHERE n < 200)
		INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, calls, prompt_tokens, completion_tokens, cached_tokens, turns)
		SELECT date('2023-11-14', '-' || d.n || ' days'), g.n, (g.n - 1) * 200 + u.n, 'kimi-k2',
			1 + (u.n % 3), 1000 + (d.n * 7 + u.n * 13) % 5000, 100 + (u.n * 31) % 400, (u.n * 17) % 800, 1 + (u.n % 2)
		FROM d, g, u`,
		`WITH RECURSIVE d(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM d WHERE n < 364),
			g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 20)
		INSERT INTO kimi_assistant_usage_errors (day, guild_id, user_id, kind, count)
		SELECT date('2023-11-14', '-' || d.n || ' days'), g.n, (g.n - 1) * 200 + 1,
			CASE (d.n + g.n) % 4 WHEN 0 THEN 'provider_5xx' WHEN 1 THEN 'timeout' WHEN 2 THEN 'budget' ELSE 'tool_error' END, 1 + d.n % 3
		FROM d, g`,
		`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms)
		VALUES (1, 1, 100, 1, 1, 0, 0)`,
		`WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10000)
		INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status,
			started_ms, duration_ms, iterations, model_served)
		SELECT n, 1, 'message', n, 1 + n % 200, 1, 100, 'done', ? - n * 200000, 500 + (n * 37) % 9000, 2, 'kimi-k2' FROM t`,
		`WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 20000)
		INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, module, outcome, duration_ms, created_ms)
		SELECT 1 + (n - 1) / 2, 1 + (n - 1) % 2, CASE n % 3 WHEN 0 THEN 'give_kudos' WHEN 1 THEN 'kudos_leaderboard' ELSE 'browse_tools' END,
			CASE n % 3 WHEN 2 THEN '' ELSE 'kudos' END, CASE WHEN n % 17 = 0 THEN 'failed' ELSE 'ok' END, 40, ? - n * 100000 FROM c`,
	} {
		if _, err := st.Writer().Exec(q, usageNow.UnixMilli()); err != nil {
			b.Fatalf("seed: %v\n%s", err, q)
		}
	}
}

// seedBenchConversations writes n conversations in guild 1, each with one
// finished turn, the newest at usageNow.
func seedBenchConversations(b *testing.B, st *store.Store, n int) {
	b.Helper()
	for _, q := range []string{
		`WITH RECURSIVE c(n) AS (SELECT 2 UNION ALL SELECT n + 1 FROM c WHERE n < ? + 1)
		INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms)
		SELECT n, 1 + n % 20, 1000 + n % 50, n, 1 + n % 4000, ? - n * 1000, ? - n * 1000 FROM c`,
		`INSERT INTO kimi_assistant_turns (conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status,
			started_ms, duration_ms, iterations, model_served, prompt_tokens, completion_tokens)
		SELECT id, 'message', root_message_id, owner_id, guild_id, channel_id, 'done', created_ms, 900, 1, 'kimi-k2', 1200, 80
		FROM kimi_assistant_conversations WHERE id >= 2`,
	} {
		if _, err := st.Writer().Exec(q, n, usageNow.UnixMilli(), usageNow.UnixMilli()); err != nil {
			b.Fatalf("seed: %v\n%s", err, q)
		}
	}
}
