package admin

import (
	"slices"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/results"
)

// TestResultSubRow: the badges of each registry state and pause, the
// guild's name when the bot knows it, every status' count in display
// order with its filter link, and the times.
func TestResultSubRow(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	k := results.SubKey{Module: "kudos", Name: "digest", GuildID: 42}
	names := map[uint64]string{42: "Kudos guild"}
	for _, tc := range []struct {
		name string
		sub  results.Subscription
		want []string
	}{
		{"not registered", results.Subscription{SubKey: k}, []string{"not registered"}},
		{"registered", results.Subscription{SubKey: k, Registered: true}, []string{"registered"}},
		{"quarantined wins over registered", results.Subscription{SubKey: k, Registered: true, Quarantined: true}, []string{"quarantined"}},
		{"paused", results.Subscription{SubKey: k, Paused: true}, []string{"not registered", "paused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := resultSubRow(tc.sub, names, "", now)
			var got []string
			for _, b := range r.Badges {
				got = append(got, b.Text)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("badges = %v, want %v", got, tc.want)
			}
		})
	}
	sub := results.Subscription{SubKey: k, Counts: results.Counts{results.StatusBlocked: 3},
		OldestPending: now.Add(-2 * time.Hour), LastError: results.DetailAccess, LastErrorAt: now.Add(-5 * time.Minute)}
	r := resultSubRow(sub, names, "blocked", now)
	if r.GuildName != "Kudos guild" || r.Guild != "42" || r.TestKey != "kudos-digest-42" || r.URL != "/results/kudos/digest/42" {
		t.Errorf("row = %+v", r)
	}
	if len(r.Counts) != len(results.Statuses) {
		t.Fatalf("counts = %+v", r.Counts)
	}
	for i, n := range r.Counts {
		if n.Status != string(results.Statuses[i]) || n.URL != "/results/kudos/digest/42?status="+n.Status ||
			(n.Status == "blocked") != (n.Count == 3 && n.Active) {
			t.Errorf("count %d = %+v", i, n)
		}
	}
	if r.Oldest != "2 hours ago" || r.LastErrorAt != "5 minutes ago" || r.LastError != results.DetailAccess {
		t.Errorf("times = %q, %q, %q", r.Oldest, r.LastErrorAt, r.LastError)
	}
	if r := resultSubRow(results.Subscription{SubKey: k}, map[uint64]string{}, "", now); r.GuildName != "" || r.Oldest != "" {
		t.Errorf("unknown guild row = %+v", r)
	}
}
