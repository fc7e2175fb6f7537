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
	if err := s.opts.Results.SetPaused(ctx, k, f.Paused, resultsActor(c)); err != nil {
		return resultsNotFound(err, "pause results")
	}
	msg := "Delivery resumed: waiting notifications are due now."
	if f.Paused {
		msg = "Delivery paused: notifications wait until you resume it (they still expire 30 days after publication)."
	}
	return s.resultActed(c, resultPath(k), msg)
}
