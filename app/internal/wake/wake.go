// Package wake is the event-driven loop of Kimi's durable queues (the job
// scheduler in app/scheduler, the scheduled-results dispatcher in
// app/results): one goroutine runs a step, then sleeps until a signal or
// the moment the step asked to run again, whichever comes first. Nothing
// polls: a step that names no moment sleeps until the next signal.
//
// Leases stay the step's business: a step that holds a lease renews it and
// returns the renewal moment as its next one; a step that finds the lease
// held elsewhere returns the moment that lease lapses, so the loop wakes to
// take it over then (or earlier, on a signal).
package wake

import "time"

// Signal is a coalescing wake-up: a channel with room for one value.
// Notify never blocks, and any number of Notify calls before the loop
// receives are one wake-up.
type Signal chan struct{}

// NewSignal returns a Signal with nothing pending.
func NewSignal() Signal { return make(Signal, 1) }

// Notify wakes the loop that waits on s; it never blocks (a pending
// wake-up absorbs this one).
func (s Signal) Notify() {
	select {
	case s <- struct{}{}:
	default:
	}
}

// Loop runs Step whenever there may be work. Its fields are read by Run.
type Loop struct {
	// Step does one round of work and returns when it wants to run again
	// (the zero time: only on a signal). A moment already past runs it
	// again at once.
	Step func() time.Time
	// Wake is the loop's signal: a Notify runs Step at once (after the
	// step under way, if any).
	Wake Signal
	// Now is the clock Step's moments are read on (nil: time.Now): the
	// loop sleeps Step's moment minus Now, in real time.
	Now func() time.Time
	// OnTimer, when set, is called each time the loop wakes because
	// Step's moment came (not on a signal).
	OnTimer func()
}

// Run runs Step at once, then again after every signal on Wake and at
// every moment Step returned, until stop is closed. It returns once stop
// is closed and the step under way (if any) has returned.
func (l Loop) Run(stop <-chan struct{}) {
	now := l.Now
	if now == nil {
		now = time.Now
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		next := l.Step()
		timer.Stop()
		if !next.IsZero() {
			timer.Reset(max(next.Sub(now()), 0))
		}
		select {
		case <-stop:
			timer.Stop()
			return
		case <-l.Wake:
		case <-timer.C:
			if l.OnTimer != nil {
				l.OnTimer()
			}
		}
	}
}
