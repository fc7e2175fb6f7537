package admin

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/web/templates"
)

// updateTask is POST /tasks/{id}/edit: the form saved as the task's next
// revision, its current attachments kept unless ticked for removal. The
// guild stays the task's. A refusal re-renders the form as typed with its
// errors (422) and saves nothing; its uploads are held as createTask's.
func (s *Server) updateTask(c echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	f, upErr := form.ParseTaskForm(c.Request())
	ctx, cancel := withTimeout(c, tasksActionTimout)
	defer cancel()
	t, err := s.opts.Tasks.Get(ctx, id)
	if err != nil {
		return tasksNotFound(err, "task")
	}
	f.Guild = strconv.FormatUint(t.GuildID, 10)
	if upErr != nil {
		f.Uploads = nil // not all of them could be read
	}
	held := s.attachHeld(c, &f)
	refuseWith := func(status int, errs form.Errors) error {
		held = s.keepUploads(c, &f, held)
		v := s.taskEditView(c, t.Name, id, f, errs, t.Definition.Attachments)
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
	var current []tasks.Attachment
	if len(t.Definition.Attachments) > 0 {
		cur, err := s.opts.Tasks.Revision(ctx, id, t.Revision)
		if err != nil {
			return tasksNotFound(err, "task revision")
		}
		current = cur.Files
	}
	def, errs := f.Definition(current)
	if !errs.OK() {
		errs.Add(form.FieldForm, "The task was not saved: correct the fields marked below.")
		return refuse(errs)
	}
	saved, err := s.opts.Tasks.Update(ctx, actor(c), id, def)
	if err != nil {
		if errs, status, ok := s.refusedForm(c, err); ok {
			return refuseWith(status, errs)
		}
		if errs, ok := taskSaveErrors(err); ok {
			return refuse(errs)
		}
		return tasksNotFound(err, "update task")
	}
	s.dropHeld(c, held)
	return s.taskActed(c, taskPath(id), templates.FlashSuccess, "Task "+saved.Name+" saved as revision "+strconv.Itoa(saved.Revision)+".")
}

// taskEditView is the edit form's page.
func (s *Server) taskEditView(c echo.Context, name, id string, f form.TaskForm, errs form.Errors, existing []tasks.AttachmentMeta) templates.TaskFormView {
	v := s.taskFormView(c.Request().Context(), f, errs, existing)
	v.Title, v.Lead, v.Action, v.Cancel, v.Editing = "Edit "+name, "Saving makes a new revision; the runs so far keep theirs.", taskPath(id)+"/edit", taskPath(id), true
	return v
}
