package admin

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/web/templates"
)

// taskNew is GET /tasks/new (?guild= prefills the server and its policy's
// time zone): the empty create form.
func (s *Server) taskNew(c echo.Context) error {
	f := form.TaskForm{Guild: strings.TrimSpace(c.QueryParam(form.TaskGuildFilter)), Schedule: map[string]string{tasks.FieldKind: string(tasks.KindDaily), tasks.FieldTime: "09:00"}}
	v := s.taskFormView(c.Request().Context(), f, nil, nil)
	if v.PolicyKnown && v.PolicyTimezone != "" {
		v.Form.Schedule[tasks.FieldTimezone] = v.PolicyTimezone
	}
	return render(c, http.StatusOK, templates.TaskFormPage(s.chrome(c, v.Title, "tasks"), v))
}
