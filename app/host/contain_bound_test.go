package host

import (
	"context"
	"testing"
	"time"
)

// TestRunBoundedTimeoutWhenFnHonoursIt: a callback that honours its
// deadline (returns ctx.Err() once it passed) is a timeout, not an
// ordinary failure, even when its return wins the race with the bound's
// timer (it did under load: a hanging button then read "failed: context
// deadline exceeded" instead of "exceeded 0.3s"); a cancelled parent is a
// cancellation; an error before the bound is the error.
func TestRunBoundedTimeoutWhenFnHonoursIt(t *testing.T) {
	honour := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for i := range 300 {
		if _, how := runBounded(context.Background(), time.Millisecond, time.Second, honour); how != timedOut {
			t.Fatalf("run %d: outcome %v, want timedOut", i, how)
		}
	}
	parent, cancel := context.WithCancel(context.Background())
	cancel()
	if _, how := runBounded(parent, time.Hour, time.Second, honour); how != cancelled {
		t.Fatalf("cancelled parent: outcome %v, want cancelled", how)
	}
	boom := context.Canceled // any error returned before the bound
	if err, how := runBounded(context.Background(), time.Hour, time.Second, func(context.Context) error { return boom }); how != finished || err != boom {
		t.Fatalf("early error: %v, %v; want it, finished", err, how)
	}
}
