package tasks

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// scheduleRetention schedules the retention job at the oldest ended run's
// expiry (read from the store when fromStore, or when none is scheduled
// and a run just ended: now plus Retention).
func (r *Runner) scheduleRetention(ctx context.Context, fromStore bool) error {
	b := r.binding()
	if b == nil {
		return nil
	}
	r.mu.Lock()
	known := !r.retentionAt.IsZero()
	r.mu.Unlock()
	if known && !fromStore {
		return nil
	}
	at := r.s.now().Add(Retention)
	if fromStore {
		oldest, ok, err := r.s.oldestEnded(ctx)
		if err != nil {
			return err
		}
		if !ok {
			if _, err := b.Cancel(ctx, keyRetention); err != nil {
				return fmt.Errorf("tasks: retention: %w", err)
			}
			r.mu.Lock()
			r.retentionAt = time.Time{}
			r.mu.Unlock()
			return nil
		}
		at = oldest.Add(Retention)
	}
	if err := b.RunAt(ctx, keyRetention, at, handlerRetention, nil); err != nil {
		return fmt.Errorf("tasks: retention: %w", err)
	}
	r.mu.Lock()
	r.retentionAt = at
	r.mu.Unlock()
	return nil
}

// retention is the retention job: purge, then schedule the next.
func (r *Runner) retention(ctx context.Context, _ sdk.JobRun) error {
	n, err := r.s.PurgeExpired(ctx, r.s.now())
	if err != nil {
		return err
	}
	if n > 0 {
		r.log.Info("purged expired runs", "runs", n)
	}
	return r.scheduleRetention(ctx, true)
}

// endedSQL selects the runs retention may delete (a preview whose post
// failed never gets a finish time: its creation counts).
//
// An uncertain run whose uncertain post still holds its task in
// needs_attention is kept (heldSQL): its page's retry is the operator's
// way out, and retention must not take it away.
const endedSQL = `((status IN ('completed', 'failed', 'skipped', 'uncertain') AND finished_ms > 0 AND finished_ms < ?)
	OR (status = 'preview' AND max(finished_ms, created_ms) < ?)) AND NOT ` + heldSQL

// heldSQL is a kimi_task_runs row retention keeps: an uncertain run with
// an uncertain post whose task needs attention.
const heldSQL = `(status = 'uncertain'
	AND EXISTS (SELECT 1 FROM kimi_task_posts p WHERE p.run_id = kimi_task_runs.id AND p.status = 'uncertain')
	AND (SELECT state FROM kimi_tasks t WHERE t.id = kimi_task_runs.task_id) = 'needs_attention')`

// oldestEnded returns the oldest retention time of an ended run.
func (s *Service) oldestEnded(ctx context.Context) (time.Time, bool, error) {
	var ms sql.NullInt64
	err := s.st.Reader().QueryRowContext(ctx, `SELECT min(CASE WHEN status = 'preview' THEN max(finished_ms, created_ms) ELSE finished_ms END)
		FROM kimi_task_runs WHERE ((status IN ('completed', 'failed', 'skipped', 'uncertain') AND finished_ms > 0) OR status = 'preview') AND NOT `+heldSQL).Scan(&ms)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("tasks: oldest ended run: %w", err)
	}
	if !ms.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(ms.Int64), true, nil
}

// PurgeExpired deletes the terminal runs that finished before now minus
// Retention (their posts with them) and revokes their publications in the
// results outbox in the same transaction; it returns how many.
func (s *Service) PurgeExpired(ctx context.Context, now time.Time) (int, error) {
	cutoff := now.Add(-Retention).UnixMilli()
	total := 0
	for {
		n := 0
		err := s.st.Write(ctx, func(tx *sql.Tx) error {
			n = 0
			rows, err := tx.QueryContext(ctx, `SELECT id FROM kimi_task_runs WHERE `+endedSQL+` LIMIT ?`, cutoff, cutoff, purgeBatch)
			if err != nil {
				return fmt.Errorf("tasks: purge: %w", err)
			}
			var ids []string
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return fmt.Errorf("tasks: purge: %w", err)
				}
				ids = append(ids, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("tasks: purge: %w", err)
			}
			for _, id := range ids {
				if s.results != nil {
					if err := s.results.RevokeRun(ctx, tx, id); err != nil {
						return fmt.Errorf("tasks: purge run %s: %w", id, err)
					}
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM kimi_task_runs WHERE id = ?`, id); err != nil {
					return fmt.Errorf("tasks: purge run %s: %w", id, err)
				}
			}
			n = len(ids)
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < purgeBatch {
			break
		}
	}
	if total > 0 {
		s.notify()
	}
	return total, nil
}
