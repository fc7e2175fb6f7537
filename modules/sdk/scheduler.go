package sdk

import (
	"context"
	"encoding/json"
	"math"
	"time"
)

// Scheduler limits.
const (
	// MaxJobKeyLength bounds job keys (1..128 characters).
	MaxJobKeyLength = 128
	// MaxHandlerNameLength bounds handler names (1..64 characters).
	MaxHandlerNameLength = 64
	// MaxJobErrorLength bounds JobInfo.LastError ("<Type>: <msg>").
	MaxJobErrorLength = 300
)

// Scheduler is the durable job port. Jobs are rows that survive restarts;
// handlers are registered on every Start. Delivery is at least once: make
// handlers idempotent (JobRun.JobID and Attempt help). At most one job of a
// module runs at a time.
type Scheduler interface {
	// Register binds a handler name (1..64 characters) to a function.
	// Call it in Start, before scheduling jobs for that name.
	Register(handlerName string, handler JobHandler) error
	// RunAt schedules (or replaces) a one-shot job. payload must marshal to
	// a JSON object or be nil.
	RunAt(ctx context.Context, key string, when time.Time, handlerName string, payload any) error
	// RunEvery schedules (or replaces) a periodic job that first runs now,
	// then interval (> 0) plus up to opts.Jitter after each success; a
	// failure retries after opts.Backoff.
	RunEvery(ctx context.Context, key string, interval time.Duration, handlerName string, payload any, opts EveryOptions) error
	// Cancel deletes a job; false when there was none.
	Cancel(ctx context.Context, key string) (bool, error)
	// List returns the module's jobs.
	List(ctx context.Context) ([]JobInfo, error)
}

// JobHandler runs one job execution; an error (or panic) schedules a retry.
type JobHandler func(ctx context.Context, run JobRun) error

// EveryOptions qualify a periodic job.
type EveryOptions struct {
	// Jitter adds up to this much random delay after each success (≥ 0).
	Jitter time.Duration
	// Backoff for failures; nil means DefaultBackoff.
	Backoff *Backoff
}

// JobRun is one execution of a job.
type JobRun struct {
	// JobID is stable for the job ("<module>:<key>").
	JobID string
	Key   string
	// Payload is the job's JSON object ("{}" when none).
	Payload json.RawMessage
	// Attempt counts executions since the last success, starting at 1.
	Attempt      int
	ScheduledFor time.Time
}

// Decode unmarshals the payload into v.
func (r JobRun) Decode(v any) error { return json.Unmarshal(r.Payload, v) }

// JobInfo describes a scheduled job.
type JobInfo struct {
	Key       string
	Handler   string
	NextRunAt time.Time
	// Interval is 0 for one-shot jobs.
	Interval time.Duration
	Attempt  int
	// LastError is "" after a success.
	LastError string
}

// Backoff is the retry delay policy of a failed job: the n-th consecutive
// failure waits min(Max, Base·Multiplier^(n-1)).
type Backoff struct {
	Base       time.Duration
	Max        time.Duration
	Multiplier float64
}

// DefaultBackoff returns the reference's default, 30 s doubling up to one
// hour. It is a function, not a variable, so no package can change the
// default for every module in the process.
func DefaultBackoff() Backoff {
	return Backoff{Base: 30 * time.Second, Max: time.Hour, Multiplier: 2}
}

// Validate checks Base > 0, Max > 0, Multiplier finite and ≥ 1. Messages:
// "backoff base_seconds must be positive", "backoff max_seconds must be
// positive", "backoff multiplier must be finite", "backoff multiplier must
// be at least 1".
func (b Backoff) Validate() error {
	if b.Base <= 0 {
		return contractErrorf("backoff base_seconds must be positive")
	}
	if b.Max <= 0 {
		return contractErrorf("backoff max_seconds must be positive")
	}
	if math.IsNaN(b.Multiplier) || math.IsInf(b.Multiplier, 0) {
		return contractErrorf("backoff multiplier must be finite")
	}
	if b.Multiplier < 1 {
		return contractErrorf("backoff multiplier must be at least 1")
	}
	return nil
}

// Delay returns the wait before retrying after the attempt-th consecutive
// failure (attempt ≥ 1): Max if Base ≥ Max; Base for the first attempt or a
// multiplier of 1; otherwise min(Max, Base·Multiplier^(attempt-1)), computed
// through logarithms so huge attempts never overflow. An invalid Backoff
// uses DefaultBackoff.
func (b Backoff) Delay(attempt int) time.Duration {
	if b.Validate() != nil {
		b = DefaultBackoff()
	}
	exponent := attempt - 1
	if exponent < 0 {
		exponent = 0
	}
	if b.Base >= b.Max {
		return b.Max
	}
	if exponent == 0 || b.Multiplier == 1 {
		return b.Base
	}
	growth := float64(exponent) * math.Log(b.Multiplier)
	if growth >= math.Log(float64(b.Max))-math.Log(float64(b.Base)) {
		return b.Max
	}
	// growth < log(Max/Base), so Base·Multiplier^exponent < Max fits an
	// int64: compute it directly (as the reference does when it cannot
	// overflow) and round, because exp(log(…)) is off by a nanosecond.
	d := time.Duration(math.Round(float64(b.Base) * math.Pow(b.Multiplier, float64(exponent))))
	if d > b.Max || d <= 0 {
		return b.Max
	}
	return d
}
