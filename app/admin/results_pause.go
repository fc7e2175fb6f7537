package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
)

// pauseResults is POST /results/{module}/{name}/{guild}/pause: pause
// (paused=true) or resume (paused=false) the subscription's delivery;
// resuming makes its waiting notifications due now. The service writes
// the audit row. Pausing loses nothing, so it asks for no confirmation.
// Asking for the state it is already in (a stale page) changes nothing
// and says so.
func (s *Server) pauseResults(c echo.Context) error {
	k, err := resultKeyParam(c)
	if err != nil {
		return err
	}
	f := form.ParseResultsPause(c.Request())
	if errs := f.Validate(); !errs.OK() {
		return echo.NewHTTPError(http.StatusBadRequest, errs.Get(form.FieldForm))
	}
	ctx, cancel := withTimeout(c, resultsActionTimeout)
	defer cancel()
	// The state before, for the message only (the service decides, and
	// changes nothing when the subscription is already as asked).
	sub, err := s.opts.Results.Subscription(ctx, k)
	if err != nil {
		return resultsNotFound(err, "pause results")
	}
	if err := s.opts.Results.SetPaused(ctx, k, f.Paused, resultsActor(c)); err != nil {
		return resultsNotFound(err, "pause results")
	}
	var msg string
	switch {
	case sub.Paused == f.Paused && f.Paused:
		msg = "Delivery was already paused; nothing changed."
	case sub.Paused == f.Paused:
		msg = "Delivery was not paused; nothing changed."
	case f.Paused:
		msg = "Delivery paused: notifications wait until you resume it (they still expire 30 days after publication)."
	default:
		msg = "Delivery resumed: waiting notifications are due now."
	}
	return s.resultActed(c, resultPath(k), msg)
}
