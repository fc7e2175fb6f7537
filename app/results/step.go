package results

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// prefetch is how many claims the dispatcher holds per handler slot:
// up to prefetch×MaxInFlight rows are claimed, at most MaxInFlight
// handlers run, the others wait in memory and launch as slots free up
// without a transaction. Each step's fixed cost (its transaction, the
// claim's compound query) is shared by the rows it claims: 4 gave
// BenchmarkResultsDelivery 0.20 commits/notification and a ratio of
// 0.18–0.24, 8 gave 0.084 and 0.31–0.36, 16 gives 0.04 and 0.37–0.45. After
// a crash the held rows wait out their lease (60 s) either way; what is
// held is the claim's row and its publication's messages (at most 64).
const prefetch = 16

// launchMargin is the lease a queued claim needs left to be launched: a
// whole handler run (timeout and cancel grace), capped at ¾ of the lease
// when the options make the lease shorter than that (a fresh claim has
// no more either).
func (s *Service) launchMargin() int64 {
	return min((s.opts.HandlerTimeout + s.opts.CancelGrace).Milliseconds(), s.opts.Lease.Milliseconds()*3/4)
}

// renewBelow is the lease left under which a step renews a held claim's
// lease: past half the lease, and always before the launch margin (so a
// queued claim short of it is renewed by the next step, then launched).
func (s *Service) renewBelow() int64 {
	return max(s.opts.Lease.Milliseconds()/2, s.launchMargin())
}

// renewal is a held claim whose lease a step renews.
type renewal struct {
	c     *claim
	token string
	id    string
	ok    bool
}

// noPrune is pruneAt when nothing will expire.
const noPrune = 1<<63 - 1

// stepTimeout bounds one step's transaction.
const stepTimeout = time.Minute

