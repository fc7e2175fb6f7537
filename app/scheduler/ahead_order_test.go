package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestJobDueBeforeTheKeptOnesRunsFirstWhoeverWroteIt: a job due before
// the jobs a module keeps in memory runs before them even when nothing
// told this scheduler of it — written by another scheduler on the same
// database, or by anything else (another process), or committed in the
// moment between a step's choice of a kept job and its transaction: the
// claim of a kept job is refused while an earlier due job of its module
// waits, and the module is read again.
func TestJobDueBeforeTheKeptOnesRunsFirstWhoeverWroteIt(t *testing.T) {
	cases := []struct {
		name  string
		write func(t *testing.T, r *rig, at time.Time)
	}{
		{"another scheduler's binding", func(t *testing.T, r *rig, at time.Time) {
			other := newRigOn(t, r.st)
			ob := other.s.Bind("m", Hooks{})
			if err := ob.RunAt(context.Background(), "early", at, "h", nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"a row written behind the scheduler", func(t *testing.T, r *rig, at time.Time) {
			ms := at.UnixMilli()
			if _, err := r.st.Writer().Exec(`INSERT INTO kimi_scheduler_jobs (module, job_key, handler, run_at_ms,
				backoff_base_ns, backoff_max_ns, backoff_mult, revision, created_ms, updated_ms)
				VALUES ('m', 'early', 'h', ?, 1000000000, 60000000000, 2, 'outside', ?, ?)`, ms, ms, ms); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			r, b, runs := keptRig(t, map[string]chan struct{}{"k1": release})
			ctx := context.Background()
			base := r.clk.Now().Add(-time.Minute)
			for i, k := range []string{"k1", "k2", "k3", "k4"} {
				if err := b.RunAt(ctx, k, base.Add(time.Duration(i)*time.Second), "h", nil); err != nil {
					t.Fatal(err)
				}
			}
			b.Activate()
			if run := runs.next(t, "k1"); run.Key != "k1" {
				t.Fatalf("first run %q, want k1", run.Key)
			}
			tc.write(t, r, base.Add(-time.Hour))
			close(release)
			var got []string
			for range 4 {
				got = append(got, runs.next(t, "the jobs after k1").Key)
			}
			if want := "early k2 k3 k4"; strings.Join(got, " ") != want {
				t.Fatalf("after k1 ran %v, want %s (due order)", got, want)
			}
			runs.none(t, r)
		})
	}
}

// TestClaimQueryPlan: the claim and the scan read kimi_scheduler_jobs by
// its primary key and the module's indexes only, never the whole table.
func TestClaimQueryPlan(t *testing.T) {
	st := openStore(t, "")
	for name, q := range map[string]string{"claim": claimQuery, "scan": scanQuery} {
		var args []any
		rows, err := st.Reader().Query("EXPLAIN QUERY PLAN "+q, args...)
		for err != nil && strings.Contains(err.Error(), "missing") && len(args) < 16 {
			args = append(args, 0)
			rows, err = st.Reader().Query("EXPLAIN QUERY PLAN "+q, args...)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var lines []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, detail)
		}
		rows.Close()
		all := strings.Join(lines, "\n")
		t.Logf("%s:\n  %s", name, strings.ReplaceAll(all, "\n", "\n  "))
		for _, l := range lines {
			if strings.HasPrefix(l, "SCAN ") && strings.Contains(l, "kimi_scheduler_jobs") || l == "SCAN e" || l == "SCAN l" || l == "SCAN x" {
				t.Errorf("%s scans the jobs: %q\n%s", name, l, all)
			}
		}
	}
}
