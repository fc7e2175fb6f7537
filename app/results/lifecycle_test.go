package results

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestExpiry: prune marks a never-acknowledged row past its expiry
// expired (never delivered after), deletes acknowledged rows past expiry,
// and deletes expired rows and their publication a further Retention on.
func TestExpiry(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.BlockedRetry = time.Hour })
	b, m := e.bind(e.svc, "kudos")
	h := &recorder{}
	e.subscribe(b, guildA, h)
	e.enqueue(e.pub("run-ack", guildA))
	e.waitStatus("run-ack", StatusAcknowledged)
	m.setInactive(guildA, true)
	e.enqueue(e.pub("run-late", guildA))
	e.waitStatus("run-late", StatusBlocked)

	e.clk.Advance(Retention)
	m.setInactive(guildA, false)
	e.svc.signal()
	e.waitStatus("run-late", StatusExpired)
	waitFor(t, "acknowledged row past expiry deleted", func() bool {
		return e.count(`SELECT count(*) FROM kimi_result_notifications WHERE run_id = 'run-ack'`) == 0 &&
			e.count(`SELECT count(*) FROM kimi_result_publications WHERE run_id = 'run-ack'`) == 0
	})
	waitFor(t, "health counts the expired row", func() bool {
		hr, ok := m.lastHealth()
		return ok && hr.state == sdk.HealthHealthy && hr.metrics["results_expired"] == 1 && hr.metrics["results_blocked"] == 0
	})
	settled(t, e.svc)
	if h.n() != 1 {
		t.Fatalf("calls = %d, want 1 (the expired row was delivered)", h.n())
	}
	if n := e.count(`SELECT count(*) FROM kimi_result_publications WHERE run_id = 'run-late'`); n != 1 {
		t.Fatalf("publication of an expired row deleted early")
	}
	e.clk.Advance(Retention)
	e.svc.signal()
	waitFor(t, "expired row purged after another Retention", func() bool {
		return e.count(`SELECT count(*) FROM kimi_result_notifications`)+e.count(`SELECT count(*) FROM kimi_result_publications`) == 0
	})
}

// TestExpiredWhileDelivering: a row that expires while its handler runs
// (its lease still live) is not acknowledged: the settle is guarded by
// expiry, and prune marks it expired.
func TestExpiredWhileDelivering(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "kudos")
	e.subscribe(b, guildA, &recorder{fn: func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error {
		e.clk.Advance(31 * time.Second) // past expiry, within the lease
		return nil
	}})
	p := e.pub("run-1", guildA)
	p.PublishedAt = e.clk.Now().Add(-Retention + 30*time.Second)
	e.enqueue(p)
	if r := e.waitStatus("run-1", StatusExpired); r.AckMs != 0 {
		t.Fatalf("row = %+v", r)
	}
}

// TestLeaseExpiryRedelivery: a process that claimed a row and died
// (here: its handler never returns and it is dropped) leaves the lease to
// expire; a second service on the same database delivers the row again
// with the same id, and the first one's late acknowledgement writes
// nothing. The clock moves only once the first handler runs: the row
// reads delivering as soon as it is claimed, before the first service's
// checks, which would then see the lease run out and never call the
// handler (a lost lease is not delivered), so the late outcome this test
// is about would never come.
func TestLeaseExpiryRedelivery(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.HandlerTimeout = time.Hour; o.CancelGrace = time.Hour })
	b, _ := e.bind(e.svc, "kudos")
	entered, release := make(chan struct{}), make(chan struct{})
	enter := sync.OnceFunc(func() { close(entered) })
	first := &recorder{fn: func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error {
		enter()
		<-release
		return nil
	}}
	e.subscribe(b, guildA, first)
	e.enqueue(e.pub("run-1", guildA))
	claimed := e.waitStatus("run-1", StatusDelivering)
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for the first handler to run")
	}
	if claimed.LeaseMs != e.clk.Now().Add(Lease).UnixMilli() || claimed.Attempts != 1 {
		t.Fatalf("claimed row = %+v", claimed)
	}

	s2 := e.newService()
	b2, _ := e.bind(s2, "kudos")
	second := &recorder{}
	e.subscribe(b2, guildA, second)
	s2.Start()
	settled(t, s2)
	if second.n() != 0 {
		t.Fatal("a live lease was claimed by the second service")
	}
	e.clk.Advance(Lease)
	s2.signal()
	r := e.waitStatus("run-1", StatusAcknowledged)
	if r.Attempts != 2 || r.ID != claimed.ID || second.n() != 1 || second.all()[0].NotificationID != claimed.ID {
		t.Fatalf("redelivered row = %+v, calls %d", r, second.n())
	}
	ackMs := r.AckMs
	e.clk.Advance(time.Second)
	close(release)
	waitFor(t, "the first service's late outcome handled", func() bool {
		e.svc.mu.Lock()
		defer e.svc.mu.Unlock()
		return first.n() == 1 && len(e.svc.inflight) == 0
	})
	if r := e.one("run-1"); r.AckMs != ackMs || r.Attempts != 2 {
		t.Fatalf("late ack rewrote the row: %+v", r)
	}
}

