package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// previewTask is POST /tasks/{id}/preview: a test preview of the current
// revision. Without a channel it renders the messages a run would post
// into the page (escaped, as text); with one it posts them there as a
// preview run (which never changes the task's state nor notifies a
// subscriber). The runner writes the audit row.
func (s *Server) previewTask(c echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	f := form.ParseTaskPreview(c.Request())
	ctx, cancel := withTimeout(c, tasksActionTimout)
	defer cancel()
	v, err := s.taskShowView(ctx, id)
	if err != nil {
		return err
	}
	page := func(status int) error {
		return render(c, status, templates.TaskPage(s.chrome(c, v.Task.Name, "tasks"), v))
	}
	if errs := f.Validate(); !errs.OK() {
		v.PreviewError = errs.Get(form.TaskChannel)
		return page(http.StatusBadRequest)
	}
	p, err := s.opts.Tasks.Preview(ctx, actor(c), id, f.Channel)
	if err != nil {
		if msg, ok := taskRefusal(err); ok {
			v.PreviewError = msg
			return page(http.StatusUnprocessableEntity)
		}
		return tasksNotFound(err, "preview task")
	}
	if f.Channel != 0 {
		return s.taskActed(c, taskPath(id), templates.FlashSuccess, "Preview posted: its run follows below.")
	}
	v.Preview = previewChunks(p, s.namer())
	return page(http.StatusOK)
}
