package kimitest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/kimitest"
)

// BenchmarkKimitestStart measures what an end-to-end test of a module
// pays for its appliance: Start (a fresh data directory migrated and
// seeded, serve composed, the bot connected to a fresh fake Discord, the
// module started, the admin listening) and Stop; appliances/s and the
// allocations of each.
//
//   - sequential: one after the other, with start-ms (Start alone) beside;
//   - parallel-8: eight at a time, as a suite of t.Parallel tests runs
//     them.
func BenchmarkKimitestStart(b *testing.B) {
	spec := pinger()
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		var starting time.Duration
		begin := time.Now()
		for range b.N {
			t0 := time.Now()
			a := kimitest.Start(b, kimitest.WithModules(spec))
			starting += time.Since(t0)
			a.Stop()
		}
		b.ReportMetric(float64(b.N)/time.Since(begin).Seconds(), "appliances/s")
		b.ReportMetric(float64(starting.Milliseconds())/float64(b.N), "start-ms")
	})
	b.Run("parallel-8", func(b *testing.B) {
		b.ReportAllocs()
		begin := time.Now()
		sem := make(chan struct{}, 8)
		var wg sync.WaitGroup
		for range b.N {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				// b's TempDir and Cleanup may be called from several
				// goroutines.
				a := kimitest.Start(b, kimitest.WithModules(spec))
				a.Stop()
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(begin).Seconds(), "appliances/s")
	})
}
