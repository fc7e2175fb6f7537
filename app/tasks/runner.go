package tasks

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/kimiapp/kimi/app/scheduler"
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

// errNotYet marks the skeleton's unimplemented bodies.
var errNotYet = errors.New("tasks: not implemented yet")

// Jobs is the durable scheduler as the runner uses it
// (*scheduler.Scheduler).
type Jobs interface {
	Bind(module string, hooks scheduler.Hooks) *scheduler.Binding
}

var _ Jobs = (*scheduler.Scheduler)(nil)

// Authorizer re-checks, at every delivery, the owner's authority to post
// (the guild's scheduled_tasks policy enabled, the owner's tier at least
// min_tier, owner and bot able to post in the channel). A non-nil error
// fails the row with its text as the reason (the task needs attention).
type Authorizer interface {
	Authorize(ctx context.Context, guildID, ownerID, channelID uint64) error
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
	Logger  *slog.Logger
}

// Runner runs the tasks. Create it with NewRunner, Start it after the
// scheduler's modules are bound, Close it before the scheduler closes.
type Runner struct {
	opts RunnerOptions
}

// NewRunner returns the runner of opts.Service; it hooks the service so
// that every Create, Update, SetPaused and Delete reschedules the task's
// job after its commit.
func NewRunner(opts RunnerOptions) (*Runner, error) {
	if opts.Service == nil || opts.Deliverer == nil || opts.Jobs == nil {
		return nil, errors.New("tasks: a service, a deliverer and the scheduler are required")
	}
	return &Runner{opts: opts}, nil
}

// Start recovers (every post row left sending becomes uncertain, its run
// uncertain and its task needs_attention; runs left pending or delivering
// resume), reconciles the jobs with the active tasks, schedules the
// retention and activates the runner's binding.
func (r *Runner) Start(ctx context.Context) error { return errNotYet }

// Close stops new runs and waits (up to ctx) for the deliveries under way.
func (r *Runner) Close(ctx context.Context) error { return nil }

// RunNow makes a run of task id due now (its schedule unchanged), with an
// audit row, and starts delivering it; it returns the run's id. A task
// that is paused or needs attention refuses (ErrNotRunnable).
func (r *Runner) RunNow(ctx context.Context, actor, id string) (string, error) { return "", errNotYet }

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
// bot and the owner can post in) as a preview run, with an audit row. A
// preview never changes the task's state or schedule and never notifies a
// subscriber.
func (r *Runner) Preview(ctx context.Context, actor, id string, channelID uint64) (Preview, error) {
	return Preview{}, errNotYet
}

// RetryPost re-sends the uncertain post seq of run runID after the
// operator checked Discord that it was not posted: the row goes back to
// pending, the run to delivering, the task back to active when nothing
// else of it is uncertain, with an audit row; delivery resumes in order.
func (r *Runner) RetryPost(ctx context.Context, actor, runID string, seq int) error { return errNotYet }

// PostView is a run's post row for the history.
type PostView struct {
	Seq                    int
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

// RunPosts returns run runID's post rows in delivery order.
func (s *Service) RunPosts(ctx context.Context, runID string) ([]PostView, error) {
	return nil, errNotYet
}

// PurgeExpired deletes the terminal runs that finished before now minus
// Retention (their posts with them) and revokes their publications in the
// results outbox in the same transaction; it returns how many.
func (s *Service) PurgeExpired(ctx context.Context, now time.Time) (int, error) { return 0, errNotYet }
