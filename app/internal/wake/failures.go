package wake

import (
	"context"
	"log/slog"
	"time"

	"github.com/kimiapp/kimi/app/internal/ratelog"
)

// Backoff of a failing step: the first retry after FailFirst, each next one
// twice as late, at most FailMax. A signal still runs a step at once.
const (
	FailFirst = time.Second
	FailMax   = time.Minute
)

// Failures is a loop's run of failed steps. A failing database (a full
// disk, another program's lock) fails every step alike, so the steps back
// off and the log gets one line per cause a minute, with the count of the
// lines left out, rather than one a second. It belongs to the loop's
// goroutine.
type Failures struct {
	n   int
	log *ratelog.Limiter
}

// NewFailures returns an empty run on the clock now (nil: time.Now).
func NewFailures(now func() time.Time) *Failures {
	return &Failures{log: ratelog.New(time.Minute, now)}
}

// Failed counts a failed step, logs msg at ERROR through logger unless a
// line for cause went out within the minute, and returns the delay before
// the next step.
func (f *Failures) Failed(ctx context.Context, logger *slog.Logger, msg, cause string, err error) time.Duration {
	f.n++
	delay := FailFirst
	for i := 1; i < f.n && delay < FailMax; i++ {
		delay *= 2
	}
	delay = min(delay, FailMax)
	f.log.Log(ctx, logger, slog.LevelError, cause, msg, "err", err, "failures", f.n, "retry_in", delay)
	return delay
}

// Succeeded ends a run of failures, logging msg at INFO when there was one.
func (f *Failures) Succeeded(logger *slog.Logger, msg string) {
	if f.n > 0 {
		logger.Info(msg, "failures", f.n)
		f.n = 0
	}
}

// Count is the number of steps failed in a row.
func (f *Failures) Count() int { return f.n }