// TestBatchedClaim: rows ready together are claimed in one transaction.
func TestBatchedClaim(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxInFlight = 8 })
	e.svc.Close(e.ctx)
	s := e.newService(func(o *Options) { o.MaxInFlight = 8 })
	e.svc = s
	b, _ := e.bind(s, "kudos")
	var running atomic.Int64
	gate := make(chan struct{})
	h := &recorder{fn: func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error {
		running.Add(1)
		<-gate
		return nil
	}}
	e.subscribe(b, guildA, h)
	for i := range 8 {
		e.enqueue(e.pub("run-"+string(rune('a'+i)), guildA))
	}
	s.Start()
	waitFor(t, "eight handlers running at once", func() bool { return running.Load() == 8 })
	if n := s.claimTxs.Load(); n != 1 {
		t.Fatalf("claim transactions = %d, want 1", n)
	}
	before := s.commits.Load()
	close(gate)
	waitFor(t, "all acknowledged", func() bool { return len(e.rows("status = 'acknowledged'")) == 8 })
	if n := s.commits.Load() - before; n > 8 {
		t.Fatalf("%d step commits for 8 settles", n)
	}
}

// TestMaxInFlight: never more handlers at once than MaxInFlight, and
// every row is delivered.
func TestMaxInFlight(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxInFlight = 3 })
	b, _ := e.bind(e.svc, "kudos")
	var mu sync.Mutex
	cur, peak := 0, 0
	gate := make(chan struct{}, 100)
	h := &recorder{fn: func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error {
		mu.Lock()
		cur++
		peak = max(peak, cur)
		mu.Unlock()
		<-gate
		mu.Lock()
		cur--
		mu.Unlock()
		return nil
	}}
	e.subscribe(b, guildA, h)
	for i := range 10 {
		e.enqueue(e.pub("run-"+string(rune('a'+i)), guildA))
	}
	waitFor(t, "three running", func() bool { mu.Lock(); defer mu.Unlock(); return cur == 3 })
	for range 10 {
		gate <- struct{}{}
	}
	waitFor(t, "all acknowledged", func() bool { return len(e.rows("status = 'acknowledged'")) == 10 })
	mu.Lock()
	defer mu.Unlock()
	if peak != 3 {
		t.Fatalf("peak concurrency = %d, want 3", peak)
	}
}

// TestDefaultMaxInFlight: the default bound is four.
func TestDefaultMaxInFlight(t *testing.T) {
	s, err := New(Options{Store: openStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	if s.opts.MaxInFlight != 4 || s.opts.Lease != 60*time.Second || s.opts.HandlerTimeout != 30*time.Second || s.opts.CancelGrace != 5*time.Second || s.opts.BlockedRetry != time.Minute {
		t.Fatalf("defaults = %+v", s.opts)
	}
}

// TestEventDriven: with every delay huge, an enqueue is delivered at
// once — by its signal, not a timer.
func TestEventDriven(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.BlockedRetry = 24 * time.Hour; o.Lease = 24 * time.Hour })
	b, _ := e.bind(e.svc, "kudos")
	e.subscribe(b, guildA, &recorder{})
	for i := range 5 {
		e.enqueue(e.pub("run-"+string(rune('a'+i)), guildA))
		e.waitStatus("run-"+string(rune('a'+i)), StatusAcknowledged)
	}
	if n := e.svc.timerFires.Load(); n != 0 {
		t.Fatalf("timer fired %d times", n)
	}
}

