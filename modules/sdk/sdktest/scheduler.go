package sdktest

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// FakeJob is one job row of a FakeScheduler.
type FakeJob struct {
	Key     string
	Handler string
	// RunAt is when the job is due. RunEvery stores the Unix epoch, so a
	// periodic job is due at the first RunDue, like the host's "first runs
	// now".
	RunAt time.Time
	// Interval is 0 for one-shot jobs.
	Interval time.Duration
	// Jitter is recorded but ignored, so reschedules are exact.
	Jitter  time.Duration
	Payload json.RawMessage
	Backoff sdk.Backoff
	// Attempt counts executions since the last success.
	Attempt int
	// LastError is "" after a success.
	LastError string
}

// FakeScheduler is an sdk.Scheduler whose jobs run only when the test calls
// RunDue. Settlement follows the host: a successful one-shot job is
// deleted, a successful periodic job is rescheduled Interval after the
// completion time, and a failed job of either kind is kept and retried
// after its Backoff delay (sdk.Backoff.Delay, overflow-safe) with the
// attempt count preserved. Jitter is ignored so reschedules are exact.
type FakeScheduler struct {
	mu       sync.Mutex
	handlers map[string]sdk.JobHandler
	jobs     map[string]*FakeJob
	order    []string // job keys in first-scheduled order, like a Python dict
	runs     []sdk.JobRun
	module   string
}

var _ sdk.Scheduler = (*FakeScheduler)(nil)

// NewFakeScheduler returns an empty scheduler for module (used in job ids,
// "<module>:<key>"; "" gives "fake-<key>" like the reference kit).
func NewFakeScheduler(module string) *FakeScheduler {
	return &FakeScheduler{handlers: map[string]sdk.JobHandler{}, jobs: map[string]*FakeJob{}, module: module}
}

// Register binds a handler name; names are 1..64 characters.
func (s *FakeScheduler) Register(handlerName string, handler sdk.JobHandler) error {
	if err := hostkit.ValidateHandlerName(handlerName); err != nil {
		return err
	}
	if handler == nil {
		return &sdk.ModuleContractError{Message: "handler " + hostkit.Repr(handlerName) + " is nil"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[handlerName] = handler
	return nil
}

// RunAt schedules (or replaces) a one-shot job due at when.
func (s *FakeScheduler) RunAt(ctx context.Context, key string, when time.Time, handlerName string, payload any) error {
	job, err := newFakeJob(key, handlerName, payload)
	if err != nil {
		return err
	}
	job.RunAt = when
	job.Backoff = sdk.DefaultBackoff()
	s.put(job)
	return nil
}

// RunEvery schedules (or replaces) a periodic job that is due immediately.
func (s *FakeScheduler) RunEvery(ctx context.Context, key string, interval time.Duration, handlerName string, payload any, opts sdk.EveryOptions) error {
	job, err := newFakeJob(key, handlerName, payload)
	if err != nil {
		return err
	}
	if err := hostkit.ValidateInterval(interval); err != nil {
		return err
	}
	job.Backoff = sdk.DefaultBackoff()
	if opts.Backoff != nil {
		if err := opts.Backoff.Validate(); err != nil {
			return err
		}
		job.Backoff = *opts.Backoff
	}
	job.RunAt = time.Unix(0, 0)
	job.Interval = interval
	job.Jitter = max(opts.Jitter, 0)
	s.put(job)
	return nil
}

func newFakeJob(key, handlerName string, payload any) (*FakeJob, error) {
	if err := hostkit.ValidateJobKey(key); err != nil {
		return nil, err
	}
	if err := hostkit.ValidateHandlerName(handlerName); err != nil {
		return nil, err
	}
	raw, err := hostkit.EncodeJobPayload(payload)
	if err != nil {
		return nil, err
	}
	return &FakeJob{Key: key, Handler: handlerName, Payload: raw}, nil
}

// put upserts a job, resetting attempt and error as the host's upsert does.
func (s *FakeScheduler) put(job *FakeJob) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.jobs[job.Key]; !exists {
		s.order = append(s.order, job.Key)
	}
	s.jobs[job.Key] = job
}

// Cancel deletes a job and reports whether there was one.
func (s *FakeScheduler) Cancel(ctx context.Context, key string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remove(key), nil
}

func (s *FakeScheduler) remove(key string) bool {
	if _, ok := s.jobs[key]; !ok {
		return false
	}
	delete(s.jobs, key)
	s.order = slices.DeleteFunc(s.order, func(k string) bool { return k == key })
	return true
}

// List returns the jobs in first-scheduled order.
func (s *FakeScheduler) List(ctx context.Context) ([]sdk.JobInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]sdk.JobInfo, 0, len(s.order))
	for _, key := range s.order {
		j := s.jobs[key]
		out = append(out, sdk.JobInfo{Key: j.Key, Handler: j.Handler, NextRunAt: j.RunAt,
			Interval: j.Interval, Attempt: j.Attempt, LastError: j.LastError})
	}
	return out, nil
}

