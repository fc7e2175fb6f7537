package admin

import (
	"context"
	"errors"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// taskEvents is GET /tasks/events?id=…: a text/event-stream that sends a
// "fragment" event — the task page's state and run history — when it
// opens and after every change the service signals (a run, a post, an
// edit, a pause) whose rendering differs from the last one sent. There is
// no polling. It ends when the client goes away, when the server shuts
// down, or when the task is deleted.
func (s *Server) taskEvents(c echo.Context) error {
	id := c.QueryParam("id")
	if !taskIDRE.MatchString(id) {
		return echo.ErrNotFound
	}
	csrf := s.csrfToken(c)
	changed := s.opts.Tasks.Watch(c.Request().Context())
	first := true
	return s.streamFragments(c, changed, func(ctx context.Context) (string, bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, d, err := s.taskDetail(ctx, id)
		switch {
		case err != nil && !first && errors.Is(err, echo.ErrNotFound):
			return "", false, nil // the task went: nothing more to show
		case err != nil:
			return "", false, err
		}
		first = false
		html, err := renderFragment(ctx, templates.TaskHistory(csrf, d))
		return html, err == nil, err
	})
}
