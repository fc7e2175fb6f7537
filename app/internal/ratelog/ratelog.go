// Package ratelog limits a repeated log line to one per distinct cause per
// interval: the lines dropped meanwhile are counted and the next line that
// passes reports the count, so a failure that repeats every second (a full
// disk, a locked database) neither floods the log nor disappears from it.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// maxCauses bounds the causes remembered; beyond it the oldest idle ones are
// forgotten (a forgotten cause logs again at once, which is harmless).
const maxCauses = 64

// Limiter decides which lines pass. The zero value is not usable: use New.
// It is safe for concurrent use.
type Limiter struct {
	mu     sync.Mutex
	every  time.Duration
	now    func() time.Time
	causes map[string]*slot
}

type slot struct {
	logged     time.Time // when the last line for the cause passed
	suppressed int       // lines dropped since
}

// New returns a Limiter passing one line per cause per every, on the clock
// now (nil: time.Now).
func New(every time.Duration, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{every: every, now: now, causes: map[string]*slot{}}
}

// Allow reports whether a line for cause may be written now and, when it
// may, how many lines for cause were dropped since the last one passed.
func (l *Limiter) Allow(cause string) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if sl, found := l.causes[cause]; found {
		if now.Sub(sl.logged) < l.every {
			sl.suppressed++
			return false, 0
		}
		n := sl.suppressed
		sl.logged, sl.suppressed = now, 0
		return true, n
	}
	if len(l.causes) >= maxCauses {
		l.forgetOldest()
	}
	l.causes[cause] = &slot{logged: now}
	return true, 0
}

func (l *Limiter) forgetOldest() {
	var (
		oldest string
		at     time.Time
	)
	for c, sl := range l.causes {
		if oldest == "" || sl.logged.Before(at) {
			oldest, at = c, sl.logged
		}
	}
	delete(l.causes, oldest)
}

// Log writes msg with args at level through logger when Allow(cause) lets
// it, adding "suppressed" (the lines dropped for cause since the last one)
// when there were any. It reports whether the line was written.
func (l *Limiter) Log(ctx context.Context, logger *slog.Logger, level slog.Level, cause, msg string, args ...any) bool {
	ok, n := l.Allow(cause)
	if !ok {
		return false
	}
	if n > 0 {
		args = append(args, "suppressed", n, "suppressed_over", l.every.String())
	}
	logger.Log(ctx, level, msg, args...)
	return true
}
