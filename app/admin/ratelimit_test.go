package admin

import (
	"fmt"
	"testing"
	"time"
)

// TestLimiterFullTableGivesNewcomersTheirOwnBurst reproduces the table
// flood: 10,000+ spent buckets from distinct addresses used to push every
// newcomer into one shared overflow bucket (429 after a few requests for
// everyone new). Now the least recently used bucket is forgotten: a newcomer
// gets its full burst at once, memory stays at the cap, and a bucket that is
// still in use is not the one forgotten.
func TestLimiterFullTableGivesNewcomersTheirOwnBurst(t *testing.T) {
	const every, burst, capacity = time.Minute, 3, 1000
	t0 := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name  string
		spray int // distinct addresses, each spending its whole burst
	}{
		{"table exactly full", capacity},
		{"table filled past its cap", 3 * capacity},
		{"production cap", 0}, // maxBuckets+10 at the real cap
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := newLimiter(every, burst, capacity)
			spray := tt.spray
			if spray == 0 {
				lim = newLimiter(every, burst, maxBuckets)
				spray = maxBuckets + 10
			}
			for i := range spray {
				ip := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
				for range burst {
					lim.allow(ip, t0)
				}
				if lim.allow(ip, t0) {
					t.Fatalf("%s allowed past its burst", ip)
				}
			}
			// The last sprayed address is the most recently used: still spent.
			last := fmt.Sprintf("10.%d.%d.%d", (spray-1)>>16&255, (spray-1)>>8&255, (spray-1)&255)
			for _, newcomer := range []string{"192.0.2.1", "192.0.2.2"} {
				for i := range burst {
					if !lim.allow(newcomer, t0) {
						t.Fatalf("newcomer %s refused at attempt %d of its burst %d", newcomer, i+1, burst)
					}
				}
				if lim.allow(newcomer, t0) {
					t.Fatalf("newcomer %s allowed past its burst", newcomer)
				}
			}
			if lim.allow(last, t0) {
				t.Errorf("recently used %s was forgotten (got a fresh budget) instead of the oldest bucket", last)
			}
			if n := lim.len(); n > lim.max {
				t.Fatalf("%d buckets, want at most %d", n, lim.max)
			}
		})
	}
}

// TestLimiterGCForgetsIdleBuckets: gc drops the buckets idle for longer
// than the window, oldest first, and keeps the rest.
func TestLimiterGCForgetsIdleBuckets(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	lim := newLimiter(time.Minute, 2, 100)
	lim.allow("old", t0)
	lim.allow("recent", t0.Add(10*time.Minute))
	lim.gc(t0.Add(16*time.Minute), 15*time.Minute)
	if _, ok := lim.buckets["old"]; ok {
		t.Error("idle bucket kept")
	}
	if _, ok := lim.buckets["recent"]; !ok {
		t.Error("recent bucket dropped")
	}
	if lim.len() != 1 || lim.order.Len() != 1 {
		t.Errorf("map %d, list %d entries; want 1 each", lim.len(), lim.order.Len())
	}
}
