package admin

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/scheduler"
)

// runModuleJob makes a job due now (POST /modules/{name}/jobs/{key}/run);
// the scheduler writes the audit row and wakes its runner.
func (s *Server) runModuleJob(c echo.Context) error {
	m, key, err := s.jobParam(c)
	if err != nil {
		return err
	}
	f := form.ParseModuleJobRun(c.Request(), key)
	if errs := f.Validate(); !errs.OK() {
		return echo.NewHTTPError(http.StatusBadRequest, errs.Get(form.FieldForm))
	}
	ctx, cancel := withTimeout(c, moduleActionTimeout)
	defer cancel()
	if err := s.opts.Scheduler.RunNow(ctx, m.Name, f.Key, actor(c)); err != nil {
		if errors.Is(err, scheduler.ErrNoJob) {
			return echo.ErrNotFound
		}
		return fmt.Errorf("admin: run job now: %w", err)
	}
	s.setFlash(c, flashJobRun)
	return c.Redirect(http.StatusSeeOther, modulePath(m.Name)+"#card-module-jobs")
}
