package results

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestAccessBeforeHandler: a producer refusing access, or no producer at
// all, blocks the row (DetailAccess) without calling the handler.
func TestAccessBeforeHandler(t *testing.T) {
	for _, tc := range []struct {
		name string
		tune func(*Options)
		deny bool
	}{
		{"producer refuses", nil, true},
		{"no producer", func(o *Options) { o.Producer = nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tune []func(*Options)
			if tc.tune != nil {
				tune = append(tune, tc.tune)
			}
			e := newEnv(t, tune...)
			e.prod.setDeny(tc.deny)
			b, _ := e.bind(e.svc, "kudos")
			h := &recorder{}
			e.subscribe(b, guildA, h)
			e.enqueue(e.pub("run-1", guildA))
			r := e.waitStatus("run-1", StatusBlocked)
			if r.Detail != DetailAccess || r.RetryMs != e.clk.Now().Add(BlockedRetry).UnixMilli() || h.n() != 0 {
				t.Fatalf("row = %+v, calls %d", r, h.n())
			}
		})
	}
}

// TestAccessRecheckAfterHandler: the checks run again after the handler
// returns. A failed handler whose access went meanwhile is blocked with
// the check's detail (a retry could not be delivered); one that returned
// nil is acknowledged anyway (the data was handed over).
func TestAccessRecheckAfterHandler(t *testing.T) {
	for _, tc := range []struct {
		name   string
		revoke func(e *env, m *mod)
		err    error
		status Status
		detail string
	}{
		{"owner access lost, handler failed", func(e *env, _ *mod) { e.prod.setDeny(true) }, errors.New("x"), StatusBlocked, DetailAccess},
		{"guild inactive, handler failed", func(_ *env, m *mod) { m.setInactive(guildA, true) }, errors.New("x"), StatusBlocked, DetailInactive},
		{"instance stopped, handler failed", func(_ *env, m *mod) { m.running.Store(false) }, errors.New("x"), StatusBlocked, DetailUnavailable},
		{"owner access lost, handler acknowledged", func(e *env, _ *mod) { e.prod.setDeny(true) }, nil, StatusAcknowledged, ""},
		{"nothing lost, handler failed", func(*env, *mod) {}, errors.New("x"), StatusRetry, "Subscriber raised *errors.errorString"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			b, m := e.bind(e.svc, "kudos")
			e.subscribe(b, guildA, &recorder{fn: func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error {
				tc.revoke(e, m)
				return tc.err
			}})
			e.enqueue(e.pub("run-1", guildA))
			if r := e.waitStatus("run-1", tc.status); r.Detail != tc.detail {
				t.Fatalf("detail = %q, want %q", r.Detail, tc.detail)
			}
		})
	}
}

// TestRevokedMidHandlerLosesLease: a run revoked (task deleted) while its
// handler runs has nothing left to settle, and its reads fail.
func TestRevokedMidHandlerLosesLease(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "kudos")
	e.prod.files["att-1"] = []byte("hello")
	readErr := make(chan error, 1)
	e.subscribe(b, guildA, &recorder{fn: func(ctx context.Context, _ sdk.ScheduledResult, f sdk.ScheduledResultFiles) error {
		if err := e.st.Write(ctx, func(tx *sql.Tx) error { return e.svc.RevokeTask(ctx, tx, "task-1") }); err != nil {
			return err
		}
		_, err := f.Read(ctx, "att-1", 100)
		readErr <- err
		return nil
	}})
	e.enqueue(e.pub("run-1", guildA))
	err := <-readErr
	var ae *sdk.ScheduledResultAccessError
	if !errors.As(err, &ae) || ae.Message != DetailLeaseLost {
		t.Fatalf("read after revoke: %v", err)
	}
	settled(t, e.svc)
	if n := e.count(`SELECT count(*) FROM kimi_result_notifications`) + e.count(`SELECT count(*) FROM kimi_result_publications`); n != 0 {
		t.Fatalf("%d rows left after revoke", n)
	}
}

