package results

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/internal/benchbase"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// BenchmarkResultsDeliveryCore measures the outbox alone on a real SQLite
// file with the real clock, the default bounds (four handlers at once) and
// an access check that allows everything (BenchmarkResultsDelivery in
// package app runs serve's):
//
//   - throughput: b.N notifications (b.N publications to one
//     subscription), enqueued before the clock starts, each claimed,
//     checked, handed to a no-op handler and acknowledged;
//     notifications/s next to raw-commits/s, the rate of single-row
//     INSERT transactions on a store of the same kind in the same run,
//     their ratio, and commits/notification (the dispatcher's write
//     transactions per notification);
//   - latency: b.N results published one at a time while the dispatcher
//     is idle; p50-ms and p99-ms of handler start minus the producer's
//     commit.
func BenchmarkResultsDeliveryCore(b *testing.B) {
	b.Run("throughput", benchThroughput)
	b.Run("latency", benchLatency)
}

type allowAll struct{}

func (allowAll) CheckAccess(context.Context, Publication) error { return nil }
func (allowAll) ReadFile(context.Context, string, string, int64) ([]byte, error) {
	return nil, fmt.Errorf("no files")
}

func newBenchService(b *testing.B, db *benchbase.Counter) *Service {
	b.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler), WrapConnector: db.Wrap})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	s, err := New(Options{Store: st, Logger: slog.New(slog.DiscardHandler), Producer: allowAll{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func benchPub(run string, at time.Time) Publication {
	return Publication{RunID: run, TaskID: "task", Revision: 1, GuildID: guildA, OwnerID: 42, PublishedAt: at, Outcome: sdk.ResultCompleted,
		Messages: []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: guildA, ChannelID: 1, MessageID: 2}, Content: "digest"}}}
}

func benchThroughput(b *testing.B) {
	ctx := context.Background()
	db := &benchbase.Counter{}
	s := newBenchService(b, db)
	var acked atomic.Int64
	bd := s.Bind("bench", Hooks{Declared: []string{"digest"}})
	if err := bd.Subscribe(ctx, "digest", guildA, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error {
		acked.Add(1)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		for i := range b.N {
			if _, err := s.Enqueue(ctx, tx, benchPub(fmt.Sprintf("run-%d", i), now)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	db0 := db.Counts()
	b.ResetTimer()
	start := time.Now()
	s.Start()
	deadline := time.Now().Add(10*time.Minute + time.Duration(b.N)*10*time.Millisecond)
	for {
		// The rows left, from kimi_result_counts (kept by triggers in the
		// settles' transactions): a count(*) over the notifications every
		// millisecond scanned b.N rows and took nearly as much CPU as the
		// dispatcher on this 2-core machine.
		var left int
		if err := s.st.Reader().QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM kimi_result_counts WHERE status != 'acknowledged'`).Scan(&left); err != nil {
			b.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d notifications left", left, b.N)
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	db.Report(b, db0, b.N)
	commits := s.commits.Load()
	if got := acked.Load(); got != int64(b.N) {
		b.Fatalf("%d handler calls for %d notifications", got, b.N)
	}

	rawPerSec := benchbase.RawCommitRate(b, openStore(b), b.N)
	perSec := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(perSec, "notifications/s")
	b.ReportMetric(rawPerSec, "raw-commits/s")
	b.ReportMetric(perSec/rawPerSec, "ratio")
	b.ReportMetric(float64(commits)/float64(b.N), "commits/notification")
}

func benchLatency(b *testing.B) {
	ctx := context.Background()
	s := newBenchService(b, &benchbase.Counter{})
	started := make(chan time.Time, 1)
	bd := s.Bind("bench", Hooks{Declared: []string{"digest"}})
	if err := bd.Subscribe(ctx, "digest", guildA, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error {
		started <- time.Now()
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	s.Start()
	lat := make([]float64, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		quiesce(b, s)
		var committed time.Time
		err := s.st.Write(ctx, func(tx *sql.Tx) error {
			_, err := s.Enqueue(ctx, tx, benchPub(fmt.Sprintf("run-%d", i), time.Now()))
			committed = time.Now() // the commit follows at once
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-started:
			lat = append(lat, float64(at.Sub(committed))/float64(time.Millisecond))
		case <-time.After(time.Minute):
			b.Fatalf("result %d not delivered", i)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// quiesce waits for two whole steps with nothing in flight.
func quiesce(b *testing.B, s *Service) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for range 2 {
			n := s.steps.Load()
			s.signal()
			for s.steps.Load() == n {
				if time.Now().After(deadline) {
					b.Fatal("the dispatcher did not finish a step")
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		s.mu.Lock()
		idle := len(s.inflight) == 0 && len(s.done) == 0
		s.mu.Unlock()
		if idle {
			return
		}
	}
}
