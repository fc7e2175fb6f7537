package wake

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// long is a bound no healthy wait comes near (the tests share two cores
// with other builds); quiet is how long a loop that must stay asleep is
// watched.
const (
	long  = 10 * time.Second
	quiet = 150 * time.Millisecond
)

// rig runs a Loop whose Step records each call and returns the moment the
// test queued for that call (zero once the queue is empty).
type rig struct {
	t      *testing.T
	wake   Signal
	stop   chan struct{}
	done   chan struct{}
	steps  chan time.Time // the real time of each step
	timers atomic.Int64

	mu     sync.Mutex
	next   []time.Time
	clock  func() time.Time
	during func(n int) // called inside step n (from 1)
	n      int
}

func newRig(t *testing.T, clock func() time.Time) *rig {
	t.Helper()
	return &rig{t: t, wake: NewSignal(), stop: make(chan struct{}), done: make(chan struct{}),
		steps: make(chan time.Time, 100), clock: clock}
}

func (r *rig) queue(ts ...time.Time) {
	r.mu.Lock()
	r.next = append(r.next, ts...)
	r.mu.Unlock()
}

func (r *rig) step() time.Time {
	r.mu.Lock()
	r.n++
	n, during := r.n, r.during
	var next time.Time
	if len(r.next) > 0 {
		next, r.next = r.next[0], r.next[1:]
	}
	r.mu.Unlock()
	if during != nil {
		during(n)
	}
	r.steps <- time.Now()
	return next
}

func (r *rig) start() {
	l := Loop{Step: r.step, Wake: r.wake, Now: r.clock, OnTimer: func() { r.timers.Add(1) }}
	go func() {
		defer close(r.done)
		l.Run(r.stop)
	}()
	r.t.Cleanup(r.close)
}

func (r *rig) close() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	select {
	case <-r.done:
	case <-time.After(long):
		r.t.Fatal("Run did not return after stop")
	}
}

// waitStep returns the real time of the next step.
func (r *rig) waitStep(what string) time.Time {
	r.t.Helper()
	select {
	case at := <-r.steps:
		return at
	case <-time.After(long):
		r.t.Fatalf("%s: no step", what)
		return time.Time{}
	}
}

// noStep fails if a step runs within quiet.
func (r *rig) noStep(what string) {
	r.t.Helper()
	select {
	case <-r.steps:
		r.t.Fatalf("%s: an unexpected step ran", what)
	case <-time.After(quiet):
	}
}

// TestSignalWakesAtOnce: the first step runs at Run, each Notify runs one
// more step at once, with no moment armed nothing else runs, and Notify
// never blocks and coalesces.
func TestSignalWakesAtOnce(t *testing.T) {
	r := newRig(t, nil)
	for range 100 {
		r.wake.Notify() // nobody receives yet: never blocks, coalesces
	}
	r.start()
	r.waitStep("first step at Run")
	r.waitStep("the pending signal's step")
	r.noStep("100 signals before Run are one step")
	for i := range 3 {
		sent := time.Now()
		r.wake.Notify()
		if at := r.waitStep("signalled step"); at.Sub(sent) > time.Second {
			t.Fatalf("signal %d: step ran %s after Notify", i, at.Sub(sent))
		}
	}
	r.noStep("after the signals")
	if n := r.timers.Load(); n != 0 {
		t.Fatalf("OnTimer called %d times with no moment armed", n)
	}
}

// TestSignalDuringStepIsKept: signals that arrive while a step runs are
// one more step right after it (not lost, not one per signal).
func TestSignalDuringStepIsKept(t *testing.T) {
	r := newRig(t, nil)
	release := make(chan struct{})
	r.during = func(n int) {
		if n == 2 {
			for range 5 {
				r.wake.Notify()
			}
			<-release
		}
	}
	r.start()
	r.waitStep("first")
	r.wake.Notify()
	close(release)
	r.waitStep("the signalled step")
	r.waitStep("the step for the signals sent during it")
	r.noStep("signals during a step coalesce")
}

