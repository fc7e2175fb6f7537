package tasks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// changed is the Service's hook after a task's change.
func (r *Runner) changed(id string) {
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	if err := r.reschedule(ctx, id); err != nil {
		r.log.Error("reschedule task", "task", id, "err", err)
	}
}

// reschedule sets task id's job: at its next occurrence when it is active
// and has one, none otherwise.
func (r *Runner) reschedule(ctx context.Context, id string) error {
	b := r.binding()
	if b == nil {
		return nil // Start reconciles
	}
	t, err := r.s.Get(ctx, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err != nil || t.State != StateActive || t.NextDue.IsZero() {
		if _, err := b.Cancel(ctx, id); err != nil {
			return fmt.Errorf("tasks: unschedule %s: %w", id, err)
		}
		return nil
	}
	if err := b.RunAt(ctx, id, t.NextDue, handlerDue, nil); err != nil {
		return fmt.Errorf("tasks: schedule %s: %w", id, err)
	}
	return nil
}

// due is the job of a task at its occurrence: Advance (a pending run or a
// skipped row; the task's due moves), the run composed and prepared and
// handed to delivery, and the job rescheduled at the next occurrence.
func (r *Runner) due(ctx context.Context, run sdk.JobRun) error {
	id := run.Key
	// A run an earlier handler made but could not prepare (a store error
	// after Advance committed; the job is retried) is prepared now, not
	// only at the next Start.
	if err := r.prepareLeftOver(ctx, id); err != nil {
		return err
	}
	// An occurrence already due again on time (a short interval reached
	// late) is planned at once, a bounded number of times.
	for range 3 {
		now := r.s.now()
		adv, err := r.s.Advance(ctx, id, now)
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil {
			return err
		}
		if adv.RunID != "" {
			if err := r.prepare(ctx, adv.RunID, 0); err != nil {
				return err
			}
		}
		if adv.SkippedRunID != "" {
			r.noteEnded(ctx)
		}
		if !adv.Plan.HasNext || adv.Plan.Next.After(now) {
			break
		}
	}
	return r.reschedule(ctx, id)
}

// prepareLeftOver prepares task id's pending runs that have no post rows.
func (r *Runner) prepareLeftOver(ctx context.Context, id string) error {
	ids, err := r.runIDs(ctx, `SELECT id FROM kimi_task_runs WHERE task_id = ? AND status = 'pending'
		AND NOT EXISTS (SELECT 1 FROM kimi_task_posts p WHERE p.run_id = kimi_task_runs.id) ORDER BY due_ms, id`, id)
	if err != nil {
		return err
	}
	for _, runID := range ids {
		if err := r.prepare(ctx, runID, 0); err != nil {
			return err
		}
	}
	return nil
}

// prepare composes run runID (pending or preview) and prepares its posts,
// then hands it to delivery. A compose or prepare error fails the run
// (its log row, when the task has a log channel, says why); the task keeps
// its schedule. Only a store error is returned.
func (r *Runner) prepare(ctx context.Context, runID string, previewChannel uint64) error {
	run, err := r.s.Run(ctx, runID)
	if err != nil {
		return err
	}
	out, t, def, cerr := r.compose(ctx, run)
	if cerr == nil {
		cerr = r.s.prepareRun(ctx, runID, out, previewChannel)
		if errors.Is(cerr, context.Canceled) || errors.Is(cerr, context.DeadlineExceeded) {
			return cerr
		}
		if errors.Is(cerr, errAlreadyPrepared) {
			return nil // prepared meanwhile (run now and the due handler): its preparer delivers it
		}
	}
	if cerr != nil {
		r.log.Warn("run failed before delivery", "task", run.TaskID, "run", runID, "err", cerr)
		if run.Status == RunPreview {
			return nil
		}
		if err := r.failRun(ctx, run, t, def, cerr); err != nil {
			return err
		}
	}
	r.deliver(runID)
	return nil
}

// compose returns run's output from its revision's composer.
func (r *Runner) compose(ctx context.Context, run Run) (Output, Task, Definition, error) {
	t, err := r.s.Get(ctx, run.TaskID)
	if err != nil {
		return Output{}, Task{}, Definition{}, err
	}
	def, err := r.s.Revision(ctx, run.TaskID, run.Revision)
	if err != nil {
		return Output{}, t, Definition{}, err
	}
	var c Composer = def.Composer()
	if r.opts.Compose != nil {
		c = r.opts.Compose(t, def)
	}
	num := "preview"
	if run.Status != RunPreview {
		var n int
		if err := r.s.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_task_runs WHERE task_id = ? AND status NOT IN ('skipped', 'preview')
			AND (created_ms < ? OR (created_ms = ? AND id <= ?))`, run.TaskID, run.CreatedAt.UnixMilli(), run.CreatedAt.UnixMilli(), run.ID).Scan(&n); err != nil {
			return Output{}, t, def, fmt.Errorf("tasks: number run %s: %w", run.ID, err)
		}
		num = strconv.Itoa(n)
	}
	out, err := c.Compose(ctx, RunContext{Task: t.Name, Run: num, Due: run.Due, Timezone: def.Schedule[FieldTimezone], Allowed: def.Allowed()})
	if err != nil {
		return Output{}, t, def, fmt.Errorf("tasks: compose run %s: %w", run.ID, err)
	}
	return out, t, def, nil
}

// failRun ends run (not prepared) failed with cause, with a log row saying
// so when the task has a log channel.
func (r *Runner) failRun(ctx context.Context, run Run, t Task, def Definition, cause error) error {
	now := r.s.now().UnixMilli()
	detail := clip("not posted: "+cause.Error(), maxDetail)
	err := r.s.st.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE kimi_task_runs SET status = 'failed', detail = ?, started_ms = CASE WHEN started_ms = 0 THEN ? ELSE started_ms END, finished_ms = ?
			WHERE id = ? AND status IN ('pending', 'running')`, detail, now, now, run.ID)
		if err != nil {
			return fmt.Errorf("tasks: fail run %s: %w", run.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 || def.LogChannelID == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_task_posts (run_id, seq, chunk_index, chunk_total, channel_id, kind, content, mentions, status, updated_ms)
			VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM kimi_task_posts WHERE run_id = ?), 1, 1, ?, 'log', ?, '{"parse":[]}', 'pending', ?)`,
			run.ID, run.ID, int64(def.LogChannelID), LogLine(t.Name, "failed", detail), now); err != nil {
			return fmt.Errorf("tasks: log run %s failed: %w", run.ID, err)
		}
		return nil
	})
	if err == nil {
		r.s.notify()
	}
	return err
}

// deliver hands run runID to the Deliverer in the background (its own
// semaphore bounds the deliveries at once).
func (r *Runner) deliver(runID string) {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return // the next Start resumes it
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		status, err := r.d.Deliver(r.ctx, runID)
		if err != nil {
			r.log.Error("deliver run", "run", runID, "err", err)
		} else {
			r.log.Debug("run delivered", "run", runID, "status", string(status))
		}
		if status == RunFailed || status == RunUncertain {
			// The task may need attention now: its job goes.
			var taskID string
			if err := r.s.st.Reader().QueryRowContext(r.ctx, `SELECT task_id FROM kimi_task_runs WHERE id = ?`, runID).Scan(&taskID); err == nil {
				r.changed(taskID)
			}
		}
		r.s.notify()
		r.noteEnded(r.ctx)
	}()
}

// noteEnded schedules the retention job when none is scheduled.
func (r *Runner) noteEnded(ctx context.Context) {
	if err := r.scheduleRetention(ctx, false); err != nil && ctx.Err() == nil {
		r.log.Error("schedule retention", "err", err)
	}
}
