package admin

import (
	"context"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// demoEvents is GET /demo/events: a text/event-stream that sends a "fragment" event — the
// server-rendered chat of a channel (?view=chat) or the modals open for the acting member
// (?view=modals), for ?channel= as ?as= — when it opens and after every change of the fake
// Discord whose rendering differs from the last one sent (so an unrelated change does not
// replace a half-filled modal). There is no polling: it waits on the fake's Watch. It ends
// when the client goes away, when the server shuts down (CloseStreams) or on a write error.
func (s *Server) demoEvents(c echo.Context) error {
	if s.opts.Demo == nil {
		return echo.ErrNotFound
	}
	var fragment func(v templates.DemoView) templ.Component
	switch c.QueryParam("view") {
	case "chat":
		fragment = templates.DemoChat
	case "modals":
		fragment = templates.DemoModals
	default:
		return echo.NewHTTPError(http.StatusBadRequest, "Ask for view=chat or view=modals.")
	}
	channel, as := c.QueryParam(form.FieldDemoChannel), c.QueryParam("as")
	if v, err := s.demoView(c, channel, as); err != nil {
		return err
	} else if v == nil {
		return echo.ErrNotFound
	}
	return s.streamFragments(c, s.opts.Demo.Watch(c.Request().Context()), func(ctx context.Context) (string, bool, error) {
		v, err := s.demoView(c, channel, as)
		if err != nil || v == nil { // nil: the channel is gone, nothing more to show
			return "", false, err
		}
		html, err := renderFragment(ctx, fragment(*v))
		return html, err == nil, err
	})
}
