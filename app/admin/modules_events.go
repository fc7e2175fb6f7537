package admin

import (
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// moduleEvents is GET /modules/events: a text/event-stream that sends a
// "fragment" event — the server-rendered HTML of the module list
// (?view=list) or of the overview's module-health card (?view=overview) —
// when it opens and after every change the host signals. There is no
// polling: it waits on the host's Watch. It ends when the client goes
// away, when the server shuts down (CloseStreams) or on a write error.
func (s *Server) moduleEvents(c echo.Context) error {
	var fragment func() templ.Component
	switch c.QueryParam("view") {
	case "list":
		fragment = func() templ.Component { return templates.ModuleList(s.csrfToken(c), s.modulesView().Rows) }
	case "overview":
		fragment = func() templ.Component { return templates.ModuleHealthCard(s.moduleHealthView()) }
	default:
		return echo.NewHTTPError(http.StatusBadRequest, "Ask for view=list or view=overview.")
	}
	return s.streamFragments(c, s.opts.Host.Watch(c.Request().Context()), staticFragment(fragment))
}

// sseEvent frames data as one server-sent event: every line of it a
// "data:" line (the browser joins them with newlines), then a blank line.
func sseEvent(name, data string) []byte {
	var b strings.Builder
	b.WriteString("event: " + name + "\n")
	for _, line := range strings.Split(strings.ReplaceAll(data, "\r", ""), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	return []byte(b.String())
}
