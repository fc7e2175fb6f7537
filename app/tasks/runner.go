package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/modules/sdk"
)

// This file and its runner_*.go siblings are the runner: the tasks on the
// durable scheduler (one job per active task, due at its next occurrence),
// the runs it makes (Advance → compose → PrepareRun → Deliver;
// runner_run.go), recovery after a restart (a row left sending is
// uncertain; runner_recover.go), the operator's run-now, preview and retry
// of an uncertain post (runner_controls.go), and the 30-day retention of
// terminal runs (runner_retention.go).

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
