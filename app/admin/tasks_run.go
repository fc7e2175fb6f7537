package admin

import (
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// runTaskNow is POST /tasks/{id}/run: a run due now (the schedule
// unchanged); the runner writes the audit row. A task that is paused or
// needs attention refuses, with the reason as the page's message. It asks
// for no confirmation: the operator pressed "Run now".
func (s *Server) runTaskNow(c echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, tasksActionTimout)
	defer cancel()
	if _, err := s.opts.Tasks.RunNow(ctx, actor(c), id); err != nil {
		if msg, ok := taskRefusal(err); ok {
			return s.taskActed(c, taskPath(id), templates.FlashError, msg)
		}
		return tasksNotFound(err, "run task now")
	}
	return s.taskActed(c, taskPath(id), templates.FlashSuccess, "Run started: its status follows below.")
}
