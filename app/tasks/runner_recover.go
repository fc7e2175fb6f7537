package tasks

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// recover turns the post rows left sending into uncertain (their runs
// uncertain, their tasks needs_attention; one transaction), then prepares
// the runs left pending and resumes the deliveries left unfinished.
func (r *Runner) recover(ctx context.Context) error {
	now := r.s.now().UnixMilli()
	err := r.s.st.Write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT p.run_id, p.seq, p.chunk_index, p.chunk_total, p.kind, r.status FROM kimi_task_posts p
			JOIN kimi_task_runs r ON r.id = p.run_id WHERE p.status = 'sending' ORDER BY p.run_id, p.seq`)
		if err != nil {
			return fmt.Errorf("tasks: recover: %w", err)
		}
		type sending struct {
			run               string
			seq, index, total int
			kind              string
			status            RunStatus
		}
		var found []sending
		for rows.Next() {
			var f sending
			var st string
			if err := rows.Scan(&f.run, &f.seq, &f.index, &f.total, &f.kind, &st); err != nil {
				rows.Close()
				return fmt.Errorf("tasks: recover: %w", err)
			}
			f.status = RunStatus(st)
			found = append(found, f)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("tasks: recover: %w", err)
		}
		for _, f := range found {
			if _, err := tx.ExecContext(ctx, `UPDATE kimi_task_posts SET status = 'uncertain', token = '', detail = ?, updated_ms = ?
				WHERE run_id = ? AND seq = ? AND status = 'sending'`, recoveredDetail, now, f.run, f.seq); err != nil {
				return fmt.Errorf("tasks: recover post %d of %s: %w", f.seq, f.run, err)
			}
			if f.kind != "post" || f.status != RunDelivering {
				continue // a log row, or a preview's: only the row
			}
			run, err := readRun(ctx, tx, f.run)
			if err != nil {
				return fmt.Errorf("tasks: recover: %w", err)
			}
			detail := fmt.Sprintf("post %d (chunk %d of %d) uncertain: %s", f.seq, f.index, f.total, recoveredDetail)
			if err := endRun(ctx, tx, run, RunUncertain, detail, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.s.notify()
	pending, err := r.runIDs(ctx, `SELECT id FROM kimi_task_runs WHERE status IN ('pending', 'running') ORDER BY due_ms, id`)
	if err != nil {
		return err
	}
	for _, id := range pending {
		if err := r.prepare(ctx, id, 0); err != nil {
			return err
		}
	}
	resume, err := r.runIDs(ctx, `SELECT r.id FROM kimi_task_runs r WHERE r.status = 'delivering'
		OR (r.status IN ('completed', 'failed', 'uncertain', 'preview')
			AND EXISTS (SELECT 1 FROM kimi_task_posts p WHERE p.run_id = r.id AND p.status = 'pending'))
		ORDER BY r.due_ms, r.id`)
	if err != nil {
		return err
	}
	for _, id := range resume {
		r.deliver(id)
	}
	return nil
}

// runIDs returns the run ids query q selects.
func (r *Runner) runIDs(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := r.s.st.Reader().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("tasks: list runs: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("tasks: list runs: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks: list runs: %w", err)
	}
	return out, nil
}

// reconcile makes the jobs match the tasks: a job at next_due for every
// active task that has one, none for any other key (but the retention's).
// A job already due at its task's next_due is left alone, so a restart
// writes only what changed.
func (r *Runner) reconcile(ctx context.Context) error {
	b := r.binding()
	if b == nil {
		return nil
	}
	rows, err := r.s.st.Reader().QueryContext(ctx, `SELECT id, next_due_ms FROM kimi_tasks WHERE state = 'active' AND next_due_ms > 0`)
	if err != nil {
		return fmt.Errorf("tasks: reconcile: %w", err)
	}
	due := map[string]time.Time{}
	for rows.Next() {
		var id string
		var ms int64
		if err := rows.Scan(&id, &ms); err != nil {
			rows.Close()
			return fmt.Errorf("tasks: reconcile: %w", err)
		}
		due[id] = time.UnixMilli(ms)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("tasks: reconcile: %w", err)
	}
	jobs, err := b.List(ctx)
	if err != nil {
		return fmt.Errorf("tasks: reconcile: %w", err)
	}
	for _, j := range jobs {
		if at, ok := due[j.Key]; ok {
			if j.Handler == handlerDue && j.Interval == 0 && j.NextRunAt.Equal(at) {
				delete(due, j.Key) // already right: no write at start-up
			}
			continue
		}
		if j.Key == keyRetention {
			continue
		}
		if _, err := b.Cancel(ctx, j.Key); err != nil {
			return fmt.Errorf("tasks: reconcile: %w", err)
		}
	}
	for id, at := range due {
		if err := b.RunAt(ctx, id, at, handlerDue, nil); err != nil {
			return fmt.Errorf("tasks: reconcile %s: %w", id, err)
		}
	}
	return nil
}
