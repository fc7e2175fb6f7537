package guildcfg

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/internal/benchbase"
)

// BenchmarkGuildActive is the hot path: "is this guild active, what are
// this module's settings" from many goroutines while a writer keeps
// committing documents. allocs/op also counts the writer's allocations,
// spread over every lookup; TestHotPathDoesNotAllocate shows the lookup
// alone allocates nothing.
func BenchmarkGuildActive(b *testing.B) {
	st := openStore(b)
	s := newService(b, st, TrustSettings{})
	const guilds = 200
	for g := uint64(1); g <= guilds; g++ {
		mustWrite(b, s, GuildTarget(g), fmt.Sprintf("---\nbot_active: %t\nstaff_role_ids: [%d]\n---\n", g%4 != 0, g))
		mustWrite(b, s, GuildModuleTarget(g, "alpha"), fmt.Sprintf("---\nlimit: %d\n---\n", g))
	}
	ctx := context.Background()
	stop := make(chan struct{})
	var writes atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		revs := map[uint64]string{}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			g := uint64(i%guilds + 1)
			rev, ok := revs[g]
			if !ok {
				d, err := s.Document(ctx, GuildModuleTarget(g, "alpha"))
				if err != nil {
					b.Error(err)
					return
				}
				rev = d.Revision
			}
			d, err := s.Write(ctx, GuildModuleTarget(g, "alpha"), fmt.Sprintf("---\nlimit: %d\n---\n", i), rev, admin)
			if err != nil {
				b.Error(err)
				return
			}
			revs[g] = d.Revision
			writes.Add(1)
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	var seen atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		var g uint64
		active := int64(0)
		defer func() { seen.Add(active) }()
		for pb.Next() {
			g = g%guilds + 1
			if s.Active(g) {
				active++
			}
			if ms, ok := s.ModuleSettings(g, "alpha"); ok && ms.Valid {
				active++
			}
		}
	})
	b.StopTimer()
	if seen.Load() == 0 {
		b.Error("no lookup saw an active guild")
	}
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(writes.Load())/b.Elapsed().Seconds(), "writer-commits/s")
}

// BenchmarkDocumentWrite measures compare-and-swap document writes (each
// validation, transaction with history and audit rows, snapshot swap) next
// to the raw rate of single-row commits on the same database in the same
// run, and their ratio.
func BenchmarkDocumentWrite(b *testing.B) {
	st := openStore(b)
	s := newService(b, st, TrustSettings{})
	ctx := context.Background()
	target := GuildModuleTarget(1, "alpha")
	rev := EmptyRevision
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		d, err := s.Write(ctx, target, fmt.Sprintf("---\nlimit: %d\n---\n", i), rev, admin)
		if err != nil {
			b.Fatal(err)
		}
		rev = d.Revision
	}
	cas := time.Since(start)
	b.StopTimer()
	rawPerSec := benchbase.RawCommitRate(b, st, b.N)
	writesPerSec := float64(b.N) / cas.Seconds()
	b.ReportMetric(writesPerSec, "writes/s")
	b.ReportMetric(rawPerSec, "raw-commits/s")
	b.ReportMetric(writesPerSec/rawPerSec, "ratio")
}
