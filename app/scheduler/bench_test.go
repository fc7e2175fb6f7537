package scheduler

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

// benchModules is how many modules the throughput benchmark spreads its
// jobs over (the runner runs at most one per module and four overall).
const benchModules = 8

// BenchmarkSchedulerDurable measures the durable scheduler on a real
// SQLite file:
//
//   - throughput: b.N one-shot jobs, due already, across 8 modules, each
//     claimed, run (a no-op handler) and settled (deleted); jobs/s next to
//     raw-commits/s, the rate of single-row INSERT transactions on a store
//     of the same kind in the same run, their ratio, and commits/job (the
//     scheduler's write transactions per job), and statements/op,
//     reads/op, commits/op and wal-frames/op as SQLite counted them on
//     the store's connections (benchbase.Counter);
//   - latency: b.N jobs that fall due one at a time while the runner is
//     idle, on the real clock; p50-ms and p99-ms of handler start minus the
//     due time.
func BenchmarkSchedulerDurable(b *testing.B) {
	b.Run("throughput", benchThroughput)
	b.Run("latency", benchLatency)
}

func newBenchScheduler(b *testing.B, db *benchbase.Counter) *Scheduler {
	b.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler), WrapConnector: db.Wrap})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	s, err := New(Options{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	s.Start()
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func benchThroughput(b *testing.B) {
	ctx := context.Background()
	db := &benchbase.Counter{}
	s := newBenchScheduler(b, db)
	var ran atomic.Int64
	all := make(chan struct{})
	total := int64(b.N)
	noop := func(context.Context, sdk.JobRun) error {
		if ran.Add(1) == total {
			close(all)
		}
		return nil
	}
	binds := make([]*Binding, benchModules)
	for i := range binds {
		binds[i] = s.Bind(fmt.Sprintf("mod%d", i), Hooks{})
		if err := binds[i].Register("noop", noop); err != nil {
			b.Fatal(err)
		}
	}
	// The jobs, due a second ago, in one transaction before the clock
	// starts; the bindings are not active yet, so nothing is claimed.
	due := time.Now().Add(-time.Second)
	err := s.st.Write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO kimi_scheduler_jobs
			(module, job_key, handler, run_at_ms, backoff_base_ns, backoff_max_ns, backoff_mult, revision, created_ms, updated_ms)
			VALUES (?, ?, 'noop', ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		bo := sdk.DefaultBackoff()
		for i := range b.N {
			if _, err := stmt.ExecContext(ctx, fmt.Sprintf("mod%d", i%benchModules), fmt.Sprintf("job-%d", i),
				due.Add(time.Duration(i)*time.Microsecond).UnixMilli(), int64(bo.Base), int64(bo.Max), bo.Multiplier,
				newToken(), due.UnixMilli(), due.UnixMilli()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	s.quiesceBench(b)
	commits0 := s.commits.Load()
	db0 := db.Counts()
	b.ResetTimer()
	start := time.Now()
	for _, bd := range binds {
		bd.Activate()
	}
	select {
	case <-all:
	case <-time.After(10*time.Minute + time.Duration(b.N)*10*time.Millisecond):
		b.Fatalf("only %d of %d jobs ran", ran.Load(), b.N)
	}
	// The last completions settle in the runner's next step.
	for {
		var left int
		if err := s.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_scheduler_jobs`).Scan(&left); err != nil {
			b.Fatal(err)
		}
		if left == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	counted := db.Counts().Sub(db0)
	commits := s.commits.Load() - commits0
	if got := ran.Load(); got != int64(b.N) {
		b.Fatalf("%d runs for %d jobs", got, b.N)
	}

	// The raw commit rate on a store of the same kind, in the same run.
	rawPerSec := benchbase.RawCommitRate(b, openStore(b, ""), b.N)
	jobsPerSec := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(jobsPerSec, "jobs/s")
	b.ReportMetric(rawPerSec, "raw-commits/s")
	b.ReportMetric(jobsPerSec/rawPerSec, "ratio")
	b.ReportMetric(float64(commits)/float64(b.N), "commits/job")
	// What SQLite did, counted on the store's connections (the wait
	// loop's own count(*) reads are reads/op, apart).
	n := float64(b.N)
	b.ReportMetric(float64(counted.Statements)/n, "statements/op")
	b.ReportMetric(float64(counted.Reads)/n, "reads/op")
	b.ReportMetric(float64(counted.Commits)/n, "commits/op")
	b.ReportMetric(float64(counted.WALFrames)/n, "wal-frames/op")
}

// benchLead is how far ahead of now the latency benchmark schedules each
// job, so that it falls due while the runner waits on its timer.
const benchLead = 5 * time.Millisecond

func benchLatency(b *testing.B) {
	ctx := context.Background()
	s := newBenchScheduler(b, &benchbase.Counter{})
	started := make(chan time.Duration, 1)
	bd := s.Bind("lat", Hooks{})
	if err := bd.Register("probe", func(_ context.Context, run sdk.JobRun) error {
		started <- time.Since(run.ScheduledFor)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	bd.Activate()
	lat := make([]float64, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		// Idle: the previous job is settled (deleted) before the next is due.
		s.quiesceBench(b)
		if err := bd.RunAt(ctx, fmt.Sprintf("j%d", i), time.Now().Add(benchLead), "probe", nil); err != nil {
			b.Fatal(err)
		}
		select {
		case d := <-started:
			lat = append(lat, float64(d)/float64(time.Millisecond))
		case <-time.After(time.Minute):
			b.Fatalf("job %d did not start", i)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// quiesceBench waits for two whole runner steps and for no job to be
// running, so the next measurement starts with the runner idle.
func (s *Scheduler) quiesceBench(b *testing.B) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for range 2 {
			n := s.steps.Load()
			s.signal()
			for s.steps.Load() == n {
				if time.Now().After(deadline) {
					b.Fatal("the runner did not finish a step")
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		s.mu.Lock()
		idle := len(s.running) == 0 && len(s.pending) == 0 && len(s.done) == 0
		s.mu.Unlock()
		if idle {
			return
		}
	}
}
