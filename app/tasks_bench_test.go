package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/internal/benchbase"
	"github.com/kimiapp/kimi/app/tasks"
)

// BenchmarkTaskPublish measures a scheduled task's run from its due time
// to its confirmed publication (the run completed, its post sent to the
// fake Discord, the results notification enqueued in that transaction),
// through the pieces serve composes (startTaskE2E: a real SQLite file in
// b.TempDir(), the bot connected to the fake, the durable scheduler, the
// results outbox on with kudos subscribed). Each run posts one post of
// one chunk (even tasks) or two (odd tasks).
//
//   - throughput: b.N tasks, each due once at the same instant, run
//     through the scheduler, the composer, the deliverer (at most
//     tasks.MaxDeliveries runs at once) and the Poster; runs/s from the
//     due time to the last completion, next to raw-commits/s (single-row
//     INSERT transactions on the same store, in the same run) and their
//     ratio;
//   - latency: b.N tasks due one at a time while the rest is idle; p50-ms
//     and p99-ms of each run's completion minus its due time.
func BenchmarkTaskPublish(b *testing.B) {
	b.Run("throughput", benchTaskThroughput)
	b.Run("latency", benchTaskLatency)
}

// benchText is run i's template: one chunk, or two (over tasks.MaxChunk).
func benchText(i int) string {
	if i%2 == 0 {
		return fmt.Sprintf("Digest %d: all quiet.", i)
	}
	return fmt.Sprintf("Digest %d, the long one.\n\n", i) + strings.Repeat("news ", (tasks.MaxChunk+500)/5)
}

// createOnce creates a task due once at at, posting benchText(i).
func (w *taskE2E) createOnce(tb testing.TB, i int, at time.Time) tasks.Task {
	tb.Helper()
	task, err := w.parts.admin.Create(context.Background(), "bench", tasks.Definition{GuildID: w.guild, Name: fmt.Sprintf("bench %d", i), OwnerID: w.owner,
		Schedule: map[string]string{tasks.FieldKind: "once", tasks.FieldAt: at.UTC().Format(time.RFC3339Nano), tasks.FieldTimezone: "UTC"},
		Template: benchText(i), Destinations: []uint64{w.general}})
	if err != nil {
		tb.Fatal(err)
	}
	return task
}

// completedRuns returns the due and finished times (unix ms) of the
// completed runs.
func (w *taskE2E) completedRuns(tb testing.TB) (due, finished []int64) {
	tb.Helper()
	rows, err := w.st.Reader().Query(`SELECT due_ms, finished_ms FROM kimi_task_runs WHERE status = 'completed'`)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var d, f int64
		if err := rows.Scan(&d, &f); err != nil {
			tb.Fatal(err)
		}
		due, finished = append(due, d), append(finished, f)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return due, finished
}

// waitCompleted waits until n runs completed; a run that ended otherwise
// fails the benchmark.
func (w *taskE2E) waitCompleted(tb testing.TB, n int) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(2 * time.Millisecond) {
		var done, bad int
		if err := w.st.Reader().QueryRow(`SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status IN ('failed', 'uncertain', 'skipped'))
			FROM kimi_task_runs`).Scan(&done, &bad); err != nil {
			tb.Fatal(err)
		}
		if bad > 0 {
			tb.Fatalf("%d runs did not complete", bad)
		}
		if done >= n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d runs completed", done, n)
		}
	}
}

func benchTaskThroughput(b *testing.B) {
	w := startTaskE2E(b)
	ctx := context.Background()
	// Kimi's own cost, not the fake's per-channel bucket (50 a second, as
	// every route's default), which Kimi's transport honours and which
	// would otherwise cap the run rate at ~33 runs/s in one channel.
	w.fake.SetRateLimit("POST /channels/{channel}/messages", 1_000_000, time.Second)
	// How long one Create takes here, to put the common due time past
	// the creation of all b.N tasks.
	start := time.Now()
	const probes = 5
	for i := range probes {
		t := w.createOnce(b, i, time.Now().Add(24*time.Hour))
		if err := w.parts.admin.Delete(ctx, "bench", t.ID); err != nil {
			b.Fatal(err)
		}
	}
	per := time.Since(start) / probes
	due := time.Now().Add(time.Duration(b.N)*per*2 + 500*time.Millisecond)
	for i := range b.N {
		w.createOnce(b, i, due)
	}
	if time.Now().After(due) {
		b.Fatalf("creating %d tasks ran past their due time", b.N)
	}
	time.Sleep(time.Until(due))
	db0 := w.db.Counts()
	b.ResetTimer()
	w.waitCompleted(b, b.N)
	b.StopTimer()
	w.db.Report(b, db0, b.N)
	_, finished := w.completedRuns(b)
	last := slices.Max(finished)
	runsPerSec := float64(b.N) / (float64(last-due.UnixMilli()) / 1000)
	rawPerSec := benchbase.RawCommitRate(b, w.st, 1000)
	b.ReportMetric(runsPerSec, "runs/s")
	b.ReportMetric(rawPerSec, "raw-commits/s")
	b.ReportMetric(runsPerSec/rawPerSec, "ratio")
}

func benchTaskLatency(b *testing.B) {
	w := startTaskE2E(b)
	lat := make([]float64, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		// Due shortly after its creation committed (the scheduler is
		// idle): the latency is the scheduler's wake-up, the run's
		// composition and preparation, the post and the completion.
		w.createOnce(b, i, time.Now().Add(50*time.Millisecond))
		w.waitCompleted(b, i+1)
	}
	b.StopTimer()
	due, finished := w.completedRuns(b)
	for i := range due {
		lat = append(lat, float64(finished[i]-due[i]))
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(benchbase.RawCommitRate(b, w.st, 1000), "raw-commits/s")
}