// TestTimerFiresAtTheMoment: the loop sleeps until the moment Step
// returned, read on the loop's clock (here one set far from real time),
// and counts the wake-up in OnTimer; a moment past or now runs at once.
func TestTimerFiresAtTheMoment(t *testing.T) {
	base := time.Date(2031, 3, 30, 1, 59, 0, 0, time.UTC) // not the real time: the loop must use Now
	clock := func() time.Time { return base }
	for _, tc := range []struct {
		name     string
		after    time.Duration
		min, max time.Duration
	}{
		{"past", -time.Hour, 0, time.Second},
		{"now", 0, 0, time.Second},
		{"soon", 60 * time.Millisecond, 60 * time.Millisecond, 5 * time.Second},
		{"later", 250 * time.Millisecond, 250 * time.Millisecond, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, clock)
			r.queue(base.Add(tc.after))
			r.start()
			first := r.waitStep("first")
			second := r.waitStep("timed step")
			if d := second.Sub(first); d < tc.min-5*time.Millisecond || d > tc.max {
				t.Fatalf("timed step %s after the first, want [%s, %s]", d, tc.min, tc.max)
			}
			if n := r.timers.Load(); n != 1 {
				t.Fatalf("OnTimer called %d times, want 1", n)
			}
			r.noStep("no moment after the timed step")
		})
	}
}

// TestEachStepRearmsTheTimer: a signal's step replaces the moment armed
// before it (sooner or none), so a stale far moment never delays and a
// dropped one never fires.
func TestEachStepRearmsTheTimer(t *testing.T) {
	r := newRig(t, nil)
	r.queue(time.Now().Add(time.Hour)) // step 1: far away
	r.start()
	r.waitStep("first")
	r.queue(time.Now().Add(50 * time.Millisecond)) // step 2 (signalled): soon
	r.wake.Notify()
	r.waitStep("signalled")
	r.waitStep("the new, sooner moment")
	if n := r.timers.Load(); n != 1 {
		t.Fatalf("OnTimer called %d times, want 1", n)
	}
	armed := time.Now().Add(300 * time.Millisecond)
	r.queue(armed, time.Time{}) // step 4 arms, step 5 (signalled) drops it
	r.wake.Notify()
	r.waitStep("arms a moment")
	r.wake.Notify()
	r.waitStep("drops it")
	select {
	case <-r.steps:
		t.Fatal("the dropped moment ran a step")
	case <-time.After(time.Until(armed) + quiet):
	}
	if n := r.timers.Load(); n != 1 {
		t.Fatalf("OnTimer called %d times after the moment was dropped, want 1", n)
	}
}

// TestStopEndsRun: closing stop ends Run while it sleeps on a far moment,
// and while a step runs Run returns only after that step; no step runs
// after Run returned, whatever is signalled.
func TestStopEndsRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inStep bool
	}{
		{"asleep", false},
		{"during a step", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			entered, release := make(chan struct{}), make(chan struct{})
			var returned atomic.Bool
			if tc.inStep {
				r.during = func(n int) {
					if n == 2 {
						close(entered)
						<-release
						returned.Store(true)
					}
				}
			}
			r.queue(time.Now().Add(time.Hour))
			r.start()
			r.waitStep("first")
			if tc.inStep {
				r.wake.Notify()
				<-entered
			}
			close(r.stop)
			if tc.inStep {
				select {
				case <-r.done:
					t.Fatal("Run returned while its step was running")
				case <-time.After(quiet):
				}
				close(release)
				r.waitStep("the step under way")
			}
			select {
			case <-r.done:
			case <-time.After(long):
				t.Fatal("Run did not return after stop")
			}
			if tc.inStep && !returned.Load() {
				t.Fatal("Run returned before its step")
			}
			r.wake.Notify()
			r.noStep("after Run returned")
		})
	}
}

