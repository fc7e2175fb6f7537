package admin

import (
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/results"
)

// resultsBenchRows is the DESIGN budget's load: admin pages p99 ≤ 20 ms
// with 100k notifications.
const resultsBenchRows = 100_000

// BenchmarkResultsPages drives GET /results and a subscription's page as
// benchPage does (50 signed-in clients over loopback HTTP) over 100k
// notifications in three subscriptions: the busy one holds 99,000 (mostly
// acknowledged, 2% waiting: pending, retry, blocked; 1% expired), the
// other two 500 each. Budget: p99 ≤ 20 ms.
func BenchmarkResultsPages(b *testing.B) {
	// Three sub-benchmarks, each run several times to size b.N, each
	// signing in once: more than the default sign-in budget.
	h := newHarness(b, func(o *Options) { o.LoginBurst, o.UserBurst = 1000, 1000 })
	h.createAdmin()
	busy := results.SubKey{Module: "kudos", Name: "digest", GuildID: testGuild}
	for _, k := range []results.SubKey{busy, {Module: "kudos", Name: "weekly", GuildID: testGuild}, {Module: "alpha", Name: "feed", GuildID: 7}} {
		h.addSubscription(b, k)
	}
	now := time.Now().UnixMilli()
	tx, err := h.st.Writer().Begin()
	if err != nil {
		b.Fatal(err)
	}
	// Rows 1..99,000 are the busy subscription's; the rest alternate
	// between the other two. One publication per row, published a second
	// apart, newest last.
	if _, err := tx.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO kimi_result_publications (run_id, task_id, revision, guild_id, owner_id, published_ms, expires_ms, messages)
		SELECT printf('run-%d', i), printf('task-%d', i % 40), 1, CASE WHEN i > 99000 AND i % 2 = 0 THEN 7 ELSE 42 END, 9,
		       ? - (? - i) * 1000, ? - (? - i) * 1000 + ?, '[]' FROM n`,
		resultsBenchRows, now, resultsBenchRows, now, resultsBenchRows, results.Retention.Milliseconds()); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO kimi_result_notifications (id, run_id, module, name, guild_id, published_ms, expires_ms, status, attempts, retry_ms, detail, detail_ms, acknowledged_ms)
		SELECT printf('%032x', p.rowid), p.run_id,
		       CASE WHEN p.guild_id = 7 THEN 'alpha' ELSE 'kudos' END,
		       CASE WHEN p.guild_id = 7 THEN 'feed' WHEN p.rowid > 99000 THEN 'weekly' ELSE 'digest' END,
		       p.guild_id, p.published_ms,
		       CASE WHEN p.rowid % 100 = 1 THEN ? - 1 ELSE p.expires_ms END,
		       CASE p.rowid % 100 WHEN 1 THEN 'expired' WHEN 2 THEN 'pending' WHEN 3 THEN 'retry' WHEN 4 THEN 'blocked' ELSE 'acknowledged' END,
		       CASE WHEN p.rowid % 100 IN (3, 4) THEN 2 ELSE 1 END,
		       CASE WHEN p.rowid % 100 IN (3, 4) THEN ? + 60000 ELSE 0 END,
		       CASE p.rowid % 100 WHEN 3 THEN 'Subscriber raised *errors.errorString' WHEN 4 THEN ? ELSE '' END,
		       CASE WHEN p.rowid % 100 IN (3, 4) THEN p.published_ms ELSE 0 END,
		       CASE WHEN p.rowid % 100 > 4 THEN p.published_ms + 50 ELSE 0 END
		  FROM kimi_result_publications p`, now, now, results.DetailAccess); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	var n int
	if err := h.st.Reader().QueryRow(`SELECT COUNT(*) FROM kimi_result_notifications`).Scan(&n); err != nil || n != resultsBenchRows {
		b.Fatalf("notifications = %d, %v", n, err)
	}
	b.Run("list", func(b *testing.B) { benchPage(b, h, "/results") })
	b.Run("subscription", func(b *testing.B) { benchPage(b, h, resultPage) })
	b.Run("subscription-blocked", func(b *testing.B) { benchPage(b, h, resultPage+"?status=blocked") })
}