// step runs one write transaction (prune, settle, claim) and returns when
// the next one is due (zero: only on a signal).
func (s *Service) step() time.Time {
	defer s.steps.Add(1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return time.Time{}
	}
	gen := s.gen.Load()
	now := s.now()
	nowMs := now.UnixMilli()
	settles := s.done
	s.done = nil
	for i, o := range settles {
		delete(s.inflight, o.c.token)
		if o.c.launched && !o.c.counted {
			settles[i].inc = 1
		}
	}
	s.dropDeadQueued(nowMs)
	var renewals []*renewal
	var counts []*claim // launched, not yet counted, still running
	for _, c := range s.inflight {
		if c.leaseUntil > nowMs && c.leaseUntil-nowMs < s.renewBelow() {
			renewals = append(renewals, &renewal{c: c, token: c.token, id: c.id})
		}
		if c.launched && !c.counted {
			counts = append(counts, c)
		}
	}
	// limit: the claims this step may add; atOnce: how many of them find
	// a free handler slot at once (their attempts are counted at claim).
	limit := prefetch*s.opts.MaxInFlight - len(s.inflight)
	atOnce := max(0, s.opts.MaxInFlight-s.running-len(s.queue))
	quarantined := slices.Sorted(maps.Keys(s.quarantine))
	released := slices.Sorted(maps.Keys(s.released))
	clear(s.released)
	pruneAt := min(s.pruneAt, s.pruneHint)
	s.pruneHint = noPrune
	announce, announceHealth := s.afterCommit, s.afterCommitHealth
	s.afterCommit, s.afterCommitHealth = false, nil
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	var (
		claims      []*claim
		next        int64
		nextPrune   int64
		changedRows bool
		health      []string
	)
	err := s.st.Write(ctx, func(sqlTx *sql.Tx) error {
		// The transaction is bound to the step's timeout (database/sql
		// rolls it back past it); its statements are not watched one by
		// one (the driver would start a goroutine and an interrupt handler
		// for each).
		ctx := context.WithoutCancel(ctx)
		// The clock is read again once the writer is held: waiting for it
		// (behind an Enqueue's commit, say) must not shorten the leases
		// taken here, nor hide rows due meanwhile.
		now = s.now()
		nowMs = now.UnixMilli()
		tx := s.stmts.Tx(sqlTx)
		claims, changedRows = nil, false
		affected := map[string]bool{}
		deltas := countDeltas{}
		nextPrune = pruneAt
		if pruneAt <= nowMs {
			n, err := s.prune(ctx, tx, nowMs, affected, deltas)
			if err != nil {
				return err
			}
			changedRows = changedRows || n > 0
			if nextPrune, err = s.nextPrune(ctx, tx, nowMs); err != nil {
				return err
			}
		}
		for _, m := range released {
			res, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications SET retry_ms = ?1
				WHERE module = ?2 AND status = 'blocked' AND detail = ?3 AND retry_ms > ?1 AND lease_until_ms <= ?1`, nowMs, m, DetailQuarantined)
			if err != nil {
				return fmt.Errorf("requeue %s: %w", m, err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				changedRows = true
			}
			affected[m] = true
		}
		ok, err := s.settleAll(ctx, tx, settles, now, deltas)
		if err != nil {
			return err
		}
		for i, o := range settles {
			if !ok[i] {
				s.log.Debug("notification lease lost; nothing settled", "module", o.c.key.Module, "id", o.c.id, "outcome", string(o.status))
			}
			changedRows = changedRows || ok[i]
			affected[o.c.key.Module] = true
		}
		if len(counts) > 0 {
			// The attempts of the claims launched since the last step, in
			// one statement.
			arg, err := batchJSON(counts, func(int) int { return 1 })
			if err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications AS n SET attempts = n.attempts + j.inc
				FROM `+leaseRows+` AS j WHERE n.id = j.id AND n.lease_token = j.token`, arg)
			if err != nil {
				return fmt.Errorf("count attempts: %w", err)
			}
			// /results shows the attempts (and keeps its pages until a signal).
			if n, _ := res.RowsAffected(); n > 0 {
				changedRows = true
			}
		}
		for _, r := range renewals {
			res, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications SET lease_until_ms = ?
				WHERE id = ? AND lease_token = ? AND lease_until_ms > ? AND expires_ms > ?`,
				nowMs+s.opts.Lease.Milliseconds(), r.id, r.token, nowMs, nowMs)
			if err != nil {
				return fmt.Errorf("renew lease %s: %w", r.id, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("renew lease %s: %w", r.id, err)
			}
			r.ok = n > 0
			// /results shows the lease (and keeps its pages until a signal).
			changedRows = changedRows || r.ok
		}
		for _, m := range quarantined {
			n, err := s.blockQuarantined(ctx, tx, m, nowMs, deltas)
			if err != nil {
				return err
			}
			if n > 0 {
				changedRows = true
				affected[m] = true
			}
		}
		if limit > 0 {
			var err error
			if claims, err = s.claim(ctx, tx, nowMs, limit, atOnce); err != nil {
				return err
			}
			for _, c := range claims {
				affected[c.key.Module] = true
			}
			changedRows = changedRows || len(claims) > 0
		}
		// The counts of every status change above, in one write.
		if err := deltas.write(ctx, tx); err != nil {
			return err
		}
		if next, err = s.nextDue(ctx, tx, nowMs); err != nil {
			return err
		}
		health = slices.Collect(maps.Keys(affected))
		return nil
	})
	s.stmts.PrepareSeen(ctx)
	if err != nil {
		delay := s.fails.Failed(ctx, s.log, "dispatch step failed", store.Cause(err), err)
		s.mu.Lock()
		// The outcomes are settled by a later step (their leases may
		// expire meanwhile: the rows are then delivered again).
		s.done = append(settles, s.done...)
		for _, o := range settles {
			s.inflight[o.c.token] = o.c
		}
		for _, m := range released {
			s.released[m] = true
		}
		s.pruneHint = min(s.pruneHint, pruneAt)
		if announce {
			s.afterCommit = true
			if s.afterCommitHealth == nil {
				s.afterCommitHealth = map[string]bool{}
			}
			maps.Copy(s.afterCommitHealth, announceHealth)
		}
		s.mu.Unlock()
		return now.Add(delay)
	}
	s.fails.Succeeded(s.log, "dispatch steps succeed again")
	s.commits.Add(1)
	if len(claims) > 0 {
		s.claimTxs.Add(1)
	}
	s.mu.Lock()
	s.pruneAt = nextPrune
	if pa := min(s.pruneAt, s.pruneHint); pa < noPrune && (next == 0 || pa < next) {
		next = pa
	}
	for _, c := range counts {
		c.counted = true
	}
	for _, r := range renewals {
		if r.ok {
			r.c.leaseUntil = nowMs + s.opts.Lease.Milliseconds()
		} else {
			r.c.leaseUntil = 0 // lost: a queued claim is dropped, a running one's checks fail
		}
	}
	for i, c := range claims {
		c.gen, c.counted = gen, i < atOnce
		s.inflight[c.token] = c
		s.queue = append(s.queue, c)
	}
	s.launchQueued()
	// The next renewal of a held claim (one whose lease still runs).
	for _, c := range s.inflight {
		if at := c.leaseUntil - s.renewBelow(); c.leaseUntil > nowMs && (next == 0 || at < next) {
			next = max(at, nowMs+1)
		}
	}
	s.mu.Unlock()
	// The reporter runs after every step that touched a module's rows
	// (coalesced: it reads kimi_result_counts, a few rows per module).
	s.healthLater(health...)
	s.healthLater(slices.Collect(maps.Keys(announceHealth))...)
	if changedRows || announce {
		s.watch.Notify()
	}
	if next == 0 {
		return time.Time{}
	}
	return time.UnixMilli(next)
}

// prune expires live rows past their expiry (one statement per status
// they leave, for d), deletes acknowledged rows past it and expired rows
// a further Retention on (counted by the delete trigger), and
// publications past expiry with no notifications left.
func (s *Service) prune(ctx context.Context, tx querier, nowMs int64, affected map[string]bool, d countDeltas) (int, error) {
	total := 0
	for _, st := range storedOpen {
		rows, err := tx.QueryContext(ctx, `UPDATE kimi_result_notifications SET status = 'expired', lease_token = '', lease_until_ms = 0
			WHERE run_id IN (SELECT run_id FROM kimi_result_publications WHERE expires_ms <= ?)
			AND status = ? RETURNING module, name, guild_id`, nowMs, string(st))
		if err != nil {
			return 0, fmt.Errorf("prune: %w", err)
		}
		n, err := d.scanMoves(rows, st, StatusExpired)
		if err != nil {
			return 0, fmt.Errorf("prune: %w", err)
		}
		total += int(n)
	}
	for ck := range d {
		affected[ck.key.Module] = true
	}
	stmts := []struct {
		q   string
		arg int64
	}{
		{`DELETE FROM kimi_result_notifications
			WHERE run_id IN (SELECT run_id FROM kimi_result_publications WHERE expires_ms <= ?)
			AND status = 'acknowledged' RETURNING module`, nowMs},
		{`DELETE FROM kimi_result_notifications
			WHERE run_id IN (SELECT run_id FROM kimi_result_publications WHERE expires_ms <= ?)
			AND status = 'expired' RETURNING module`, nowMs - Retention.Milliseconds()},
	}
	for _, st := range stmts {
		rows, err := tx.QueryContext(ctx, st.q, st.arg)
		if err != nil {
			return 0, fmt.Errorf("prune: %w", err)
		}
		mods, err := scanStrings(rows)
		if err != nil {
			return 0, fmt.Errorf("prune: %w", err)
		}
		for _, m := range mods {
			affected[m] = true
		}
		total += len(mods)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM kimi_result_publications WHERE expires_ms <= ?
		AND NOT EXISTS (SELECT 1 FROM kimi_result_notifications n WHERE n.run_id = kimi_result_publications.run_id)`, nowMs)
	if err != nil {
		return 0, fmt.Errorf("prune publications: %w", err)
	}
	n, _ := res.RowsAffected()
	return total + int(n), nil
}

// nextPrune is when prune next has work: the earliest publication expiry
// to come, or the purge of expired rows (0: none).
func (s *Service) nextPrune(ctx context.Context, tx querier, nowMs int64) (int64, error) {
	var a, b sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT min(expires_ms) FROM kimi_result_publications WHERE expires_ms > ?`, nowMs).Scan(&a); err != nil {
		return 0, fmt.Errorf("next prune: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT min(p.expires_ms) FROM kimi_result_publications p WHERE p.expires_ms <= ?
		AND EXISTS (SELECT 1 FROM kimi_result_notifications n WHERE n.run_id = p.run_id AND n.status = 'expired')`, nowMs).Scan(&b); err != nil {
		return 0, fmt.Errorf("next prune: %w", err)
	}
	next := int64(noPrune)
	if a.Valid {
		next = a.Int64
	}
	if b.Valid {
		next = min(next, b.Int64+Retention.Milliseconds())
	}
	return next, nil
}

