package results

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"testing"
	"time"
)

// TestCountsFollowEveryChange: the kept counts equal a COUNT of the rows
// (as the service reads them) after inserts, leases, deletes, a purge and an
// unsubscribe's cascade, and a subscription made again starts at zero.
func TestCountsFollowEveryChange(t *testing.T) {
	f := newAdminFixture(t)
	f.subscribe(subA)
	f.subscribe(subB)
	var ids []string
	for i := 0; i < 12; i++ {
		ids = append(ids, f.add(subA, adminRow{status: Statuses[i%len(Statuses)], expired: Statuses[i%len(Statuses)] == StatusExpired}))
		f.add(subB, adminRow{status: StatusPending})
	}
	check := func(when string) {
		t.Helper()
		for _, k := range []SubKey{subA, subB} {
			want := Counts{}
			rows, err := f.st.Reader().Query(`SELECT CASE WHEN expires_ms <= ?1 AND status <> 'acknowledged' THEN 'expired'
				WHEN lease_token <> '' AND lease_until_ms > ?1 THEN 'delivering' ELSE status END, COUNT(*)
				FROM kimi_result_notifications WHERE module = ?2 AND name = ?3 AND guild_id = ?4 GROUP BY 1`,
				f.clock().UnixMilli(), k.Module, k.Name, int64(k.GuildID))
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var st Status
				var n int
				if err := rows.Scan(&st, &n); err != nil {
					t.Fatal(err)
				}
				want[st] = n
			}
			rows.Close()
			got, err := f.svc.Subscription(context.Background(), k)
			if errors.Is(err, ErrNotFound) {
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			for _, st := range Statuses {
				if got.Counts[st] != want[st] {
					t.Errorf("%s: %s count %s = %d, rows %d", when, k, st, got.Counts[st], want[st])
				}
			}
		}
	}
	check("after inserts")
	// A lease makes a row read as delivering, its lapse pending again
	// (the dispatcher's status changes: TestCountsExactAfterRandomWorkload).
	f.exec(`UPDATE kimi_result_notifications SET lease_token = 'tok', lease_until_ms = ? WHERE status = 'pending' AND module = 'kudos' AND guild_id = 42`,
		f.clock().Add(Lease).UnixMilli())
	f.exec(`UPDATE kimi_result_notifications SET attempts = attempts + 1`) // no status change
	check("after leases")
	f.exec(`UPDATE kimi_result_notifications SET lease_until_ms = ? WHERE id = ?`, f.clock().Add(-time.Second).UnixMilli(), ids[0])
	check("after a lease ran out")
	f.exec(`DELETE FROM kimi_result_notifications WHERE id = ?`, ids[4])
	if _, err := f.svc.PurgeExpired(context.Background(), subA, admn); err != nil {
		t.Fatal(err)
	}
	check("after deletes")
	if _, err := f.svc.Unsubscribe(context.Background(), subB, admn); err != nil {
		t.Fatal(err)
	}
	f.exec(`DELETE FROM kimi_result_subscriptions WHERE module = ? AND name = ? AND guild_id = ?`, subA.Module, subA.Name, int64(subA.GuildID))
	var left int
	if err := f.st.Reader().QueryRow(`SELECT COUNT(*) FROM kimi_result_counts`).Scan(&left); err != nil || left != 0 {
		t.Errorf("counts rows left after the subscriptions went: %d, %v", left, err)
	}
	f.subscribe(subA)
	f.add(subA, adminRow{status: StatusPending})
	check("subscribed again")
}

// TestCountsFollowPublicationCascade: the trigger-kept counts of
// /results follow the rows deleted by the cascade from
// kimi_result_publications (the producer's RevokeRun and RevokeTask),
// which TestCountsFollowEveryChange does not cover.
func TestCountsFollowPublicationCascade(t *testing.T) {
	f := newAdminFixture(t)
	f.subscribe(subA)
	f.add(subA, adminRow{status: StatusPending, run: "r1"})
	f.add(subA, adminRow{status: StatusRetry, run: "r2"})
	f.add(subA, adminRow{status: StatusBlocked, run: "r3"})
	for _, revoke := range []func(tx *sql.Tx) error{
		func(tx *sql.Tx) error { return f.svc.RevokeRun(context.Background(), tx, "r1") },
		func(tx *sql.Tx) error { return f.svc.RevokeTask(context.Background(), tx, "task-r2") },
	} {
		if err := f.st.Write(context.Background(), revoke); err != nil {
			t.Fatal(err)
		}
	}
	s, err := f.svc.Subscription(context.Background(), subA)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{StatusBlocked: 1}); !maps.Equal(s.Counts, want) || f.notificationCount(subA) != 1 {
		t.Errorf("counts after the revocations = %v (rows %d), want %v", s.Counts, f.notificationCount(subA), want)
	}
}
