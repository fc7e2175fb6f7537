package admin

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/web/templates"
)

// resultsShow is GET /results/{module}/{name}/{guild}: the subscription's
// actions and its notifications, filtered by status (?status=), newest
// publication first, a page at a time by the service's keyset cursor
// (?after=). An address no subscription can have, or one that does not
// exist, is a 404; a refused filter or a cursor the service did not hand
// out answers 400 with the reason and lists nothing. The notifications'
// region is a kept render (results_kept.go) with the session's CSRF
// token spliced in.
func (s *Server) resultsShow(c echo.Context) error {
	k, err := resultKeyParam(c)
	if err != nil {
		return err
	}
	f := form.ParseResultsFilter(c.Request())
	errs := f.Validate()
	status := http.StatusOK
	query := f
	if !errs.OK() {
		query = form.ResultsFilter{} // the counts still show; the rows do not
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	kept, badCursor, err := s.resultDetailKept(ctx, k, query)
	if err != nil {
		return err
	}
	if badCursor {
		errs.Add(form.ResultsAfter, form.MsgResultsCursor)
	}
	sub, d := kept.sub, kept.d
	v := templates.ResultSubView{
		Title: k.Module + " · " + k.Name, Sub: d.Sub, ActionBase: resultPath(k), Paused: sub.Paused,
		Retryable: sub.Counts[results.StatusRetry] + sub.Counts[results.StatusBlocked], Expired: sub.Counts[results.StatusExpired],
		Filter: f, Errors: errs, Detail: d,
	}
	if errs.OK() {
		v.Live = resultEventsURL(k, f)
		v.Region = kept.html.Component(s.csrfToken(c)) // the kept render, with this session's token
	} else {
		status = http.StatusBadRequest
		v.Detail.Invalid, v.Detail.Rows, v.Detail.NextURL, v.Detail.FirstURL = true, nil, "", ""
	}
	return render(c, status, templates.ResultPage(s.chrome(c, v.Title, "results"), v))
}
