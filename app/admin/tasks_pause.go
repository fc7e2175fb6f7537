package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// pauseTask is POST /tasks/{id}/pause: pause (paused=true) or resume
// (paused=false) the task; the service writes the audit row (none when the
// task is already in that state). It destroys nothing: no confirmation.
func (s *Server) pauseTask(c echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	f := form.ParseTaskPause(c.Request())
	if errs := f.Validate(); !errs.OK() {
		return echo.NewHTTPError(http.StatusBadRequest, errs.Get(form.TaskPaused))
	}
	ctx, cancel := withTimeout(c, tasksActionTimout)
	defer cancel()
	t, err := s.opts.Tasks.SetPaused(ctx, actor(c), id, f.Paused)
	if err != nil {
		return tasksNotFound(err, "pause task")
	}
	msg := "Task " + t.Name + " resumed: its next run is the first after now."
	if f.Paused {
		msg = "Task " + t.Name + " paused: it runs no more until resumed."
	}
	return s.taskActed(c, taskPath(id), templates.FlashSuccess, msg)
}
