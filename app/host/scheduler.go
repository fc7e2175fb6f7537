package host

import (
	"context"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// unhandledRetry is how long a job whose handler is not registered waits.
const unhandledRetry = 60 * time.Second

// scheduler is the in-memory job scheduler: timers, no polling. Jobs live
// per module name for the life of the process (they survive a module
// restart, not a process restart: the durable scheduler is its own issue);
// handlers are registered per started instance and dropped at close. At
// most one job of a module runs at a time.
type scheduler struct {
	h    *Host
	mu   sync.Mutex
	mods map[string]*moduleJobs
}

type moduleJobs struct {
	run      sync.Mutex // one job of the module at a time
	jobs     map[string]*job
	inst     *instance
	handlers map[string]sdk.JobHandler
}

type job struct {
	key, handler string
	payload      json.RawMessage
	next         time.Time
	interval     time.Duration
	jitter       time.Duration
	backoff      sdk.Backoff
	attempt      int
	lastError    string
	timer        *time.Timer
	gen          int // bumped on replace/cancel so a stale timer does nothing
}

func newScheduler(h *Host) *scheduler { return &scheduler{h: h, mods: map[string]*moduleJobs{}} }

func (s *scheduler) module(name string) *moduleJobs {
	m := s.mods[name]
	if m == nil {
		m = &moduleJobs{jobs: map[string]*job{}, handlers: map[string]sdk.JobHandler{}}
		s.mods[name] = m
	}
	return m
}

// attach binds the module's new instance (handlers start empty) and arms
// the timers of its jobs.
func (s *scheduler) attach(inst *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.module(inst.name)
	m.inst, m.handlers = inst, map[string]sdk.JobHandler{}
	for _, j := range m.jobs {
		s.arm(inst.name, j)
	}
}

// detach drops the instance's handlers and stops its timers; jobs stay.
func (s *scheduler) detach(inst *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mods[inst.name]
	if m == nil || m.inst != inst {
		return
	}
	m.inst, m.handlers = nil, map[string]sdk.JobHandler{}
	for _, j := range m.jobs {
		if j.timer != nil {
			j.timer.Stop()
			j.timer = nil
		}
	}
}

// arm (re)starts j's timer; s.mu held.
func (s *scheduler) arm(module string, j *job) {
	if j.timer != nil {
		j.timer.Stop()
	}
	j.gen++
	gen := j.gen
	j.timer = time.AfterFunc(max(time.Until(j.next), 0), func() { s.fire(module, j.key, gen) })
}

func (s *scheduler) fire(module, key string, gen int) {
	s.mu.Lock()
	m := s.mods[module]
	j := m.jobs[key]
	if j == nil || j.gen != gen || m.inst == nil {
		s.mu.Unlock()
		return
	}
	inst := m.inst
	handler := m.handlers[j.handler]
	if handler == nil {
		j.lastError = "no handler " + hostkit.Repr(j.handler)
		j.next = s.h.now().Add(unhandledRetry)
		s.arm(module, j)
		s.mu.Unlock()
		s.h.health.constrain(module, "scheduler:"+key, sdk.HealthDegraded, "scheduled job "+hostkit.Repr(key)+" has no handler")
		return
	}
	j.attempt++
	run := sdk.JobRun{JobID: module + ":" + key, Key: key, Payload: slices.Clone(j.payload), Attempt: j.attempt, ScheduledFor: j.next}
	s.mu.Unlock()

	m.run.Lock()
	err := s.h.callback(inst.ctx, inst, "job", key, func(ctx context.Context) error { return handler(ctx, run) })
	m.run.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if m.jobs[key] != j || j.gen != gen || m.inst != inst {
		return // replaced, cancelled or detached meanwhile
	}
	now := s.h.now()
	switch {
	case err == nil && j.interval == 0:
		delete(m.jobs, key)
		return
	case err == nil:
		j.attempt, j.lastError = 0, ""
		j.next = now.Add(j.interval + jitter(j.jitter))
	default:
		msg := err.Error()
		if len([]rune(msg)) > sdk.MaxJobErrorLength {
			msg = string([]rune(msg)[:sdk.MaxJobErrorLength])
		}
		j.lastError = msg
		j.next = now.Add(j.backoff.Delay(j.attempt))
	}
	s.arm(module, j)
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// jobs lists a module's jobs for the admin UI.
func (s *scheduler) jobs(module string) []sdk.JobInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mods[module]
	if m == nil {
		return nil
	}
	var out []sdk.JobInfo
	for _, k := range slices.Sorted(maps.Keys(m.jobs)) {
		j := m.jobs[k]
		out = append(out, sdk.JobInfo{Key: j.key, Handler: j.handler, NextRunAt: j.next, Interval: j.interval, Attempt: j.attempt, LastError: j.lastError})
	}
	return out
}

// jobsView is a module's sdk.Scheduler.
type jobsView struct {
	inst *instance
	s    *scheduler
}

var _ sdk.Scheduler = (*jobsView)(nil)

func (v *jobsView) live() (*moduleJobs, error) {
	if v.inst.revoked() {
		return nil, v.inst.revokedErr("scheduler")
	}
	m := v.s.module(v.inst.name)
	if m.inst != v.inst {
		return nil, v.inst.revokedErr("scheduler")
	}
	return m, nil
}

func (v *jobsView) Register(handlerName string, handler sdk.JobHandler) error {
	if err := hostkit.ValidateHandlerName(handlerName); err != nil {
		return err
	}
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	m, err := v.live()
	if err != nil {
		return err
	}
	m.handlers[handlerName] = handler
	for _, j := range m.jobs {
		if j.handler == handlerName {
			v.s.h.health.constrain(v.inst.name, "scheduler:"+j.key, sdk.HealthHealthy, "")
		}
	}
	return nil
}

func (v *jobsView) schedule(key, handlerName string, payload any, next time.Time, interval time.Duration, opts sdk.EveryOptions) error {
	if err := hostkit.ValidateJobKey(key); err != nil {
		return err
	}
	if err := hostkit.ValidateHandlerName(handlerName); err != nil {
		return err
	}
	raw, err := hostkit.EncodeJobPayload(payload)
	if err != nil {
		return err
	}
	backoff := sdk.DefaultBackoff()
	if opts.Backoff != nil {
		if err := opts.Backoff.Validate(); err != nil {
			return err
		}
		backoff = *opts.Backoff
	}
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	m, err := v.live()
	if err != nil {
		return err
	}
	j := m.jobs[key]
	if j == nil {
		j = &job{key: key}
		m.jobs[key] = j
	}
	j.handler, j.payload, j.next, j.interval, j.jitter, j.backoff = handlerName, raw, next, interval, max(opts.Jitter, 0), backoff
	j.attempt, j.lastError = 0, ""
	v.s.arm(v.inst.name, j)
	return nil
}

func (v *jobsView) RunAt(ctx context.Context, key string, when time.Time, handlerName string, payload any) error {
	return v.schedule(key, handlerName, payload, when, 0, sdk.EveryOptions{})
}

func (v *jobsView) RunEvery(ctx context.Context, key string, interval time.Duration, handlerName string, payload any, opts sdk.EveryOptions) error {
	if err := hostkit.ValidateInterval(interval); err != nil {
		return err
	}
	return v.schedule(key, handlerName, payload, v.s.h.now(), interval, opts)
}

func (v *jobsView) Cancel(ctx context.Context, key string) (bool, error) {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	m, err := v.live()
	if err != nil {
		return false, err
	}
	j := m.jobs[key]
	if j == nil {
		return false, nil
	}
	if j.timer != nil {
		j.timer.Stop()
	}
	j.gen++
	delete(m.jobs, key)
	v.s.h.health.constrain(v.inst.name, "scheduler:"+key, sdk.HealthHealthy, "")
	return true, nil
}

func (v *jobsView) List(ctx context.Context) ([]sdk.JobInfo, error) {
	if _, err := func() (*moduleJobs, error) { v.s.mu.Lock(); defer v.s.mu.Unlock(); return v.live() }(); err != nil {
		return nil, err
	}
	return v.s.jobs(v.inst.name), nil
}