// Job returns a copy of the job with key.
func (s *FakeScheduler) Job(key string) (FakeJob, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[key]
	if !ok {
		return FakeJob{}, false
	}
	c := *j
	c.Payload = slices.Clone(j.Payload)
	return c, true
}

// Handlers returns the registered handler names, sorted.
func (s *FakeScheduler) Handlers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.handlers))
}

// Runs returns every execution so far, oldest first.
func (s *FakeScheduler) Runs() []sdk.JobRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]sdk.JobRun, len(s.runs))
	for i, r := range s.runs {
		r.Payload = slices.Clone(r.Payload)
		out[i] = r
	}
	return out
}

// RunDue runs, one at a time and in scheduling order, every job due at or
// before now, and returns how many ran. A job whose handler is not
// registered does not run: its LastError becomes "no handler 'h'". A job
// cancelled or replaced by an earlier handler in the same pass is skipped;
// a job replaced by its own handler keeps the replacement (settlement never
// clobbers a newer definition, as in the host). A handler's panic counts as
// a failure.
func (s *FakeScheduler) RunDue(ctx context.Context, now time.Time) int {
	s.mu.Lock()
	keys := slices.Clone(s.order)
	s.mu.Unlock()
	ran := 0
	for _, key := range keys {
		s.mu.Lock()
		job, ok := s.jobs[key]
		if !ok || job.RunAt.After(now) {
			s.mu.Unlock()
			continue
		}
		handler := s.handlers[job.Handler]
		if handler == nil {
			job.LastError = "no handler " + hostkit.Repr(job.Handler)
			s.mu.Unlock()
			continue
		}
		job.Attempt++
		run := sdk.JobRun{JobID: s.jobID(key), Key: key, Payload: slices.Clone(job.Payload),
			Attempt: job.Attempt, ScheduledFor: job.RunAt}
		s.runs = append(s.runs, run)
		s.mu.Unlock()

		// The handler gets its own payload: changing it cannot alter the
		// recorded run or the next execution.
		handlerRun := run
		handlerRun.Payload = slices.Clone(run.Payload)
		err := recovering(func() error { return handler(ctx, handlerRun) })

		s.mu.Lock()
		if s.jobs[key] == job { // not cancelled or replaced meanwhile
			if err != nil {
				job.LastError = truncateRunes(err.Error(), sdk.MaxJobErrorLength)
				job.RunAt = now.Add(job.Backoff.Delay(job.Attempt))
			} else {
				job.LastError = ""
				job.Attempt = 0
				if job.Interval == 0 {
					s.remove(key)
				} else {
					job.RunAt = now.Add(job.Interval)
				}
			}
		}
		s.mu.Unlock()
		ran++
	}
	return ran
}

func (s *FakeScheduler) jobID(key string) string {
	if s.module == "" {
		return "fake-" + key
	}
	return s.module + ":" + key
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
