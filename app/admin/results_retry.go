package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
)

// retryResults is POST /results/{module}/{name}/{guild}/retry: every retry
// and blocked notification of the subscription (or the one the form's id
// names) becomes due now, its status kept; the service writes the audit
// row and wakes the dispatcher. It asks for no confirmation: it destroys
// nothing.
func (s *Server) retryResults(c echo.Context) error {
	k, err := resultKeyParam(c)
	if err != nil {
		return err
	}
	f := form.ParseResultsRetry(c.Request())
	if errs := f.Validate(); !errs.OK() {
		return echo.NewHTTPError(http.StatusBadRequest, errs.Get(form.FieldForm))
	}
	ctx, cancel := withTimeout(c, resultsActionTimeout)
	defer cancel()
	n, err := s.opts.Results.RetryNow(ctx, k, f.IDs(), resultsActor(c))
	if err != nil {
		return resultsNotFound(err, "retry results now")
	}
	msg := "Retry requested: " + plural(n, "notification") + " due now."
	if sub, err := s.opts.Results.Subscription(ctx, k); err == nil && sub.Paused && n > 0 {
		msg = "Retry requested: " + plural(n, "notification") + " due as soon as delivery is resumed (it is paused)."
	}
	switch {
	case n == 0 && len(f.IDs()) > 0:
		msg = "Nothing to retry: that notification of this subscription is no longer retrying or blocked."
	case n == 0:
		msg = "Nothing to retry: no notification of this subscription is retrying or blocked."
	}
	return s.resultActed(c, resultPath(k), msg)
}
