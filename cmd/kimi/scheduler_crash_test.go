package main

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var crashModules = []string{"crash_a", "crash_b", "crash_c", "crash_d"}

// Mirrors testdata/crashkimi.
const crashOneShots, crashPeriodic = 500, 2

type crashRun struct {
	job, token string
	pid        int
	start      int64
	end        sql.NullInt64
}

// TestSchedulerSurvivesKill9: 2,000 one-shot jobs due over a few seconds
// plus periodic ones, on four modules; kill -9 at random points several
// times, restarting each time. Every one-shot job ran to completion at
// least once and none is left or lost; no two runs of one module (so of
// one job) overlapped in a process, every run had its own lease token, a
// run cut short by a kill (or by the final graceful stop, which cancels
// a run in flight) is its process's last; periodic jobs resumed after the
// last restart.
func TestSchedulerSurvivesKill9(t *testing.T) {
	bin := buildTestdata(t, "crashkimi")
	dataDir := t.TempDir()
	env := testEnv(dataDir, "KIMI_MODULES="+strings.Join(crashModules, ","), "KIMI_SCHEDULER_LEASE=1s")
	dbPath := filepath.Join(dataDir, "kimi.db")

	srv := startBinary(t, bin, env)
	deadline := time.Now().Add(startTimeout)
	for len(srv.linesContaining("crash jobs seeded")) < len(crashModules) {
		if time.Now().After(deadline) {
			t.Fatalf("the crash modules did not seed; log:\n%s", srv.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	const kills = 4
	for range kills {
		time.Sleep(time.Duration(150+rand.IntN(600)) * time.Millisecond)
		srv.kill9()
		srv = startBinary(t, bin, env)
	}
	finalPid := srv.cmd.Process.Pid

	ro, count := openCounter(t, dbPath)
	deadline = time.Now().Add(2 * startTimeout)
	for {
		left := count(`SELECT count(*) FROM kimi_scheduler_jobs WHERE job_key LIKE 'once-%'`)
		resumed := true
		for _, m := range crashModules {
			if count(`SELECT count(*) FROM `+m+`_runs WHERE job LIKE 'every-%' AND pid = ? AND end_ms IS NOT NULL`, finalPid) < 2*crashPeriodic {
				resumed = false
			}
		}
		if left == 0 && resumed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d one-shot jobs left, periodic resumed %v; log:\n%s", left, resumed, srv.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := srv.stop(15); code != 0 {
		t.Fatalf("exit code %d; log:\n%s", code, srv.log())
	}

	total, killed := 0, 0
	for _, m := range crashModules {
		rows, err := ro.Query(`SELECT job, token, pid, start_ms, end_ms FROM ` + m + `_runs ORDER BY start_ms, rowid`)
		if err != nil {
			t.Fatal(err)
		}
		var runs []crashRun
		for rows.Next() {
			var r crashRun
			if err := rows.Scan(&r.job, &r.token, &r.pid, &r.start, &r.end); err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
		}
		rows.Close()
		total += len(runs)
		done := map[string]bool{}
		tokens := map[string]bool{}
		lastOfPid := map[int]int{}
		for i, r := range runs {
			if tokens[r.token] {
				t.Errorf("%s: lease token %s recorded by two runs", m, r.token)
			}
			tokens[r.token] = true
			if r.end.Valid {
				done[r.job] = true
			}
			lastOfPid[r.pid] = i
		}
		// One job of a module at a time: within a process, each run ends
		// before the next one starts; a run without an end was cut short by
		// a kill, so nothing of its process starts after it.
		prev := map[int]crashRun{}
		for i, r := range runs {
			if p, ok := prev[r.pid]; ok {
				if !p.end.Valid {
					t.Errorf("%s: run %s (pid %d) has no end but its process went on to run %s", m, p.job, p.pid, r.job)
				} else if p.end.Int64 > r.start {
					t.Errorf("%s: runs %s and %s overlapped in pid %d", m, p.job, r.job, r.pid)
				}
			}
			prev[r.pid] = r
			if !r.end.Valid {
				killed++
				// The final process is stopped gracefully, which cancels a
				// run in flight (its end write then fails with the
				// cancelled ctx, as a kill would cut it): it too may leave
				// its last run unfinished, and nothing after it.
				if lastOfPid[r.pid] != i {
					t.Errorf("%s: unfinished run %s of pid %d that was not its process's last", m, r.job, r.pid)
				}
			}
		}
		for i := range crashOneShots {
			if key := fmt.Sprintf("once-%d", i); !done[key] {
				t.Errorf("%s: job %s never completed (lost)", m, key)
			}
		}
	}
	t.Logf("%d runs recorded, %d cut short by kill -9, %d kills", total, killed, kills)
}
