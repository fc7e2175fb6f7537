package results

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestQuarantineEndIsSignalled (audit, issue 15): /results shows a
// quarantined module's subscriptions with a "quarantined" badge, read from
// the service after each change it signals (Watch). When the stuck
// handler returns, the quarantine ends; /results must hear of it even
// when no row of the module waited with DetailQuarantined (nothing to
// requeue), or the badge (and the live region) stays "quarantined" until
// some unrelated change.
func TestQuarantineEndIsSignalled(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.HandlerTimeout = 20 * time.Millisecond
		o.CancelGrace = 20 * time.Millisecond
		o.BlockedRetry = 24 * time.Hour
	})
	b, _ := e.bind(e.svc, "kudos")
	release := make(chan struct{})
	returned := make(chan struct{})
	h := &recorder{fn: func(ctx context.Context, r sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
		defer close(returned)
		<-release // ignores ctx
		return nil
	}}
	e.subscribe(b, guildA, h)
	e.enqueue(e.pub("run-1", guildA))
	waitFor(t, "run-1 blocked as stuck", func() bool {
		r := e.rows("run_id = 'run-1'")
		return len(r) == 1 && r[0].Status == StatusBlocked && r[0].Detail == DetailIgnoredCancel
	})
	k := SubKey{Module: "kudos", Name: "digest", GuildID: guildA}
	if sub, err := e.svc.Subscription(e.ctx, k); err != nil || !sub.Quarantined {
		t.Fatalf("during the quarantine: %+v, %v", sub, err)
	}
	settled(t, e.svc)

	changed := watchOnce(t, e.svc)
	close(release)
	<-returned
	waitFor(t, "the quarantine ends", func() bool { return !e.svc.isQuarantined("kudos") })
	waitSignal(t, changed, "the end of the quarantine")
	if sub, err := e.svc.Subscription(e.ctx, k); err != nil || sub.Quarantined {
		t.Fatalf("after the quarantine: %+v, %v", sub, err)
	}
}

// TestPurgeLeavesNoPublication (audit, issue 15): purging a
// subscription's expired notifications on /results, or unsubscribing it
// there, deletes the last notifications of an expired publication; the
// publication (the run's stored messages) must go too, not wait for some
// later publication's expiry to run the prune again (with none to come,
// forever). A publication that has not expired stays.
func TestPurgeLeavesNoPublication(t *testing.T) {
	admin := Actor{Admin: "admin", IP: "127.0.0.1"}
	for _, tc := range []struct {
		name string
		act  func(e *env, k SubKey) (int, error)
	}{
		{"purge expired", func(e *env, k SubKey) (int, error) { return e.svc.PurgeExpired(e.ctx, k, admin) }},
		{"unsubscribe", func(e *env, k SubKey) (int, error) { return e.svc.Unsubscribe(e.ctx, k, admin) }},
	} {
		testSpentPublication(t, tc.name, tc.act)
	}
}

// TestModuleUnsubscribeLeavesNoPublication (audit, issue 15): the same
// for a module's own Unsubscribe (port.go's deleteSubscription without the
// admin's extra): FAILS until deleteSubscription deletes the spent
// publications (e.g. with deleteSpentPublicationsTx in its transaction).
func TestModuleUnsubscribeLeavesNoPublication(t *testing.T) {
	testSpentPublication(t, "module unsubscribe", func(e *env, k SubKey) (int, error) {
		e.svc.mu.Lock()
		b := e.svc.latest[k.Module]
		e.svc.mu.Unlock()
		return 0, b.Unsubscribe(e.ctx, k.Name, k.GuildID)
	})
}

// testSpentPublication runs act on kudos/digest/guildA once an expired
// run (run-1) and an unexpired one (run-2) wait for it, and wants run-1's
// publication deleted and run-2's kept.
func testSpentPublication(t *testing.T, name string, act func(e *env, k SubKey) (int, error)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		e := newEnv(t)
		b, _ := e.bind(e.svc, "kudos")
		e.subscribe(b, guildA, &recorder{fn: func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error {
			return context.DeadlineExceeded // never acknowledged
		}})
		e.enqueue(e.pub("run-1", guildA))
		e.waitStatus("run-1", StatusRetry)
		e.clk.Advance(Retention + time.Minute)
		settled(t, e.svc)
		e.waitStatus("run-1", StatusExpired)
		e.enqueue(e.pub("run-2", guildA)) // not expired
		e.waitStatus("run-2", StatusRetry)

		if _, err := act(e, SubKey{Module: "kudos", Name: "digest", GuildID: guildA}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the expired run's publication deleted", func() bool {
			settled(t, e.svc)
			return e.count(`SELECT count(*) FROM kimi_result_publications WHERE run_id = 'run-1'`) == 0
		})
		if n := e.count(`SELECT count(*) FROM kimi_result_publications WHERE run_id = 'run-2'`); n != 1 {
			t.Errorf("the unexpired run's publication: %d rows, want 1", n)
		}
	})
}

// TestSetPausedUnchanged (audit, issue 15): a resume of a subscription
// that is not paused (a stale page's button) must not make its retrying
// and blocked rows due now, cutting their back-off, nor be audited as a
// resume that made them due; a second pause changes nothing. Both are
// audited as what they did: nothing.
func TestSetPausedUnchanged(t *testing.T) {
	f := newAdminFixture(t)
	f.subscribe(subA)
	retry := f.add(subA, adminRow{status: StatusRetry, retryIn: time.Hour, detail: "x"})
	blocked := f.add(subA, adminRow{status: StatusBlocked, retryIn: time.Minute, detail: DetailAccess})
	before := []int64{f.retryMs(retry), f.retryMs(blocked)}
	if err := f.svc.SetPaused(context.Background(), subA, false, admn); err != nil {
		t.Fatal(err)
	}
	if got := []int64{f.retryMs(retry), f.retryMs(blocked)}; !slices.Equal(got, before) {
		t.Errorf("a resume of a running subscription moved retry_ms %v → %v", before, got)
	}
	if r := f.auditRows(ActionResume); len(r) != 1 || r[0].Detail != DetailNotPaused {
		t.Errorf("resume audit = %+v", r)
	}
	for i := 0; i < 2; i++ {
		if err := f.svc.SetPaused(context.Background(), subA, true, admn); err != nil {
			t.Fatal(err)
		}
	}
	p := f.auditRows(ActionPause) // newest first
	if len(p) != 2 || p[0].Detail != DetailAlreadyPaused || p[1].Detail != DetailPaused {
		t.Errorf("pause audit = %+v", p)
	}
	if s, err := f.svc.Subscription(context.Background(), subA); err != nil || !s.Paused {
		t.Errorf("subscription = %+v, %v; want paused", s, err)
	}
	if err := f.svc.SetPaused(context.Background(), subB, false, admn); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown subscription: %v", err)
	}
}

// TestCountsFollowPublicationCascade (audit, issue 15): the trigger-kept
// counts of /results follow the rows deleted by the cascade from
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