// TestRevokeRun: RevokeRun deletes one run's publication and
// notifications, others stay.
func TestRevokeRun(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "kudos")
	e.subscribe(b, guildA, &recorder{fn: func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return errors.New("keep") }})
	e.enqueue(e.pub("run-1", guildA))
	e.enqueue(e.pub("run-2", guildA))
	if err := e.st.Write(e.ctx, func(tx *sql.Tx) error { return e.svc.RevokeRun(e.ctx, tx, "run-1") }); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM kimi_result_notifications WHERE run_id = 'run-1'`) + e.count(`SELECT count(*) FROM kimi_result_publications WHERE run_id = 'run-1'`); n != 0 {
		t.Fatalf("run-1 rows left: %d", n)
	}
	if n := e.count(`SELECT count(*) FROM kimi_result_publications WHERE run_id = 'run-2'`); n != 1 {
		t.Fatalf("run-2 publication gone")
	}
}

// TestQuarantine: a handler that ignores cancellation blocks its row
// (DetailIgnoredCancel), fails the module's health and quarantines the
// module: its other due rows block with DetailQuarantined without a call
// while another module is delivered. When the stuck goroutine returns the
// quarantine clears and the quarantined rows are delivered at once.
func TestQuarantine(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.HandlerTimeout = 20 * time.Millisecond
		o.CancelGrace = 20 * time.Millisecond
		o.BlockedRetry = 24 * time.Hour
	})
	b, m := e.bind(e.svc, "kudos")
	release := make(chan struct{})
	h := &recorder{fn: func(ctx context.Context, r sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
		if r.RunID == "run-1" {
			<-release // ignores ctx
		}
		return nil
	}}
	e.subscribe(b, guildA, h)
	other, _ := e.bind(e.svc, "tally")
	oh := &recorder{}
	e.subscribe(other, guildA, oh)

	e.enqueue(e.pub("run-1", guildA))
	waitFor(t, "run-1 blocked as stuck", func() bool {
		r := e.rows("run_id = 'run-1' AND module = 'kudos'")
		return len(r) == 1 && r[0].Status == StatusBlocked && r[0].Detail == DetailIgnoredCancel
	})
	waitFor(t, "failed health", func() bool {
		hr, ok := m.lastHealth()
		return ok && hr.state == sdk.HealthFailed && hr.detail == DetailIgnoredCancel
	})
	e.enqueue(e.pub("run-2", guildA))
	waitFor(t, "run-2 blocked by the quarantine", func() bool {
		r := e.rows("run_id = 'run-2' AND module = 'kudos'")
		return len(r) == 1 && r[0].Status == StatusBlocked && r[0].Detail == DetailQuarantined
	})
	waitFor(t, "the other module's rows delivered", func() bool {
		return len(e.rows("module = 'tally' AND status = 'acknowledged'")) == 2
	})
	if n := h.n(); n != 1 {
		t.Fatalf("kudos handler called %d times during quarantine, want 1", n)
	}
	close(release)
	waitFor(t, "run-2 delivered after the quarantine", func() bool {
		r := e.rows("run_id = 'run-2' AND module = 'kudos'")
		return len(r) == 1 && r[0].Status == StatusAcknowledged
	})
	waitFor(t, "health no longer failed", func() bool {
		hr, ok := m.lastHealth()
		return ok && hr.state == sdk.HealthDegraded && hr.detail == "Scheduled results: 1 blocked, 0 retrying"
	})
	if e.svc.isQuarantined("kudos") {
		t.Fatal("still quarantined")
	}
}

// TestQuarantineEndIsSignalled: /results shows a quarantined module's
// subscriptions with a "quarantined" badge, read from the service after
// each change it signals (Watch). When the stuck handler returns, the
// quarantine ends; /results must hear of it even when no row of the module
// waited with DetailQuarantined (nothing to requeue), or the badge (and
// the live region) stays "quarantined" until some unrelated change.
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
