package results

import (
	"strconv"
	"strings"
	"testing"
)

// TestQueryPlans shows SQLite's plan of every statement the dispatcher and
// /results run on kimi_result_notifications (go test -v prints them) and
// checks that none scans the table: each reads through the index named
// (migration 00018 merged /results' two status-keyed indexes into _status
// and keeps the live leases in the partial _leased), and the pages' keyset
// order is the index's, with no sort (but the few live leases'), a page
// after a cursor seeking to it.
func TestQueryPlans(t *testing.T) {
	f := newAdminFixture(t)
	type plan struct {
		name    string
		q       string
		indexes []string // each must appear in the plan
		sorted  bool     // a temp b-tree for ORDER BY is allowed
		seek    bool     // the index seeks to a page's cursor
	}
	plans := []plan{
		{"claim", strings.ReplaceAll(claimQuery, "?2", strconv.Itoa(prefetch*MaxInFlight)), []string{"kimi_result_notifications_due"}, true, false},
		{"claim's lease", `UPDATE kimi_result_notifications AS n SET attempts = n.attempts + j.inc,
			lease_token = j.token, lease_until_ms = ?2 FROM ` + leaseRows + ` AS j WHERE n.id = j.id`, []string{"sqlite_autoindex_kimi_result_notifications_1"}, false, false},
		{"acknowledge a batch", ackQuery, []string{"sqlite_autoindex_kimi_result_notifications_1"}, false, false},
		{"settle one", `UPDATE kimi_result_notifications SET status = ?, retry_ms = ? WHERE id = ? AND lease_token = ? AND lease_until_ms > ? AND expires_ms > ?`,
			[]string{"sqlite_autoindex_kimi_result_notifications_1"}, false, false},
		{"next due", nextDueSQL, []string{"kimi_result_notifications_due", "kimi_result_notifications_leased"}, false, false},
		{"module counts", moduleCountsSQL, []string{"kimi_result_notifications_leased"}, false, false},
		{"subscription", subscriptionSQL + ` WHERE s.module = ?2 AND s.name = ?3 AND s.guild_id = ?4`,
			[]string{"kimi_result_notifications_leased", "kimi_result_notifications_status", "kimi_result_notifications_error"}, false, false},
		{"next expiry", nextExpirySQL, []string{"kimi_result_notifications_status"}, false, false},
	}
	for _, st := range append([]Status{""}, Statuses...) {
		for _, after := range []bool{false, true} {
			q, byExpiry, _ := notificationsSQL(st, after)
			idx := "kimi_result_notifications_page"
			if st == StatusDelivering {
				idx = "kimi_result_notifications_leased"
			} else if byExpiry {
				idx = "kimi_result_notifications_status"
			}
			name := "notifications, status " + strconv.Quote(string(st))
			if after {
				name += ", after a cursor"
			}
			plans = append(plans, plan{name, q, []string{idx}, st == StatusDelivering, after && st != StatusDelivering})
		}
	}
	for _, p := range plans {
		// The driver wants every parameter bound (their values do not
		// change the plan): as many zeros as it asks for.
		var args []any
		rows, err := f.st.Reader().Query("EXPLAIN QUERY PLAN "+p.q, args...)
		for err != nil && strings.Contains(err.Error(), "missing") && len(args) < 32 {
			args = append(args, 0)
			rows, err = f.st.Reader().Query("EXPLAIN QUERY PLAN "+p.q, args...)
		}
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		var lines []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, detail)
		}
		rows.Close()
		all := strings.Join(lines, "\n")
		t.Logf("%s:\n  %s", p.name, strings.ReplaceAll(all, "\n", "\n  "))
		for _, l := range lines {
			if strings.HasPrefix(l, "SCAN n") && !strings.Contains(l, "USING") || l == "SCAN kimi_result_notifications" {
				t.Errorf("%s scans the notifications: %q\n%s", p.name, l, all)
			}
			if strings.Contains(l, "TEMP B-TREE FOR ORDER BY") && !p.sorted {
				t.Errorf("%s sorts its rows: %q\n%s", p.name, l, all)
			}
		}
		if p.seek && !strings.Contains(all, ",id)<(?,?)") {
			t.Errorf("%s reads the rows before its cursor:\n%s", p.name, all)
		}
		for _, idx := range p.indexes {
			if !strings.Contains(all, idx) {
				t.Errorf("%s does not read through %s:\n%s", p.name, idx, all)
			}
		}
	}
}