// leaseRow is a single-runner lease as the scheduler keeps it: a holder
// and the moment its lease ends.
type leaseRow struct {
	mu     sync.Mutex
	holder string
	until  time.Time
}

// leaseStep is a runner's step on row: take or renew the lease (renewed
// at half of it, the next moment) when it is free, ours or lapsed; else
// stand by until the holder's lease lapses.
func leaseStep(row *leaseRow, me string, lease time.Duration, renewals *atomic.Int64, standby *atomic.Int64) func() time.Time {
	return func() time.Time {
		now := time.Now()
		row.mu.Lock()
		defer row.mu.Unlock()
		if row.holder == "" || row.holder == me || !now.Before(row.until) {
			row.holder, row.until = me, now.Add(lease)
			renewals.Add(1)
			return now.Add(lease / 2)
		}
		standby.Add(1)
		return row.until.Add(10 * time.Millisecond)
	}
}

// TestLeaseRenewalAndTakeover: a holder's loop renews its lease on its own
// timer, at half the lease, with no signal; a standby loop sleeps (a few
// steps, no polling) until the holder's lease lapses, then takes it over
// by its own timer once the holder stopped without releasing.
func TestLeaseRenewalAndTakeover(t *testing.T) {
	const lease = 200 * time.Millisecond
	row := &leaseRow{}
	var aRenew, aStandby, bRenew, bStandby atomic.Int64
	aStop, aDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(aDone)
		Loop{Step: leaseStep(row, "a", lease, &aRenew, &aStandby), Wake: NewSignal()}.Run(aStop)
	}()
	deadline := time.Now().Add(long)
	for aRenew.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a never took the lease")
		}
		time.Sleep(time.Millisecond)
	}
	bStop, bDone := make(chan struct{}), make(chan struct{})
	bWake := NewSignal()
	go func() {
		defer close(bDone)
		Loop{Step: leaseStep(row, "b", lease, &bRenew, &bStandby), Wake: bWake}.Run(bStop)
	}()
	defer func() { close(bStop); <-bDone }()

	held := 5 * lease / 2
	time.Sleep(held)
	if n := aRenew.Load(); n < 3 {
		t.Fatalf("a renewed %d times in %s (lease %s, renewed at half of it), want at least 3", n, held, lease)
	}
	row.mu.Lock()
	holder, until := row.holder, row.until
	row.mu.Unlock()
	if holder != "a" || !until.After(time.Now()) {
		t.Fatalf("lease holder %q until %s: a's renewals did not keep it", holder, until)
	}
	if n := bRenew.Load(); n != 0 {
		t.Fatalf("the standby took the lease %d times while a held it", n)
	}
	// Each standby step sleeps until a's lease (as b last saw it) lapses:
	// about one step per half lease, not a spin.
	if n := bStandby.Load(); n < 1 || n > 10 {
		t.Fatalf("the standby stepped %d times in %s", n, held)
	}
	bWake.Notify() // a signal on the standby changes nothing
	// a dies without releasing: its loop stops, the row keeps its lease.
	close(aStop)
	<-aDone
	row.mu.Lock()
	lapse := row.until
	row.mu.Unlock()
	for bRenew.Load() == 0 {
		if time.Now().After(lapse.Add(long)) {
			t.Fatal("b did not take over after a's lease lapsed")
		}
		time.Sleep(time.Millisecond)
	}
	row.mu.Lock()
	holder, took := row.holder, row.until.Add(-lease)
	row.mu.Unlock()
	if holder != "b" || took.Before(lapse) {
		t.Fatalf("holder %q took the lease at %s, a's lapsed at %s", holder, took, lapse)
	}
	n := bRenew.Load()
	time.Sleep(lease)
	if bRenew.Load() <= n {
		t.Fatal("b does not renew the lease it took")
	}
}
