package admin

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
)

// resultEvents is GET /results/events: a text/event-stream that sends a
// "fragment" event — the subscriptions' list (?view=list) or one
// subscription's counts and notifications (?view=sub&module=…&name=…&
// guild=…&status=…&after=…) — when it opens and after every change the
// service signals (an enqueue, a claim, a settle, an operator action)
// whose rendering differs from the last one sent (resultsChanged: after
// the /results cache has been rebuilt: each fragment is the kept render,
// with this session's CSRF token). There is no polling. It
// ends when the client goes away, when the server shuts down
// (CloseStreams) or when the subscription it shows is gone (unsubscribed).
func (s *Server) resultEvents(c echo.Context) error {
	var fragment func(ctx context.Context) (templ.Component, error)
	switch c.QueryParam("view") {
	case "list":
		fragment = func(ctx context.Context) (templ.Component, error) {
			html, err := s.resultsListHTML(ctx)
			return rawRegion(html), err
		}
	case "sub":
		k, err := parseResultKey(c.QueryParam("module"), c.QueryParam("name"), c.QueryParam("guild"))
		if err != nil {
			return err
		}
		f := form.ParseResultsFilter(c.Request())
		if !f.Validate().OK() {
			return echo.NewHTTPError(http.StatusBadRequest, "The filter is not valid.")
		}
		csrf := s.csrfToken(c)
		fragment = func(ctx context.Context) (templ.Component, error) {
			kept, bad, err := s.resultDetailKept(ctx, k, f)
			if err != nil {
				return nil, err
			}
			if bad {
				return nil, echo.NewHTTPError(http.StatusBadRequest, form.MsgResultsCursor)
			}
			return kept.html.Component(csrf), nil
		}
	default:
		return echo.NewHTTPError(http.StatusBadRequest, "Ask for view=list or view=sub.")
	}
	changed := s.resultsChanged.Watch(c.Request().Context())
	first := true
	return s.streamFragments(c, changed, func(ctx context.Context) (string, bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cmp, err := fragment(ctx)
		switch {
		case err != nil && !first && errors.Is(err, echo.ErrNotFound):
			return "", false, nil // the subscription went: nothing more to show
		case err != nil:
			return "", false, err // before the stream starts: a 404 for an unknown subscription
		}
		first = false
		html, err := renderFragment(ctx, cmp)
		return html, err == nil, err
	})
}