// TestPausedNotClaimed: a paused subscription's rows are not claimed;
// resumed, they are.
func TestPausedNotClaimed(t *testing.T) {
	e := newEnv(t)
	b, _ := e.bind(e.svc, "kudos")
	h := &recorder{}
	e.subscribe(b, guildA, h)
	if _, err := e.st.Writer().Exec(`UPDATE kimi_result_subscriptions SET paused = 1`); err != nil {
		t.Fatal(err)
	}
	e.enqueue(e.pub("run-1", guildA))
	settled(t, e.svc)
	if r := e.one("run-1"); r.Status != StatusPending || h.n() != 0 {
		t.Fatalf("paused row = %+v, calls %d", r, h.n())
	}
	if _, err := e.st.Writer().Exec(`UPDATE kimi_result_subscriptions SET paused = 0`); err != nil {
		t.Fatal(err)
	}
	e.svc.changed("kudos")
	e.waitStatus("run-1", StatusAcknowledged)
}

// TestHealthAtSubscribe: subscribing reports the module's queue at once.
func TestHealthAtSubscribe(t *testing.T) {
	e := newEnv(t)
	b, m := e.bind(e.svc, "kudos")
	e.subscribe(b, guildA, &recorder{})
	hr, ok := m.lastHealth()
	if !ok || hr.state != sdk.HealthHealthy || hr.detail != "" || len(hr.metrics) != 6 {
		t.Fatalf("health at subscribe = %+v", hr)
	}
	for _, st := range Statuses {
		if v, ok := hr.metrics["results_"+string(st)]; !ok || v != 0 {
			t.Fatalf("metric results_%s = %v %v", st, v, ok)
		}
	}
}

// TestCloseCancelsHandlers: Close cancels a running handler, waits for
// it and settles its outcome; a later enqueue is refused.
func TestCloseCancelsHandlers(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.HandlerTimeout = time.Hour })
	b, _ := e.bind(e.svc, "kudos")
	started := make(chan struct{})
	e.subscribe(b, guildA, &recorder{fn: func(ctx context.Context, _ sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}})
	e.enqueue(e.pub("run-1", guildA))
	<-started
	if err := e.svc.Close(e.ctx); err != nil {
		t.Fatal(err)
	}
	if r := e.one("run-1"); r.Status != StatusRetry || r.Detail != DetailTimeout {
		t.Fatalf("row after Close = %+v", r)
	}
}

// TestCloseLeavesStuckLease: a handler that ignores Close's cancellation
// keeps its lease (nothing settled), to expire.
func TestCloseLeavesStuckLease(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.HandlerTimeout = time.Hour; o.CancelGrace = 20 * time.Millisecond })
	b, _ := e.bind(e.svc, "kudos")
	started := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	e.subscribe(b, guildA, &recorder{fn: func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error {
		close(started)
		<-release
		return nil
	}})
	e.enqueue(e.pub("run-1", guildA))
	<-started
	if err := e.svc.Close(e.ctx); err != nil {
		t.Fatal(err)
	}
	if r := e.one("run-1"); r.Status != StatusDelivering || r.Token == "" {
		t.Fatalf("row after Close = %+v", r)
	}
}

// TestPurgeLeavesNoPublication: purging a subscription's expired
// notifications on /results, or unsubscribing it there, deletes the last
// notifications of an expired publication; the publication (the run's
// stored messages) must go too, not wait for some later publication's
// expiry to run the prune again (with none to come, forever). A
// publication that has not expired stays.
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

// TestModuleUnsubscribeLeavesNoPublication: the same for a module's own
// Unsubscribe (port.go's deleteSubscription, without the admin's extra):
// deleteSubscription deletes the spent publications too.
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
