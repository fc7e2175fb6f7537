package scheduler

import (
	"errors"
	"log/slog"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// Backoff of failed steps: the first retry after stepRetryFirst, each next
// one twice as late, at most stepRetryMax. A signal (new work, a completion)
// still runs a step at once.
const (
	stepRetryFirst = time.Second
	stepRetryMax   = time.Minute
)

// stepRetry is the delay before the step after the failures-th failure in a row.
func stepRetry(failures int) time.Duration {
	d := stepRetryFirst
	for i := 1; i < failures && d < stepRetryMax; i++ {
		d *= 2
	}
	return min(d, stepRetryMax)
}

// failureCause names a failed step's cause for the rate limit: the store's
// class for a full disk or a lock, else the error's text.
func failureCause(err error) string {
	switch {
	case errors.Is(err, store.ErrDiskFull):
		return "disk_full"
	case errors.Is(err, store.ErrBusy):
		return "busy"
	}
	return err.Error()
}

// stepFailed counts a failed step and logs it, and returns the delay before
// the next one. A failing database (a full disk, another program's lock)
// fails every step alike: the steps back off, and the log gets one line per
// cause a minute with the count of the lines left out, not one a second.
// Runner goroutine only.
func (s *Scheduler) stepFailed(err error) time.Duration {
	s.failures++
	delay := stepRetry(s.failures)
	s.stepLog.Log(s.runCtx, s.log, slog.LevelError, failureCause(err), "scheduler step failed",
		"err", err, "failures", s.failures, "retry_in", delay)
	return delay
}

// stepSucceeded ends a run of failed steps. Runner goroutine only.
func (s *Scheduler) stepSucceeded() {
	if s.failures > 0 {
		s.log.Info("scheduler steps succeed again", "failures", s.failures)
		s.failures = 0
	}
}
