package results

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// prefetchEnv is an unstarted service (the test runs its steps) with one
// handler slot, so that a step claims one row to launch and queues the
// others; run-a's handler waits for gate (or its context), the others
// return at once.
func prefetchEnv(t *testing.T, runs ...string) (*env, *Service, *recorder, chan error) {
	t.Helper()
	e := newEnv(t)
	e.svc.Close(e.ctx)
	s := e.newService(func(o *Options) { o.MaxInFlight = 1 })
	e.svc = s
	b, _ := e.bind(s, "kudos")
	gate := make(chan error, 1)
	h := &recorder{fn: func(ctx context.Context, r sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
		if r.RunID != "run-a" {
			return nil
		}
		select {
		case err := <-gate:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	e.subscribe(b, guildA, h)
	for i, run := range runs {
		p := e.pub(run, guildA) // published in order: claimed in order
		p.PublishedAt = p.PublishedAt.Add(time.Duration(i) * time.Millisecond)
		e.enqueue(p)
	}
	return e, s, h, gate
}

// queued returns the service's queued claims (claim order).
func queued(s *Service) []*claim {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*claim(nil), s.queue...)
}

// waitOutcomes waits for at least n outcomes waiting to be settled.
func waitOutcomes(t *testing.T, s *Service, n int) {
	t.Helper()
	waitFor(t, "outcomes", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.done) >= n })
}

// TestPrefetchQueuesAndRenews: a step claims more rows than free handler
// slots (the extra ones queued, their attempts not counted: nothing was
// invoked), a later step renews the lease of every held claim past
// renewBelow (queued and running), and once the slot frees the queued
// claims run without a claim transaction; every row's attempts equal its
// handler calls.
func TestPrefetchQueuesAndRenews(t *testing.T) {
	e, s, h, gate := prefetchEnv(t, "run-a", "run-b", "run-c")
	t0 := e.clk.Now()
	s.step()
	if q := queued(s); len(q) != 2 || q[0].id != e.one("run-b").ID || q[1].id != e.one("run-c").ID {
		t.Fatalf("queued claims = %d, want run-b and run-c", len(q))
	}
	waitFor(t, "run-a's handler", func() bool { return h.n() == 1 })
	for run, attempts := range map[string]int{"run-a": 1, "run-b": 0, "run-c": 0} {
		if r := e.one(run); r.Status != StatusDelivering || r.Attempts != attempts || r.LeaseMs != t0.Add(Lease).UnixMilli() {
			t.Fatalf("%s after the claim = %+v, want delivering, %d attempts, leased to %d", run, r, attempts, t0.Add(Lease).UnixMilli())
		}
	}

	// Not yet due for renewal: nothing rewritten.
	e.clk.Advance(Lease - time.Duration(s.renewBelow())*time.Millisecond - time.Second)
	s.step()
	if r := e.one("run-b"); r.LeaseMs != t0.Add(Lease).UnixMilli() {
		t.Fatalf("run-b renewed early: %+v", r)
	}
	e.clk.Advance(2 * time.Second)
	t1 := e.clk.Now()
	s.step()
	for _, run := range []string{"run-a", "run-b", "run-c"} {
		if r := e.one(run); r.Status != StatusDelivering || r.LeaseMs != t1.Add(Lease).UnixMilli() {
			t.Fatalf("%s after the renewing step = %+v, want leased to %d", run, r, t1.Add(Lease).UnixMilli())
		}
	}

	claimTxs := s.claimTxs.Load()
	gate <- nil
	waitOutcomes(t, s, 3) // run-b and run-c ran as the slot freed, no step between
	if h.n() != 3 || s.claimTxs.Load() != claimTxs {
		t.Fatalf("calls = %d, claim transactions %d→%d; want 3 calls, no new claim", h.n(), claimTxs, s.claimTxs.Load())
	}
	s.step()
	for _, run := range []string{"run-a", "run-b", "run-c"} {
		if r := e.one(run); r.Status != StatusAcknowledged || r.Attempts != 1 {
			t.Fatalf("%s = %+v, want acknowledged after 1 attempt", run, r)
		}
	}
}

