package admin

import (
	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// assistantEvents is GET /assistant/events: a text/event-stream that sends
// the status region of /assistant when it opens and after every change the
// provider signals (a rebuild, a recorded call, a Test connection), as
// /discord/events does.
func (s *Server) assistantEvents(c echo.Context) error {
	return s.streamFragments(c, s.opts.Assistant.Watch(c.Request().Context()), staticFragment(func() templ.Component {
		return templates.AssistantStatus(s.assistantStatusView(c))
	}))
}
