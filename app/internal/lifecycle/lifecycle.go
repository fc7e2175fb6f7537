// Package lifecycle runs the appliance as an ordered list of parts: each
// part has a name, a Start, a Close and budgets; Start brings the parts up
// in list order and Close takes the started ones down in reverse order,
// each within its budget and all within one overall bound. It is serve's
// skeleton: adding a feature to the appliance is a constructor and one
// line in serve's list (docs/architecture.md).
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Part is one piece of the running appliance.
type Part struct {
	// Name names the part in the log and in /readyz ("modules").
	Name string
	// Start brings the part up; nil: nothing to start. It returns once the
	// part is up (a part that keeps working runs its own goroutines).
	Start func(ctx context.Context) error
	// Close takes the part down; nil: nothing to close. It is called for
	// every part whose Start was called, also when that Start failed, and
	// with Release for a part that was never reached, so it must be safe
	// after a failed Start or none.
	Close func(ctx context.Context) error
	// StartBudget bounds Start: its ctx ends then, and a Start that has
	// not returned a grace period after is abandoned as failed. Zero: the
	// part bounds itself (the module host bounds each module's start).
	StartBudget time.Duration
	// CloseBudget bounds Close the same way (zero: only the overall bound
	// given to Close applies).
	CloseBudget time.Duration
	// Optional parts may fail to start: the failure is logged and the
	// appliance goes on without it (it is still closed).
	Optional bool
}

// AbandonGrace is how long a Start or Close that ignores its ended ctx is
// waited for before it is abandoned (its goroutine left running): a part
// that overruns its close budget costs at most the budget and this.
const AbandonGrace = 250 * time.Millisecond

// Runner starts and closes parts. Create it with New; it is safe for
// concurrent use (Starting is read by /readyz while Start runs).
type Runner struct {
	log *slog.Logger

	mu       sync.Mutex
	parts    []Part        // every part given to Start, in order
	reached  int           // parts[:reached] had their Start called
	finished int           // parts[:finished] had their Start return
	idle     chan struct{} // closed while no Start runs
	closing  bool
}

// New returns a runner that logs with log (nil: slog.Default()).
func New(log *slog.Logger) *Runner {
	if log == nil {
		log = slog.Default()
	}
	idle := make(chan struct{})
	close(idle)
	return &Runner{log: log, idle: idle}
}

// Add appends parts to the list without starting them: a constructor that
// built a part adds it at once, so a later failure to build another still
// releases it (Close). The next Start starts them.
func (r *Runner) Add(parts ...Part) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.parts = append(r.parts, parts...)
}

// Idle returns a channel that is closed while no Start runs.
func (r *Runner) Idle() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idle
}

// Start adds parts (Add) and starts, in order, every added part not
// started yet. It stops at the first required part that fails and returns
// its error; the parts after it are not started (Close still releases
// them). ctx ending stops it as a failure does.
func (r *Runner) Start(ctx context.Context, parts ...Part) error {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return errors.New("lifecycle: start after close")
	}
	r.parts = append(r.parts, parts...)
	first, last := r.reached, len(r.parts)
	todo := slices.Clone(r.parts[first:last])
	idle := make(chan struct{})
	r.idle = idle
	r.mu.Unlock()
	defer close(idle)
	for i := first; i < last; i++ {
		p := todo[i-first]
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("lifecycle: start %s: %w", p.Name, context.Cause(ctx))
		}
		r.mu.Lock()
		if r.closing {
			r.mu.Unlock()
			return errors.New("lifecycle: start after close")
		}
		r.reached = i + 1
		r.mu.Unlock()
		r.log.Info("starting", "part", p.Name)
		began := time.Now()
		err := bounded(ctx, p.StartBudget, p.Start)
		r.mu.Lock()
		r.finished = i + 1
		r.mu.Unlock()
		elapsed := time.Since(began)
		switch {
		case err == nil:
			r.log.Info("started", "part", p.Name, "elapsed_ms", elapsed.Milliseconds())
		case p.Optional:
			r.log.Warn("a part did not start; the appliance goes on without it", "part", p.Name, "elapsed_ms", elapsed.Milliseconds(), "err", err)
		default:
			return &StartError{Part: p.Name, Err: err}
		}
	}
	return nil
}

