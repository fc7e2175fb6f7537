package results

import (
	"context"
	"testing"
	"time"
)

// TestRunNotifications lists one run's notifications, one per
// subscription in key order, with their states (an open row past its
// expiry as expired), and nothing of another run or of a run never
// published.
func TestRunNotifications(t *testing.T) {
	f := newAdminFixture(t)
	a := SubKey{Module: "alpha", Name: "feed", GuildID: 42}
	k := SubKey{Module: "kudos", Name: "digest", GuildID: 42}
	f.subscribe(a)
	f.subscribe(k)
	kid := f.add(k, adminRow{age: time.Hour, status: StatusRetry, retryIn: time.Minute, detail: "Subscriber raised boom", run: "run-a"})
	aid := f.add(a, adminRow{age: time.Hour, status: StatusAcknowledged, run: "run-a"})
	f.add(k, adminRow{age: time.Hour, status: StatusPending, run: "run-b"})
	eid := f.add(a, adminRow{age: time.Hour, status: StatusPending, expired: true, run: "run-c"})

	ctx := context.Background()
	got, err := f.svc.RunNotifications(ctx, "run-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("run-a: %d notifications, want 2: %+v", len(got), got)
	}
	if got[0].ID != aid || got[0].SubKey != a || got[0].Status != StatusAcknowledged || got[0].AcknowledgedAt.IsZero() {
		t.Errorf("first = %+v, want alpha/feed acknowledged", got[0])
	}
	if got[1].ID != kid || got[1].SubKey != k || got[1].Status != StatusRetry || got[1].Attempts != 1 ||
		got[1].Detail != "Subscriber raised boom" || !got[1].RetryAt.Equal(f.clock().Add(time.Minute)) {
		t.Errorf("second = %+v, want kudos/digest retry with its detail and next attempt", got[1])
	}
	if got, err := f.svc.RunNotifications(ctx, "run-c"); err != nil || len(got) != 1 || got[0].ID != eid || got[0].Status != StatusExpired {
		t.Errorf("run-c = %+v, %v; want its one row, expired", got, err)
	}
	if got, err := f.svc.RunNotifications(ctx, "never-published"); err != nil || len(got) != 0 {
		t.Errorf("unknown run = %+v, %v; want none, no error", got, err)
	}
}