// TestPrefetchNearExpiryRenewedFirst: a queued claim with less than a
// whole handler run of lease left is not launched when a slot frees; the
// next step renews it, then launches it (and a launched claim's attempt
// is counted by the next step even while its handler still runs).
func TestPrefetchNearExpiryRenewedFirst(t *testing.T) {
	e, s, h, gate := prefetchEnv(t, "run-a", "run-b")
	s.step()
	waitFor(t, "run-a's handler", func() bool { return h.n() == 1 })
	e.clk.Advance(Lease - time.Duration(s.launchMargin())*time.Millisecond + time.Second)
	gate <- nil
	waitOutcomes(t, s, 1)
	if h.n() != 1 || len(queued(s)) != 1 {
		t.Fatalf("calls = %d, queued %d: a claim short of the launch margin was launched", h.n(), len(queued(s)))
	}
	if r := e.one("run-b"); r.Attempts != 0 {
		t.Fatalf("run-b counted without a call: %+v", r)
	}
	now := e.clk.Now()
	s.step()
	waitFor(t, "run-b's handler", func() bool { return h.n() == 2 })
	if r := e.one("run-b"); r.LeaseMs != now.Add(Lease).UnixMilli() {
		t.Fatalf("run-b launched without its lease renewed: %+v", r)
	}
	waitOutcomes(t, s, 1)
	s.step()
	if r := e.one("run-b"); r.Status != StatusAcknowledged || r.Attempts != 1 {
		t.Fatalf("run-b = %+v, want acknowledged after 1 attempt", r)
	}
}

// TestPrefetchAttemptCountedWhileRunning: a queued claim launched between
// steps has its attempt written by the next step, before its outcome.
func TestPrefetchAttemptCountedWhileRunning(t *testing.T) {
	e, s, h, gate := prefetchEnv(t, "run-x", "run-a")
	s.step() // run-x launched, run-a queued and launched when run-x returns
	waitFor(t, "run-a's handler", func() bool { return h.n() == 2 })
	waitOutcomes(t, s, 1)
	if r := e.one("run-a"); r.Status != StatusDelivering || r.Attempts != 0 {
		t.Fatalf("run-a = %+v before the next step", r)
	}
	s.step() // settles run-x, counts run-a's attempt
	if r := e.one("run-a"); r.Status != StatusDelivering || r.Attempts != 1 {
		t.Fatalf("run-a = %+v, want delivering with its attempt counted", r)
	}
	gate <- errors.New("again")
	waitOutcomes(t, s, 1)
	s.step()
	if r := e.one("run-a"); r.Status != StatusRetry || r.Attempts != 1 || r.RetryMs != e.clk.Now().Add(30*time.Second).UnixMilli() {
		t.Fatalf("run-a = %+v, want retry after 1 attempt (30 s)", r)
	}
}

// TestCloseReleasesQueuedClaims: at Close the queued claims (never
// launched) go back to their status unleased, attempts untouched, in one
// transaction; the running one is settled; the next service delivers the
// released rows at once.
func TestCloseReleasesQueuedClaims(t *testing.T) {
	e, s, h, _ := prefetchEnv(t, "run-a", "run-b", "run-c")
	s.step()
	waitFor(t, "run-a's handler", func() bool { return h.n() == 1 })
	if err := s.Close(e.ctx); err != nil {
		t.Fatal(err)
	}
	if r := e.one("run-a"); r.Status != StatusRetry || r.Attempts != 1 || r.Detail != DetailTimeout {
		t.Fatalf("run-a after Close = %+v", r)
	}
	for _, run := range []string{"run-b", "run-c"} {
		if r := e.one(run); r.Status != StatusPending || r.Attempts != 0 || r.Token != "" || r.LeaseMs != 0 {
			t.Fatalf("%s after Close = %+v, want pending, unleased, 0 attempts", run, r)
		}
	}
	if h.n() != 1 {
		t.Fatalf("calls = %d, want 1", h.n())
	}
	s2 := e.newService()
	b2, _ := e.bind(s2, "kudos")
	h2 := &recorder{}
	e.subscribe(b2, guildA, h2)
	s2.Start()
	for _, run := range []string{"run-b", "run-c"} {
		if r := e.waitStatus(run, StatusAcknowledged); r.Attempts != 1 {
			t.Fatalf("%s = %+v, want acknowledged after 1 attempt", run, r)
		}
	}
	if h2.n() != 2 {
		t.Fatalf("next service's calls = %d, want 2", h2.n())
	}
}

