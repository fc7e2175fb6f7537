package admin

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// taskEdit is GET /tasks/{id}/edit: the form prefilled with the current
// revision.
func (s *Server) taskEdit(c echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	t, err := s.opts.Tasks.Get(ctx, id)
	if err != nil {
		return tasksNotFound(err, "task")
	}
	v := s.taskEditView(c, t.Name, id, form.TaskFormOf(t.Definition), nil, t.Definition.Attachments)
	return render(c, http.StatusOK, templates.TaskFormPage(s.chrome(c, v.Title, "tasks"), v))
}
