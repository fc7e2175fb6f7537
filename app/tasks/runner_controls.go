package tasks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// notRunnable returns ErrNotRunnable with a sentence for the operator.
func notRunnable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotRunnable, fmt.Sprintf(format, args...))
}

// refuseState refuses a task that is paused or needs attention.
func refuseState(t Task) error {
	switch t.State {
	case StatePaused:
		return notRunnable("task %q is paused; resume it first", t.Name)
	case StateNeedsAttention:
		return notRunnable("task %q needs attention: check its uncertain or failed posts first", t.Name)
	}
	return nil
}

// RunNow makes a run of task id due now (its schedule unchanged), with an
// audit row, and starts delivering it; it returns the run's id. A task
// that is paused or needs attention refuses (ErrNotRunnable).
func (r *Runner) RunNow(ctx context.Context, actor, id string) (string, error) {
	if r.binding() == nil {
		return "", notRunnable("the runner is not running")
	}
	t, err := r.s.Get(ctx, id)
	if err != nil {
		return "", err
	}
	if err := refuseState(t); err != nil {
		return "", err
	}
	runID, err := newID()
	if err != nil {
		return "", err
	}
	now := r.s.now()
	err = r.s.st.Write(ctx, func(tx *sql.Tx) error {
		cur, err := readTask(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := refuseState(cur); err != nil {
			return err
		}
		if err := insertRun(ctx, tx, Run{ID: runID, TaskID: id, Revision: cur.Revision, Due: now, Status: RunPending, Detail: "run now by " + actor, CreatedAt: now}); err != nil {
			return err
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{At: now, Actor: actor, Action: ActionRunNow, Target: id, Detail: fmt.Sprintf("%q, run %s", cur.Name, runID)})
	})
	if err != nil {
		return "", err
	}
	r.s.notify()
	// The run is committed: its preparation no longer hangs on the
	// operator's request (a request ended now would leave it pending until
	// the next Start).
	if err := r.prepare(r.ctx, runID, 0); err != nil {
		return runID, err
	}
	return runID, nil
}

// Preview is a test preview's result.
type Preview struct {
	// RunID is the preview run posted to a channel ("" for render-only).
	RunID string
	// Chunks are the Discord messages the run would post, in order.
	Chunks []PostChunk
}

// Preview composes a run of task id's current revision and returns its
// chunks. With channelID 0 it only renders; otherwise it posts every
// chunk to that channel (which must be a channel of the task's guild the
// bot and the owner can post in) as a preview run, with an audit row,
// pinging none of the task's listed users and roles. A preview never
// changes the task's state or schedule and never notifies a subscriber.
func (r *Runner) Preview(ctx context.Context, actor, id string, channelID uint64) (Preview, error) {
	t, err := r.s.Get(ctx, id)
	if err != nil {
		return Preview{}, err
	}
	now := r.s.now()
	run := Run{TaskID: id, Revision: t.Revision, Due: now, Status: RunPreview, CreatedAt: now}
	out, _, def, err := r.compose(ctx, run)
	if err != nil {
		return Preview{}, err
	}
	if channelID != 0 {
		if r.binding() == nil {
			return Preview{}, notRunnable("the runner is not running")
		}
		if r.opts.Checker == nil {
			return Preview{}, notRunnable("channel %d could not be checked", channelID)
		}
		if msg := def.checkChannel(ctx, r.opts.Checker, channelID, def.Needs()); msg != "" {
			return Preview{}, notRunnable("%s", msg)
		}
		for i := range out.Posts {
			// A test preview pings no one: the text reads as the run's,
			// the listed users and roles are not notified.
			out.Posts[i].ChannelID, out.Posts[i].Mentions = channelID, Mentions{}
		}
		if err := out.Validate(Allowed{Destinations: []uint64{channelID}, Users: def.MentionUsers, Roles: def.MentionRoles}); err != nil {
			return Preview{}, err
		}
	}
	var p Preview
	for _, post := range out.Posts {
		p.Chunks = append(p.Chunks, Chunk(post)...)
	}
	if channelID == 0 {
		return p, nil
	}
	if run.ID, err = newID(); err != nil {
		return Preview{}, err
	}
	r.mu.Lock()
	if busy := r.previews[id]; busy != "" {
		r.mu.Unlock()
		return Preview{}, notRunnable("a test preview of this task is still being posted (run %s): wait for it to finish", busy)
	}
	r.previews[id] = run.ID
	r.mu.Unlock()
	posting := false
	defer func() {
		if !posting {
			r.endPreview(id, run.ID)
		}
	}()
	run.Detail = fmt.Sprintf("preview by %s to channel %d", actor, channelID)
	err = r.s.st.Write(ctx, func(tx *sql.Tx) error {
		if err := insertRun(ctx, tx, run); err != nil {
			return err
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{At: now, Actor: actor, Action: ActionPreview, Target: id,
			Detail: fmt.Sprintf("%q to channel %d, run %s", t.Name, channelID, run.ID)})
	})
	if err != nil {
		return Preview{}, err
	}
	r.s.notify()
	if err := r.s.prepareRun(r.ctx, run.ID, out, channelID); err != nil { // committed: as RunNow's
		return Preview{}, err
	}
	posting = r.deliverPreview(id, run.ID)
	p.RunID = run.ID
	return p, nil
}

// PreviewTimeout bounds the posting of one test preview (the original's
// two minutes): a preview still posting then is cut (its row left sending
// is uncertain, as any cut send).
const PreviewTimeout = 2 * time.Minute

// deliverPreview posts preview run runID of task id in the background,
// under PreviewTimeout, and frees the task's preview slot when it ends; it
// reports whether it started (false while closing).
func (r *Runner) deliverPreview(id, runID string) bool {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return false
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer r.endPreview(id, runID)
		ctx, cancel := context.WithTimeout(r.ctx, PreviewTimeout)
		defer cancel()
		if _, err := r.d.Deliver(ctx, runID); err != nil {
			r.log.Error("deliver preview", "task", id, "run", runID, "err", err)
		}
		r.s.notify()
		r.noteEnded(r.ctx)
	}()
	return true
}

