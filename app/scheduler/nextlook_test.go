package scheduler

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestStepsScanOnlyTheModulesThatChanged: with the clock still, a module
// whose next job is an hour away is not scanned again step after step (it
// stays off the dirty set with its next look remembered); a job scheduled
// due now for it (its binding marks it), RunNow and a job whose time the
// clock reaches each get it scanned and run — a job written straight
// into the table behind the scheduler's back is not seen until the next
// lease renewal's full scan, which is what remembering the next look means.
func TestStepsScanOnlyTheModulesThatChanged(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	var runs runLog
	b := r.s.Bind("m", Hooks{})
	if err := b.Register("h", func(_ context.Context, run sdk.JobRun) error { runs.add(run); return nil }); err != nil {
		t.Fatal(err)
	}
	b.Activate()
	eventually(t, "active", func() bool { s, _ := r.s.Status(ctx); return s.Active })
	later := r.clk.Now().Add(time.Hour)
	if err := b.RunAt(ctx, "later", later, "h", nil); err != nil {
		t.Fatal(err)
	}
	r.quiesce()
	r.s.mu.Lock()
	next, dirty := r.s.nextLook["m"], r.s.dirty["m"]
	r.s.mu.Unlock()
	if !next.Equal(time.UnixMilli(later.UnixMilli())) || dirty {
		t.Fatalf("after the scan: next look %v (dirty %v), want %v", next, dirty, later)
	}

	// Behind the scheduler's back: not seen while the renewal is not due.
	if err := r.st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kimi_scheduler_jobs (module, job_key, handler, run_at_ms, backoff_base_ns, backoff_max_ns, backoff_mult, revision, created_ms, updated_ms)
			SELECT module, 'sneaked', handler, ?, backoff_base_ns, backoff_max_ns, backoff_mult, 'r', created_ms, updated_ms FROM kimi_scheduler_jobs WHERE job_key = 'later'`,
			r.clk.Now().UnixMilli())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	r.quiesce()
	if runs.len() != 0 {
		t.Fatalf("%d runs: the module was scanned without a change", runs.len())
	}

	// Its binding's write marks it: the new job and the sneaked one run.
	if err := b.RunAt(ctx, "now", r.clk.Now(), "h", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the two due jobs", func() bool { return runs.len() == 2 })

	// RunNow of the hour-away job marks it too.
	if err := r.s.RunNow(ctx, "m", "later", "admin"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "run now", func() bool { return runs.len() == 3 })

	// A next look the clock reaches.
	if err := b.RunAt(ctx, "soon", r.clk.Now().Add(time.Minute), "h", nil); err != nil {
		t.Fatal(err)
	}
	r.quiesce()
	if runs.len() != 3 {
		t.Fatalf("%d runs before the minute passed", runs.len())
	}
	r.advance(time.Minute)
	eventually(t, "the job a minute on", func() bool { return runs.len() == 4 })
}

// TestRunnerLeaseRenewedAtHalfTheLease: steps between renewals do not
// write the runner lease; the step at half the lease does.
func TestRunnerLeaseRenewedAtHalfTheLease(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	b := r.s.Bind("m", Hooks{})
	b.Activate()
	eventually(t, "active", func() bool { s, _ := r.s.Status(ctx); return s.Active })
	till := func() int64 {
		var v int64
		if err := r.st.Reader().QueryRow(`SELECT leased_until_ms FROM kimi_scheduler_runner WHERE id = 1`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	first := till()
	r.clk.Advance(DefaultLease/2 - time.Second)
	r.quiesce()
	if got := till(); got != first {
		t.Fatalf("the lease was renewed before half of it passed: %d → %d", first, got)
	}
	r.advance(time.Second)
	eventually(t, "the renewal", func() bool { return till() > first })
	if want := r.clk.Now().Add(DefaultLease).UnixMilli(); till() != want {
		t.Fatalf("renewed to %d, want %d", till(), want)
	}
}
