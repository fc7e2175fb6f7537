package admin

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// cancelModuleJob deletes a job (POST /modules/{name}/jobs/{key}/cancel)
// after a confirmation; the scheduler writes the audit row. A job already
// gone is a 404.
func (s *Server) cancelModuleJob(c echo.Context) error {
	m, key, err := s.jobParam(c)
	if err != nil {
		return err
	}
	f := form.ParseModuleJobCancel(c.Request(), key)
	if errs := f.Validate(); !errs.OK() {
		return echo.NewHTTPError(http.StatusBadRequest, errs.Get(form.FieldForm))
	}
	ok, err := s.confirm(c, "modules", templates.ConfirmView{
		Title: "Cancel the job " + f.Key + " of " + m.Name + "?",
		Message: "Kimi deletes the job: it will not run again unless " + m.Name + " schedules it anew " +
			"(a module that schedules its jobs on start does so at its next restart). A run in progress finishes.",
		Action: jobPath(m.Name, f.Key) + "/cancel",
		Button: "Yes, cancel the job",
		Cancel: modulePath(m.Name) + "#card-module-jobs",
		Keep:   []templates.HiddenField{{Name: form.ModuleJobKey, Value: f.Key}},
	})
	if !ok {
		return err
	}
	ctx, cancel := withTimeout(c, moduleActionTimeout)
	defer cancel()
	deleted, err := s.opts.Scheduler.CancelJob(ctx, m.Name, f.Key, actor(c))
	if err != nil {
		return fmt.Errorf("admin: cancel job: %w", err)
	}
	if !deleted {
		return echo.ErrNotFound
	}
	s.setFlash(c, flashJobCancelled)
	return c.Redirect(http.StatusSeeOther, modulePath(m.Name)+"#card-module-jobs")
}