// endPreview frees task id's preview slot held by runID.
func (r *Runner) endPreview(id, runID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.previews[id] == runID {
		delete(r.previews, id)
	}
}

// RetryPost re-sends the uncertain post seq of run runID after the
// operator checked Discord that it was not posted: the row goes back to
// pending, the run to delivering, the task back to active when nothing
// else of it is uncertain, with an audit row; delivery resumes in order.
//
// Only uncertain post rows hold a task in needs_attention here: a failed
// row is final (its run stays failed) and the operator clears the task
// with pause and resume; the retry of a log row leaves the task's state.
func (r *Runner) RetryPost(ctx context.Context, actor, runID string, seq int) error {
	if r.binding() == nil {
		return notRunnable("the runner is not running")
	}
	now := r.s.now()
	ms := now.UnixMilli()
	var taskID string
	err := r.s.st.Write(ctx, func(tx *sql.Tx) error {
		run, err := readRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		taskID = run.TaskID
		if run.Status == RunPreview {
			return notRunnable("a preview's posts are not retried; send a new preview")
		}
		var st, kind string
		err = tx.QueryRowContext(ctx, `SELECT status, kind FROM kimi_task_posts WHERE run_id = ? AND seq = ?`, runID, seq).Scan(&st, &kind)
		if errors.Is(err, sql.ErrNoRows) {
			return notRunnable("run %s has no post %d", runID, seq)
		}
		if err != nil {
			return fmt.Errorf("tasks: retry post %d of %s: %w", seq, runID, err)
		}
		if PostStatus(st) != PostUncertain {
			return notRunnable("post %d is %s; only an uncertain post can be retried", seq, st)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE kimi_task_posts SET status = 'pending', token = '', detail = ?, updated_ms = ? WHERE run_id = ? AND seq = ?`,
			clip("retried by "+actor, maxDetail), ms, runID, seq); err != nil {
			return fmt.Errorf("tasks: retry post %d of %s: %w", seq, runID, err)
		}
		if kind == "post" {
			if _, err := tx.ExecContext(ctx, `UPDATE kimi_task_runs SET status = 'delivering', detail = '', finished_ms = 0 WHERE id = ?`, runID); err != nil {
				return fmt.Errorf("tasks: retry post %d of %s: %w", seq, runID, err)
			}
		}
		t, err := readTask(ctx, tx, run.TaskID)
		if err != nil {
			return err
		}
		var blocking int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM kimi_task_posts p JOIN kimi_task_runs r ON r.id = p.run_id
			WHERE r.task_id = ? AND r.status <> 'preview' AND p.kind = 'post' AND p.status = 'uncertain'`, run.TaskID).Scan(&blocking); err != nil {
			return fmt.Errorf("tasks: retry post %d of %s: %w", seq, runID, err)
		}
		// A log row never put the task in needs_attention: its retry
		// leaves the task's state to its posts.
		if kind == "post" && t.State == StateNeedsAttention && blocking == 0 {
			sched, fe := ParseSchedule(t.Definition.Schedule)
			if fe != nil {
				return fmt.Errorf("tasks: retry post %d of %s: stored schedule: %w", seq, runID, fe)
			}
			var next int64
			if n, ok := sched.Next(now); ok {
				next = n.UnixMilli()
			}
			if _, err := tx.ExecContext(ctx, `UPDATE kimi_tasks SET state = 'active', last_due_ms = ?, next_due_ms = ?, updated_ms = ? WHERE id = ?`,
				ms, next, ms, run.TaskID); err != nil {
				return fmt.Errorf("tasks: retry post %d of %s: %w", seq, runID, err)
			}
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{At: now, Actor: actor, Action: ActionRetryPost, Target: run.TaskID,
			Detail: fmt.Sprintf("%q, run %s, post %d", t.Name, runID, seq)})
	})
	if err != nil {
		return err
	}
	r.s.committed(taskID)
	r.deliver(runID)
	return nil
}

