package app

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/internal/benchbase"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/sdk"
)

// BenchmarkResultsDelivery measures the scheduled-results outbox as serve
// composes it (startTaskE2E: a real SQLite file, the bot connected to the
// fake Discord, the results service whose producer is the scheduled
// tasks' access rule): every delivery reads its task and checks, against
// the fake's guild state through the bot's caches, that the guild is
// active, that the task's owner still has the tier and that owner and bot
// can see the channel. The publications are of one real task in the demo
// guild; one subscriber ("bench", a no-op handler that acknowledges) is
// the only one of the guild (kudos's is removed, so its own writes are
// not counted here: BenchmarkTaskPublish measures a run end to end).
//
//   - throughput: b.N notifications enqueued before the clock starts, at
//     most four handlers at once (the default); notifications/s from the
//     dispatcher's start to the last acknowledgement, next to
//     raw-commits/s (single-row INSERT transactions on the same store, in
//     the same run) and their ratio; statements/op, reads/op, commits/op
//     and wal-frames/op from the store's connections;
//   - latency: b.N results published one at a time while the outbox is
//     idle; p50-ms and p99-ms of handler start minus the producer's
//     commit.
func BenchmarkResultsDelivery(b *testing.B) {
	b.Run("throughput", benchResultsThroughput)
	b.Run("latency", benchResultsLatency)
}

// resultsBench is startTaskE2E with a task to publish results of and the
// bench subscriber as its guild's only one.
type resultsBench struct {
	*taskE2E
	task string
}

func startResultsBench(b *testing.B) resultsBench {
	b.Helper()
	ctx := context.Background()
	w := startTaskE2E(b)
	task := w.createOnce(b, 0, time.Now().Add(365*24*time.Hour))
	subs, err := w.res.Subscriptions(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range subs {
		if _, err := w.res.Unsubscribe(ctx, s.SubKey, results.Actor{Admin: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	return resultsBench{w, task.ID}
}

// subscribe binds the bench module on res and subscribes handler.
func (w resultsBench) subscribe(b *testing.B, res *results.Service, handler sdk.ScheduledResultHandler) {
	b.Helper()
	bd := res.Bind("bench", results.Hooks{Declared: []string{"digest"}})
	if err := bd.Subscribe(context.Background(), "digest", w.guild, handler); err != nil {
		b.Fatal(err)
	}
}

func (w resultsBench) publication(i int) results.Publication {
	return results.Publication{RunID: fmt.Sprintf("bench-run-%d", i), TaskID: w.task, Revision: 1, GuildID: w.guild, OwnerID: w.owner,
		OriginChannelID: w.general, PublishedAt: time.Now(), Outcome: sdk.ResultCompleted,
		Messages: []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: w.guild, ChannelID: w.general, MessageID: uint64(1_000_000 + i)}, Content: "digest"}}}
}

func benchResultsThroughput(b *testing.B) {
	ctx := context.Background()
	var acked atomic.Int64
	w := startResultsBench(b)
	// Enqueued with serve's dispatcher closed, delivered by a service
	// made as serve makes it, started once the clock runs.
	if err := w.res.Close(ctx); err != nil {
		b.Fatal(err)
	}
	access, _ := newTaskAccess(w.st, w.guilds, w.bot)
	res, err := results.New(results.Options{Store: w.st, Logger: w.logger, Producer: access})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = res.Close(context.Background()) })
	w.subscribe(b, res, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error {
		acked.Add(1)
		return nil
	})
	err = w.st.Write(ctx, func(tx *sql.Tx) error {
		for i := range b.N {
			if n, err := res.Enqueue(ctx, tx, w.publication(i)); err != nil || n != 1 {
				return fmt.Errorf("enqueue %d: %d notifications, %w", i, n, err)
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	db0 := w.db.Counts()
	b.ResetTimer()
	start := time.Now()
	res.Start()
	deadline := time.Now().Add(10*time.Minute + time.Duration(b.N)*10*time.Millisecond)
	for acked.Load() < int64(b.N) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d notifications acknowledged", acked.Load(), b.N)
		}
		time.Sleep(time.Millisecond)
	}
	// The last acknowledgements' settle: the rows left open, from the
	// kept counts (a few rows).
	for {
		var left int
		if err := w.st.Reader().QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM kimi_result_counts WHERE status != 'acknowledged'`).Scan(&left); err != nil {
			b.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d notifications not acknowledged", left, b.N)
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	w.db.Report(b, db0, b.N)
	if got := acked.Load(); got != int64(b.N) {
		b.Fatalf("%d handler calls for %d notifications", got, b.N)
	}
	rawPerSec := benchbase.RawCommitRate(b, w.st, max(b.N, 1000))
	perSec := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(perSec, "notifications/s")
	b.ReportMetric(rawPerSec, "raw-commits/s")
	b.ReportMetric(perSec/rawPerSec, "ratio")
}

func benchResultsLatency(b *testing.B) {
	ctx := context.Background()
	started := make(chan time.Time, 1)
	w := startResultsBench(b)
	w.subscribe(b, w.res, func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error {
		started <- time.Now()
		return nil
	})
	lat := make([]float64, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		var committed time.Time
		err := w.st.Write(ctx, func(tx *sql.Tx) error {
			_, err := w.res.Enqueue(ctx, tx, w.publication(i))
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
		// The acknowledgement's settle, before the next publication.
		for {
			var left int
			if err := w.st.Reader().QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM kimi_result_counts WHERE status != 'acknowledged'`).Scan(&left); err != nil {
				b.Fatal(err)
			}
			if left == 0 {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
