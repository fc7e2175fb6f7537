package admin

import (
	"time"

	"github.com/labstack/echo/v4"
)

// ctxOverload marks a request answered 503 because the password-check
// queue was full (mapBusy): the designed overload answer, not a failure.
const ctxOverload = "kimi.overload"

// overloadEvery is the least time between two overload log lines.
const overloadEvery = time.Second

// overloadAnswered counts one overload answer in the WARN summary: a flood
// of sign-ins past the password-check workers is answered by design and
// must not write a line (let alone an ERROR) per attempt. At most one line
// per overloadEvery (s.overload, one cause); each counts the answers since
// the previous line, itself included.
func (s *Server) overloadAnswered() {
	if ok, held := s.overload.Allow("overload"); ok {
		s.log.Warn("password checks at capacity: answered 503", "answers", held+1)
	}
}

// overloaded reports whether c was answered with the overload 503.
func overloaded(c echo.Context) bool {
	v, _ := c.Get(ctxOverload).(bool)
	return v
}
