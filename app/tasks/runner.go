package tasks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// This file is the runner: the tasks on the durable scheduler (one job per
// active task, due at its next occurrence), the runs it makes (Advance →
// compose → PrepareRun → Deliver), recovery after a restart (a row left
// sending is uncertain), the operator's run-now, preview and retry of an
// uncertain post, and the 30-day retention of terminal runs.

// Runner bounds.
const (
	// JobModule is the scheduler "module" the runner's jobs live under
	// (not a valid module name, so it never collides with one).
	JobModule = "kimi:tasks"
	// Retention is how long a terminal run (completed, failed, skipped,
	// uncertain, preview) is kept.
	Retention = 30 * 24 * time.Hour
)

// Audit actions of the runner's operator controls (target: the task id).
const (
	ActionRunNow    = "tasks.run_now"
	ActionPreview   = "tasks.preview"
	ActionRetryPost = "tasks.retry_post"
)

// ErrNotRunnable reports a run-now, preview or retry the task's or post's
// state refuses (the error's text says why, for the operator).
var ErrNotRunnable = errors.New("tasks: not runnable")

// Jobs is the durable scheduler as the runner uses it
// (*scheduler.Scheduler).
type Jobs interface {
	Bind(module string, hooks scheduler.Hooks) *scheduler.Binding
}

var _ Jobs = (*scheduler.Scheduler)(nil)

// ErrUnavailable, wrapped by an Authorizer's error, says the check could
// not be made (Discord unreachable, a member not fetched): the row waits
// and is checked again, up to MaxAuthorizeWaits times with a doubling
// delay (from the Deliverer's retry delay), before it fails with the
// error as its reason. Any other Authorizer error is a refusal.
var ErrUnavailable = errors.New("tasks: the check could not be made")

// Unavailable marks err as an Authorizer's unavailable check (errors.Is
// ErrUnavailable) without changing its text.
func Unavailable(err error) error { return unavailableError{err} }

type unavailableError struct{ err error }

func (e unavailableError) Error() string        { return e.err.Error() }
func (e unavailableError) Unwrap() error        { return e.err }
func (e unavailableError) Is(target error) bool { return target == ErrUnavailable }

// MaxAuthorizeWaits bounds the re-checks of an unavailable Authorizer
// answer for one row in one delivery (1 s doubling: about a minute).
const MaxAuthorizeWaits = 6

// Authorizer re-checks, at every delivery, the owner's authority to post
// (the guild's scheduled_tasks policy enabled, the owner's tier at least
// min_tier, owner and bot able to post in the channel). A non-nil error
// fails the row with its text as the reason (the task needs attention).
type Authorizer interface {
	Authorize(ctx context.Context, guildID, ownerID, channelID uint64, needs Needs) error
}

// RunnerOptions configures NewRunner.
type RunnerOptions struct {
	Service   *Service
	Deliverer *Deliverer
	Jobs      Jobs
	// Compose returns the composer of a run of t (nil: the definition's
	// TemplateComposer). The seam where a later assistant fills a run with
	// a model's output.
	Compose func(t Task, def Definition) Composer
	// Checker checks a preview's channel (a postable channel of the
	// task's guild the bot and the owner can post in); nil refuses
	// previews to a channel.
	Checker Checker
	Logger  *slog.Logger
}

// Job handlers and keys of the runner (a task's job key is its id).
const (
	handlerDue       = "due"
	handlerRetention = "retention"
	keyRetention     = "retention"
	purgeBatch       = 500
	// recoveredDetail is a post row's detail when Kimi stopped mid-send.
	recoveredDetail = "Kimi stopped while the post was being sent; check Discord"
)

// Runner runs the tasks. Create it with NewRunner, Start it after the
// scheduler's modules are bound, Close it before the scheduler closes.
type Runner struct {
	opts RunnerOptions
	s    *Service
	d    *Deliverer
	log  *slog.Logger

	// ctx is the deliveries' context, cancelled at Close's deadline.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	b       *scheduler.Binding
	closing bool
	// retentionAt is when the retention job is scheduled (zero: none).
	retentionAt time.Time
	// previews are the tasks with a test preview being posted (task id →
	// run id): one at a time per task, as the original allows.
	previews map[string]string
	// startErr is what Start could not do (Problem).
	startErr error
}

// NewRunner returns the runner of opts.Service; it hooks the service so
// that every Create, Update, SetPaused and Delete reschedules the task's
// job after its commit.
func NewRunner(opts RunnerOptions) (*Runner, error) {
	if opts.Service == nil || opts.Deliverer == nil || opts.Jobs == nil {
		return nil, errors.New("tasks: a service, a deliverer and the scheduler are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Runner{opts: opts, s: opts.Service, d: opts.Deliverer, log: opts.Logger, previews: map[string]string{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	opts.Service.changed = r.changed
	return r, nil
}

// binding returns the runner's scheduler binding (nil before Start or
// after Close).
func (r *Runner) binding() *scheduler.Binding {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return nil
	}
	return r.b
}

// Start recovers (every post row left sending becomes uncertain, its run
// uncertain and its task needs_attention; runs left pending or delivering
// resume), reconciles the jobs with the active tasks, schedules the
// retention and activates the runner's binding.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.b != nil || r.closing {
		r.mu.Unlock()
		return errors.New("tasks: the runner was already started")
	}
	b := r.opts.Jobs.Bind(JobModule, scheduler.Hooks{Invoke: r.invoke, Health: r.health})
	r.b = b
	r.mu.Unlock()
	if err := b.Register(handlerDue, r.due); err != nil {
		return fmt.Errorf("tasks: start: %w", err)
	}
	if err := b.Register(handlerRetention, r.retention); err != nil {
		return fmt.Errorf("tasks: start: %w", err)
	}
	// A failed step does not keep the jobs from running: a row left
	// sending that recovery could not mark stays blocked (never re-sent),
	// a left-over pending run is prepared by its task's next due handler
	// and a job reconcile missed is made at the task's next change. The
	// error is returned (serve logs it) and kept for the admin (Problem).
	err := errors.Join(r.recover(ctx), r.reconcile(ctx), r.scheduleRetention(ctx, true))
	b.Activate()
	if err != nil {
		r.mu.Lock()
		r.startErr = err
		r.mu.Unlock()
	}
	return err
}

// Problem describes what went wrong when the runner started ("" when
// nothing did), for the admin's pages.
func (r *Runner) Problem() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.startErr == nil {
		return ""
	}
	return "Kimi could not finish starting the scheduled tasks (" + r.startErr.Error() + "); runs go on, but check the log and restart Kimi."
}

// invoke runs a job handler with a panic contained (the job retries).
func (r *Runner) invoke(ctx context.Context, key string, fn func(context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("job panicked", "key", key, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("tasks: job %s panicked: %v", key, v)
		}
	}()
	return fn(ctx)
}

// health logs what the scheduler reports on the runner's module.
func (r *Runner) health(source string, state sdk.HealthState, detail string) {
	if state == sdk.HealthHealthy {
		return
	}
	r.log.Warn("scheduler health", "source", source, "state", string(state), "detail", detail)
}

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

// Close stops new runs and waits (up to ctx) for the deliveries under way;
// at ctx's end it cancels them (a row cut mid-send stays sending and is
// uncertain at the next Start).
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closing = true
	b := r.b
	r.mu.Unlock()
	if b != nil {
		b.Close()
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		r.cancel()
		return nil
	case <-ctx.Done():
		r.cancel()
		<-done
		return fmt.Errorf("tasks: close: %w", ctx.Err())
	}
}

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