// nextDueSQL is nextDue's statement (?1: now): a seek of the due index
// per stored open status, of the leased index, of the publications'
// expiry index.
const nextDueSQL = `SELECT min(t) FROM (
		SELECT min(retry_ms) AS t FROM kimi_result_notifications WHERE status = 'pending' AND status IN ('pending', 'retry', 'blocked') AND retry_ms > ?1
		UNION ALL SELECT min(retry_ms) FROM kimi_result_notifications WHERE status = 'retry' AND status IN ('pending', 'retry', 'blocked') AND retry_ms > ?1
		UNION ALL SELECT min(retry_ms) FROM kimi_result_notifications WHERE status = 'blocked' AND status IN ('pending', 'retry', 'blocked') AND retry_ms > ?1
		UNION ALL SELECT min(lease_until_ms) FROM kimi_result_notifications INDEXED BY kimi_result_notifications_leased WHERE lease_token <> '' AND lease_until_ms > ?1
		UNION ALL SELECT min(expires_ms) FROM kimi_result_publications WHERE expires_ms > ?1)`

// nextDue is the earliest moment a row becomes due (a retry, a lease
// running out) or a publication expires (0: none; the step adds the
// purge of expired rows).
func (s *Service) nextDue(ctx context.Context, tx querier, nowMs int64) (int64, error) {
	var t sql.NullInt64
	err := tx.QueryRowContext(ctx, nextDueSQL, nowMs).Scan(&t)
	if err != nil {
		return 0, fmt.Errorf("next due: %w", err)
	}
	if !t.Valid {
		return 0, nil
	}
	return t.Int64, nil
}
