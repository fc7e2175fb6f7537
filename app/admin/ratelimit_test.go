package admin

import (
	"fmt"
	"testing"
	"time"
)

// TestLimiterFullMapRecyclesRefilledBuckets: a spray of addresses that fills
// the map must not make every later newcomer share one bucket once the
// spray's buckets have refilled; while they are still spent, newcomers do
// share the overflow bucket (memory stays bounded).
func TestLimiterFullMapRecyclesRefilledBuckets(t *testing.T) {
	const every, burst = time.Second, 3
	t0 := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name       string
		later      time.Duration // when the two newcomers arrive
		secondGets bool          // whether newcomer B still gets a token after A spent a whole burst
	}{
		{"spray still spent: newcomers share the overflow bucket", 0, false},
		{"spray refilled: newcomers get their own buckets", burst * every, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newIPLimiter(every, burst)
			for i := range maxBuckets {
				ip := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
				if !l.allow(ip, t0) {
					t.Fatalf("first attempt of %s refused", ip)
				}
			}
			now := t0.Add(tt.later)
			for range burst {
				if !l.allow("192.0.2.1", now) {
					t.Fatal("newcomer A refused within its burst")
				}
			}
			if got := l.allow("192.0.2.2", now); got != tt.secondGets {
				t.Fatalf("newcomer B allowed = %v, want %v", got, tt.secondGets)
			}
			if n := len(l.buckets); n > maxBuckets+1 {
				t.Fatalf("%d buckets, want at most %d", n, maxBuckets+1)
			}
		})
	}
}
