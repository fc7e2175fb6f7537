package admin

import (
	"log/slog"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// ctxOverload marks a request answered 503 because the password-check
// queue was full (mapBusy): the designed overload answer, not a failure.
const ctxOverload = "kimi.overload"

// overloadEvery is the least time between two overload log lines.
const overloadEvery = time.Second

// overloadLog summarizes the overload answers at WARN, at most one line per
// overloadEvery: a flood of sign-ins past the password-check workers is
// answered by design and must not write a line (let alone an ERROR) per
// attempt. Each line counts the answers since the previous line, itself
// included; answers after a flood's last line are counted in the next one.
type overloadLog struct {
	now func() time.Time // time.Now; tests set a controllable clock

	mu       sync.Mutex
	last     time.Time // when the last line was written; zero: never
	unlogged int       // answers since the last line
}

// answered counts one overload answer and writes the summary line when the
// last one is at least overloadEvery old.
func (o *overloadLog) answered(log *slog.Logger) {
	o.mu.Lock()
	now := time.Now()
	if o.now != nil {
		now = o.now()
	}
	o.unlogged++
	if !o.last.IsZero() && now.Sub(o.last) < overloadEvery {
		o.mu.Unlock()
		return
	}
	n := o.unlogged
	o.last, o.unlogged = now, 0
	o.mu.Unlock()
	log.Warn("password checks at capacity: answered 503", "answers", n)
}

// overloaded reports whether c was answered with the overload 503.
func overloaded(c echo.Context) bool {
	v, _ := c.Get(ctxOverload).(bool)
	return v
}
