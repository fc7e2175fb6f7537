package scheduler

import (
	"cmp"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// The scan for due jobs, and the jobs it reads ahead.
//
// A scan of a module reads its next aheadLimit due jobs, not only the
// first: the first is claimed, the rest are kept in memory (Scheduler.ahead)
// so that when the run settles (a one-shot job deleted, the common case)
// the next step claims the next one without scanning. What keeps that
// exact:
//   - every change to a module's rows through this process (its bindings,
//     RunNow, CancelJob) goes through touch, which drops the module's kept
//     jobs; so does any settle that leaves the row (a recurring job, a
//     failure's backoff, a release), and a failed step;
//   - the claim of a kept job is guarded by the row as it was read
//     (revision, attempt, run_at_ms, no live lease): a row changed from
//     outside the process fails the guard, and the module is scanned again
//     in the same transaction;
//   - every lease renewal (at half the lease) scans every free module, as
//     before, which also refreshes what is kept.

// aheadLimit is how many due jobs a scan reads per module; aheadBytes
// bounds the payloads a module's kept jobs hold (payloads have no limit of
// their own): the jobs past it are read again by a later scan.
const (
	aheadLimit = 64
	aheadBytes = 256 << 10
)

// within is the longest prefix of jobs whose payloads fit in aheadBytes.
func within(jobs []aheadJob) []aheadJob {
	n := 0
	for i, j := range jobs {
		if n += len(j.payload); n > aheadBytes {
			return jobs[:i:i]
		}
	}
	return jobs
}

// aheadJob is a due job as a scan read it.
type aheadJob struct {
	key, handler, revision string
	payload                []byte
	runAtMs                int64
	attempt                int
}

// claimOf is the claim a kept or scanned job becomes.
func claimOf(b *Binding, module string, j aheadJob) claim {
	run := sdk.JobRun{JobID: module + ":" + j.key, Key: j.key, Payload: j.payload, Attempt: j.attempt, ScheduledFor: time.UnixMilli(j.runAtMs)}
	return claim{b: b, run: run, h: j.handler, job: j,
		ex: &execution{b: b, module: module, key: j.key, revision: j.revision}}
}

// claimQuery leases one job, guarded by the row as the scan read it, and
// by its module as a scan would find it now: no job of the module due
// before it (in claim order) and no live lease of the module's. The row's
// guard alone misses a job written since the read by anything that does
// not touch this scheduler (another scheduler's binding, another process)
// or committed between a step's choice of a kept job and its transaction;
// a kept job claimed then would run ahead of it. Two seeks of the
// module's indexes (TestClaimQueryPlan).
const claimQuery = `UPDATE kimi_scheduler_jobs
	SET leased_until_ms = ?1, lease_token = ?2, lease_holder = ?3, attempt = attempt + 1, updated_ms = ?4
	WHERE module = ?5 AND job_key = ?6 AND revision = ?7 AND attempt = ?8 AND run_at_ms = ?9
		AND (leased_until_ms IS NULL OR leased_until_ms <= ?4)
		AND NOT EXISTS (SELECT 1 FROM kimi_scheduler_jobs e WHERE e.module = ?5 AND (e.run_at_ms, e.job_key) < (?9, ?6))
		AND NOT EXISTS (SELECT 1 FROM kimi_scheduler_jobs l WHERE l.module = ?5 AND l.leased_until_ms > ?4)`

// scanQuery looks at every free module in one statement: per module (a
// JSON array of names), the latest live lease (a crashed process's run,
// which blocks the module until it expires), the earliest run_at_ms of any
// row (when the module next needs a look), and its first ?3 due rows that
// are not leased (one result row each; none: one row of NULLs).
// kimi_scheduler_jobs_due (module, run_at_ms, job_key) serves each
// correlated lookup with an index walk (TestClaimQueryPlan).
const scanQuery = `WITH mods(module) AS (SELECT value FROM json_each(?1)),
heads AS MATERIALIZED (SELECT m.module AS module,
	(SELECT max(l.leased_until_ms) FROM kimi_scheduler_jobs l
		WHERE l.module = m.module AND l.leased_until_ms IS NOT NULL AND l.leased_until_ms > ?2) AS leased,
	(SELECT min(n.run_at_ms) FROM kimi_scheduler_jobs n WHERE n.module = m.module) AS next
	FROM mods m)
SELECT h.module, h.leased, h.next,
	d.job_key, d.handler, d.payload, d.revision, d.run_at_ms, d.attempt
FROM heads h
LEFT JOIN kimi_scheduler_jobs d ON d.rowid IN (
	SELECT x.rowid FROM kimi_scheduler_jobs x
	WHERE x.module = h.module AND x.run_at_ms <= ?2 AND (x.leased_until_ms IS NULL OR x.leased_until_ms <= ?2)
	ORDER BY x.run_at_ms, x.job_key LIMIT ?3)`

// scanned is what a scan found for the modules it looked at.
type scanned struct {
	cands []claim
	// rest is, per module with a candidate, the due jobs after it.
	rest   map[string][]aheadJob
	wakeAt time.Time
	uh     []unhandled
	// looks is when each module next needs a look.
	looks map[string]time.Time
}

// scanModules finds each free module's next claimable job (and the due
// jobs after it) in one query, rescanning only the modules whose first due
// job had no handler, which it marks.
func (s *Scheduler) scanModules(tx stx, free map[string]*Binding, nowMs int64) (scanned, error) {
	ctx := s.stepCtx
	out := scanned{rest: map[string][]aheadJob{}, looks: map[string]time.Time{}}
	addWake := func(t time.Time) {
		if out.wakeAt.IsZero() || t.Before(out.wakeAt) {
			out.wakeAt = t
		}
	}
	type head struct {
		leased, next sql.NullInt64
		due          []aheadJob
	}
	for len(free) > 0 {
		names, err := json.Marshal(slices.Sorted(maps.Keys(free)))
		if err != nil {
			return scanned{}, fmt.Errorf("scheduler: scan: %w", err)
		}
		s.scans.Add(1)
		rows, err := tx.QueryContext(ctx, scanQuery, string(names), nowMs, aheadLimit)
		if err != nil {
			return scanned{}, fmt.Errorf("scheduler: scan due: %w", err)
		}
		heads := make(map[string]*head, len(free))
		for rows.Next() {
			var (
				module                          string
				leased, next, runAt, attempt    sql.NullInt64
				key, handler, payload, revision sql.NullString
			)
			if err := rows.Scan(&module, &leased, &next, &key, &handler, &payload, &revision, &runAt, &attempt); err != nil {
				rows.Close()
				return scanned{}, fmt.Errorf("scheduler: scan due: %w", err)
			}
			h := heads[module]
			if h == nil {
				h = &head{leased: leased, next: next}
				heads[module] = h
			}
			if key.Valid {
				h.due = append(h.due, aheadJob{key: key.String, handler: handler.String, revision: revision.String,
					payload: []byte(payload.String), runAtMs: runAt.Int64, attempt: int(attempt.Int64)})
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return scanned{}, fmt.Errorf("scheduler: scan due: %w", err)
		}
		again := map[string]*Binding{}
		for module, h := range heads {
			b := free[module]
			slices.SortFunc(h.due, func(x, y aheadJob) int {
				return cmp.Or(cmp.Compare(x.runAtMs, y.runAtMs), cmp.Compare(x.key, y.key))
			})
			switch {
			case h.leased.Valid:
				// A live lease (a crashed process's run): at most one job
				// per module, so wait for it to expire.
				addWake(time.UnixMilli(h.leased.Int64))
				out.looks[module] = time.UnixMilli(h.leased.Int64)
			case len(h.due) > 0:
				first := h.due[0]
				if b.handler(first.handler) == nil {
					msg := "no handler " + repr(first.handler)
					if _, err := tx.ExecContext(ctx, `UPDATE kimi_scheduler_jobs SET run_at_ms = ?, last_error = ?, updated_ms = ?
						WHERE module = ? AND job_key = ?`, nowMs+UnhandledRetry.Milliseconds(), msg, nowMs, module, first.key); err != nil {
						return scanned{}, fmt.Errorf("scheduler: mark unhandled: %w", err)
					}
					out.uh = append(out.uh, unhandled{b: b, key: first.key, handler: first.handler})
					again[module] = b
					continue
				}
				// No wake for a due job: claimed, its completion signals;
				// left for want of a slot, another's completion does.
				out.cands = append(out.cands, claimOf(b, module, first))
				out.rest[module] = within(h.due[1:])
				// Due now: left unclaimed for want of a slot, the next
				// step looks again.
				out.looks[module] = time.UnixMilli(nowMs)
			case h.next.Valid:
				addWake(time.UnixMilli(h.next.Int64))
				out.looks[module] = time.UnixMilli(h.next.Int64)
			default:
				out.looks[module] = time.Time{} // no row: only a change brings one
			}
		}
		free = again
	}
	return out, nil
}

// claimFor leases c's job under a new token in tx; false when the row is
// no longer as it was read (changed from outside this process).
func (s *Scheduler) claimFor(tx stx, c *claim, now time.Time) (bool, error) {
	tok := newToken()
	res, err := tx.ExecContext(s.stepCtx, claimQuery, now.Add(s.lease).UnixMilli(), tok, s.holder, now.UnixMilli(),
		c.b.module, c.job.key, c.job.revision, c.job.attempt, c.job.runAtMs)
	if err != nil {
		return false, fmt.Errorf("scheduler: claim: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return false, nil
	}
	c.ex.token = tok
	c.run.Attempt++
	return true, nil
}

func sortClaims(c []claim) {
	slices.SortStableFunc(c, func(x, y claim) int { return x.run.ScheduledFor.Compare(y.run.ScheduledFor) })
}

// claimRound is what claimScanned claimed, and the scans it ran.
type claimRound struct {
	claims []claim
	rounds []scanned
}

// claimScanned scans the modules of scan, then claims, earliest due first
// and up to slots, from those candidates and the first job kept for each
// module of kept. A kept job whose handler went or whose row changed
// since it was read is dropped and its module scanned again, in the same
// transaction. keep receives, per module looked at, what Scheduler.ahead
// holds after the step (nil: nothing); a kept module left unclaimed for
// want of a slot is absent (its jobs stay kept).
func (s *Scheduler) claimScanned(tx stx, free, scan map[string]*Binding, kept map[string][]aheadJob, slots int, now time.Time, keep map[string][]aheadJob) (claimRound, error) {
	var out claimRound
	var cands []claim
	for name, list := range kept {
		c := claimOf(free[name], name, list[0])
		c.kept = true
		cands = append(cands, c)
	}
	for round := 0; len(scan) > 0 || len(cands) > 0; round++ {
		var rest map[string][]aheadJob
		if len(scan) > 0 {
			sc, err := s.scanModules(tx, scan, now.UnixMilli())
			if err != nil {
				return out, err
			}
			out.rounds = append(out.rounds, sc)
			for name := range scan {
				keep[name] = nil
			}
			cands = append(cands, sc.cands...)
			rest = sc.rest
		}
		sortClaims(cands)
		retry := map[string]*Binding{}
		for i := range cands {
			c := &cands[i]
			name := c.b.module
			if len(out.claims) >= slots {
				// More were due: the completion that frees a slot signals
				// the runner, so no timer (a timer at now would spin).
				if !c.kept {
					keep[name] = within(append([]aheadJob{c.job}, rest[name]...))
				}
				continue
			}
			if c.kept && c.b.handler(c.h) == nil {
				// Its handler went: the scan marks it.
				retry[name] = c.b
				continue
			}
			ok, err := s.claimFor(tx, c, now)
			if err != nil {
				return out, err
			}
			if !ok {
				if c.kept && round == 0 {
					// Changed from outside since it was read: look again.
					retry[name] = c.b
				}
				continue
			}
			if c.kept {
				keep[name] = kept[name][1:]
			} else {
				keep[name] = rest[name]
			}
			out.claims = append(out.claims, *c)
		}
		scan, cands = retry, nil
	}
	return out, nil
}
