package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/web/templates"
)

// createTask is POST /tasks: the create form (multipart, with its
// attachments). The service validates the definition against the guild's
// policy and Discord and writes the audit row; a refusal re-renders the
// form with what was typed and the errors beside their fields (422), and
// nothing is saved. The uploads of a refused form are kept on the server
// for the session (tasks_held.go: a browser cannot be handed files back)
// and the form lists them as attached; a held file's remove button shows
// the form again without it, saving nothing.
func (s *Server) createTask(c echo.Context) error {
	f, upErr := form.ParseTaskForm(c.Request())
	ctx, cancel := withTimeout(c, tasksActionTimout)
	defer cancel()
	if upErr != nil {
		f.Uploads = nil // not all of them could be read
	}
	held := s.attachHeld(c, &f)
	refuseWith := func(status int, errs form.Errors) error {
		held = s.keepUploads(c, &f, held)
		v := s.taskFormView(ctx, f, errs, nil)
		v.Held = heldView(held)
		return render(c, status, templates.TaskFormPage(s.chrome(c, v.Title, "tasks"), v))
	}
	refuse := func(errs form.Errors) error { return refuseWith(http.StatusUnprocessableEntity, errs) }
	if f.RemoveHeld != "" {
		held = s.removeHeld(c, f, held)
		return refuseWith(http.StatusOK, nil)
	}
	if upErr != nil {
		var errs form.Errors
		errs.Add(form.FieldForm, form.MsgTaskUpload)
		errs.Add(tasks.FieldAttachments, form.MsgTaskUpload)
		return refuse(errs)
	}
	def, errs := f.Definition(nil)
	if !errs.OK() {
		errs.Add(form.FieldForm, "The task was not saved: correct the fields marked below.")
		return refuse(errs)
	}
	t, err := s.opts.Tasks.Create(ctx, actor(c), def)
	if err != nil {
		if errs, status, ok := s.refusedForm(c, err); ok {
			return refuseWith(status, errs)
		}
		if errs, ok := taskSaveErrors(err); ok {
			return refuse(errs)
		}
		return tasksNotFound(err, "create task")
	}
	s.dropHeld(c, held)
	return s.taskActed(c, taskPath(t.ID), templates.FlashSuccess, "Task "+t.Name+" created.")
}
