package admin

import (
	"context"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
)

// proposalEvents is GET /proposals/events: a text/event-stream that sends a
// "fragment" event — the inbox's list for the filters of the query
// (?view=list&state=…) or a proposal's detail (?view=detail&id=…) — when
// it opens and after every change the service signals (Watch: a new
// proposal, a decision) whose rendering differs from the last one sent, so
// a half-typed rejection reason is not replaced by an identical page. There
// is no polling. It ends when the client goes away, when the server shuts
// down (CloseStreams) or on a write error.
func (s *Server) proposalEvents(c echo.Context) error {
	var fragment func(ctx context.Context) (templ.Component, error)
	switch c.QueryParam("view") {
	case "list":
		f := form.ParseProposalFilter(c.Request())
		if !f.Validate().OK() {
			return echo.NewHTTPError(http.StatusBadRequest, "The filters are not valid.")
		}
		fragment = func(ctx context.Context) (templ.Component, error) {
			return s.proposalListRegion(ctx, f)
		}
	case "detail":
		id := c.QueryParam("id")
		if !proposalIDRE.MatchString(id) {
			return echo.ErrNotFound
		}
		csrf := s.csrfToken(c)
		fragment = func(ctx context.Context) (templ.Component, error) {
			region, _, err := s.proposalDetailRegion(ctx, id, csrf)
			return region, err
		}
	default:
		return echo.NewHTTPError(http.StatusBadRequest, "Ask for view=list or view=detail.")
	}
	changed := make(chan struct{}, 1)
	cancel := s.opts.Proposals.Watch(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer cancel()
	return s.streamFragments(c, changed, func(ctx context.Context) (string, bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cmp, err := fragment(ctx)
		if err != nil {
			return "", false, err // before the stream starts: a 404 for an unknown id
		}
		html, err := renderFragment(ctx, cmp)
		return html, err == nil, err
	})
}
