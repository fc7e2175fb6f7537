package admin

import (
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// deleteTask is POST /tasks/{id}/delete, after a confirmation: the task,
// its revisions, files and runs are deleted and its publications revoked;
// the service writes the audit row. Then back to /tasks.
func (s *Server) deleteTask(c echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, tasksActionTimout)
	defer cancel()
	t, err := s.opts.Tasks.Get(ctx, id)
	if err != nil {
		return tasksNotFound(err, "task")
	}
	if ok, err := s.confirm(c, "tasks", templates.ConfirmView{
		Title:   "Delete the task " + t.Name + "?",
		Message: "Kimi deletes the task with its revisions, attachments and run history, and withdraws its published results from the modules that have not received them yet. Messages already posted in Discord stay.",
		Action:  taskPath(id) + "/delete",
		Button:  "Yes, delete the task",
		Cancel:  taskPath(id),
	}); !ok {
		return err
	}
	if err := s.opts.Tasks.Delete(ctx, actor(c), id); err != nil {
		return tasksNotFound(err, "delete task")
	}
	return s.taskActed(c, "/tasks", templates.FlashSuccess, "Task "+t.Name+" deleted.")
}