// TestRevokeWhileQueuedNotLive: a queued claim answers live from memory
// until a revoke (in the producer's transaction) bumps the generation;
// then live reads the row (gone) and the claim, launched, reaches no
// handler.
func TestRevokeWhileQueuedNotLive(t *testing.T) {
	e, s, h, gate := prefetchEnv(t, "run-a", "run-b")
	s.step()
	waitFor(t, "run-a's handler", func() bool { return h.n() == 1 })
	q := queued(s)
	if len(q) != 1 || q[0].pub.RunID != "run-b" {
		t.Fatalf("queued = %d, want run-b", len(q))
	}
	if !s.live(e.ctx, q[0]) {
		t.Fatal("queued claim not live before the revoke")
	}
	if err := e.st.Write(e.ctx, func(tx *sql.Tx) error { return s.RevokeRun(e.ctx, tx, "run-b") }); err != nil {
		t.Fatal(err)
	}
	if s.live(e.ctx, q[0]) {
		t.Fatal("queued claim of a revoked run still live")
	}
	gate <- nil
	waitOutcomes(t, s, 2)
	s.step()
	if h.n() != 1 {
		t.Fatalf("calls = %d: the revoked run reached the handler", h.n())
	}
	if n := e.count(`SELECT count(*) FROM kimi_result_notifications WHERE run_id = 'run-b'`); n != 0 {
		t.Fatalf("run-b rows = %d", n)
	}
}

// watchStep runs one step with a watcher made just before it (nothing
// pending) and reports whether the step signalled Watch. Notify is
// synchronous but the watcher's channel is fed by a goroutine, so a
// signal is waited for (generously); a step that signals nothing costs
// the whole wait, only when the test fails.
func watchStep(t *testing.T, e *env, s *Service) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	watch := s.Watch(ctx)
	s.step()
	select {
	case <-watch:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// TestWatchSignalsLeaseRenewal: /results keeps a subscription's rows
// between Watch signals, and its table shows each row's lease, so a step
// that only renews held leases signals too (else the page shows a lease
// that has run out).
func TestWatchSignalsLeaseRenewal(t *testing.T) {
	e, s, h, _ := prefetchEnv(t, "run-a", "run-b")
	s.step()
	waitFor(t, "run-a's handler", func() bool { return h.n() == 1 })
	e.clk.Advance(Lease - time.Duration(s.renewBelow())*time.Millisecond + time.Second)
	before := e.one("run-b").LeaseMs
	signalled := watchStep(t, e, s)
	if r := e.one("run-b"); r.LeaseMs == before {
		t.Fatalf("run-b's lease was not renewed: %+v", r)
	}
	if !signalled {
		t.Errorf("a step that renewed the held leases (shown on /results) did not signal Watch")
	}
}

// TestWatchSignalsAttemptCounted: a step that only counts the attempt of a
// claim launched after the previous one (its handler still running)
// signals Watch: /results keeps the rows between signals and shows each
// row's attempts.
func TestWatchSignalsAttemptCounted(t *testing.T) {
	e := newEnv(t)
	e.svc.Close(e.ctx)
	s := e.newService(func(o *Options) { o.MaxInFlight = 1 })
	e.svc = s
	b, _ := e.bind(s, "kudos")
	gate := make(chan error, 2)
	h := &recorder{fn: func(ctx context.Context, _ sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
		select {
		case err := <-gate:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	e.subscribe(b, guildA, h)
	for i, run := range []string{"run-a", "run-b"} {
		p := e.pub(run, guildA)
		p.PublishedAt = p.PublishedAt.Add(time.Duration(i) * time.Millisecond)
		e.enqueue(p)
	}
	s.step() // run-a launched, run-b queued
	waitFor(t, "run-a's handler", func() bool { return h.n() == 1 })
	e.clk.Advance(Lease - time.Duration(s.launchMargin())*time.Millisecond + time.Second)
	gate <- nil
	waitOutcomes(t, s, 1) // run-b, short of the launch margin, stays queued
	s.step()              // settles run-a, renews run-b and launches it
	waitFor(t, "run-b's handler", func() bool { return h.n() == 2 })
	if r := e.one("run-b"); r.Status != StatusDelivering || r.Attempts != 0 {
		t.Fatalf("run-b = %+v before the counting step", r)
	}
	signalled := watchStep(t, e, s) // counts run-b's attempt, nothing else
	if r := e.one("run-b"); r.Status != StatusDelivering || r.Attempts != 1 {
		t.Fatalf("run-b = %+v, want delivering with its attempt counted", r)
	}
	if !signalled {
		t.Errorf("a step that counted a running claim's attempt (shown on /results) did not signal Watch")
	}
	gate <- nil
}