// PostView is a run's post row for the history.
type PostView struct {
	Seq int
	// ChunkIndex is the row's chunk of its post, from 1 (of ChunkTotal).
	ChunkIndex, ChunkTotal int
	ChannelID              uint64
	Log                    bool
	Content                string
	Status                 PostStatus
	Attempts               int
	MessageID              uint64
	Detail                 string
	UpdatedAt              time.Time
}

// RunPosts returns run runID's post rows in delivery order (none for a
// run without posts; ErrNotFound for no such run).
func (s *Service) RunPosts(ctx context.Context, runID string) ([]PostView, error) {
	var n int
	if err := s.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_task_runs WHERE id = ?`, runID).Scan(&n); err != nil {
		return nil, fmt.Errorf("tasks: posts of %s: %w", runID, err)
	}
	if n == 0 {
		return nil, ErrNotFound
	}
	rows, err := s.st.Reader().QueryContext(ctx, `SELECT seq, chunk_index, chunk_total, channel_id, kind, content, status, attempts, message_id, detail, updated_ms
		FROM kimi_task_posts WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("tasks: posts of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []PostView
	for rows.Next() {
		var p PostView
		var ch, msg, upd int64
		var kind, st string
		if err := rows.Scan(&p.Seq, &p.ChunkIndex, &p.ChunkTotal, &ch, &kind, &p.Content, &st, &p.Attempts, &msg, &p.Detail, &upd); err != nil {
			return nil, fmt.Errorf("tasks: posts of %s: %w", runID, err)
		}
		p.ChannelID, p.Log, p.Status, p.MessageID, p.UpdatedAt = uint64(ch), kind == "log", PostStatus(st), uint64(msg), msTime(upd)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tasks: posts of %s: %w", runID, err)
	}
	return out, nil
}