// Starting names the parts given to Start that have not finished starting,
// in order (none once all have, or once Close began).
func (r *Runner) Starting() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return nil
	}
	var names []string
	for _, p := range r.parts[r.finished:] {
		names = append(names, p.Name)
	}
	return names
}

// Closing reports whether Close has begun.
func (r *Runner) Closing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closing
}

// Close closes every part whose Start was called, newest first, each
// within its CloseBudget; then it releases the parts never reached (their
// Close, quietly, for what their constructors hold). With a deadline on
// ctx each part's budget is cut so that the budgets of the parts closing
// after it still fit before the deadline: a part that overruns takes time
// from the ones before it in the list, never from the last ones (the
// store's checkpoint). It returns the parts' errors joined; a part that
// overran its budget is logged and abandoned, not waited for. Calling it
// again does nothing.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return nil
	}
	r.closing = true
	parts, reached := slices.Clone(r.parts), r.reached
	r.mu.Unlock()
	var errs []error
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		if p.Close == nil {
			continue
		}
		began := time.Now()
		pctx, budget := closeBudget(ctx, p.CloseBudget, parts[:i])
		err := bounded(pctx, budget, p.Close)
		if i >= reached {
			// Never started: only what its constructor holds is released.
			if err != nil {
				r.log.Warn("releasing a part that never started failed", "part", p.Name, "err", err)
			}
			continue
		}
		elapsed := time.Since(began)
		if err != nil {
			r.log.Warn("closing a part failed", "part", p.Name, "elapsed_ms", elapsed.Milliseconds(), "err", err)
			errs = append(errs, fmt.Errorf("lifecycle: close %s: %w", p.Name, err))
			continue
		}
		r.log.Info("closed", "part", p.Name, "elapsed_ms", elapsed.Milliseconds())
	}
	return errors.Join(errs...)
}

// StartError is a required part's failed start.
type StartError struct {
	Part string // the part's name
	Err  error  // what its Start returned
}

// Error names the part.
func (e *StartError) Error() string { return "lifecycle: start " + e.Part + ": " + e.Err.Error() }

// Unwrap returns the part's own error.
func (e *StartError) Unwrap() error { return e.Err }

// minCloseSlice is the least a part is given to close when the parts
// after it have taken the rest of the overall bound.
const minCloseSlice = 50 * time.Millisecond

// closeBudget is the ctx and budget a part with its own budget gets to
// close with the parts in later still to close: its budget cut to what
// ctx's deadline leaves once their budgets and abandon graces, and its
// own grace, are set aside (at least
// minCloseSlice), on a ctx that the overall deadline does not end early —
// the reserve is the later parts' own.
func closeBudget(ctx context.Context, own time.Duration, later []Part) (context.Context, time.Duration) {
	dl, ok := ctx.Deadline()
	if !ok {
		return ctx, own
	}
	var reserve time.Duration
	for _, p := range later {
		if p.Close != nil {
			reserve += p.CloseBudget + AbandonGrace
		}
	}
	// A part that overruns is waited for AbandonGrace past its budget.
	left := time.Until(dl) - reserve - AbandonGrace
	if left < minCloseSlice {
		left = minCloseSlice
	}
	if own == 0 || own > left {
		own = left
	}
	return context.WithoutCancel(ctx), own
}

// ErrOverBudget is the error of a Start or Close that did not return
// within its budget (and a short grace after its ctx ended).
var ErrOverBudget = errors.New("did not finish within its budget")

// bounded runs fn with ctx bounded by budget (zero: ctx alone) and waits
// for it, or, once that ctx has ended, at most AbandonGrace more.
func bounded(ctx context.Context, budget time.Duration, fn func(context.Context) error) error {
	if fn == nil {
		return nil
	}
	cancel := func() {}
	if budget > 0 {
		ctx, cancel = context.WithTimeout(ctx, budget)
	}
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- fmt.Errorf("panic: %v", v)
			}
		}()
		done <- fn(ctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	grace := time.NewTimer(AbandonGrace)
	defer grace.Stop()
	select {
	case err := <-done:
		return err
	case <-grace.C:
		if budget > 0 && !errors.Is(context.Cause(ctx), context.Canceled) {
			return fmt.Errorf("%w (%s)", ErrOverBudget, budget)
		}
		return fmt.Errorf("%w: %w", ErrOverBudget, context.Cause(ctx))
	}
}
