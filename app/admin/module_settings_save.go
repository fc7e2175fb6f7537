package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
)

// saveModuleSettings saves a module's deployment settings
// (POST /modules/{name}/settings) through the host, which validates them
// against the module's definition and writes the audit row. A refusal
// re-renders the page with each field's message and saves nothing.
func (s *Server) saveModuleSettings(c echo.Context) error {
	m, err := s.moduleParam(c)
	if err != nil {
		return err
	}
	fields := editableFields(m)
	if len(fields) == 0 {
		return echo.ErrNotFound
	}
	f := form.ParseModuleSettings(c.Request(), fields)
	errs := f.Validate(fields)
	status := http.StatusUnprocessableEntity
	if errs.OK() {
		ctx, cancel := withTimeout(c, 10*time.Second)
		defer cancel()
		err := s.opts.Host.SaveSettings(ctx, m.Name, f.Values, actor(c))
		if err == nil {
			s.setFlash(c, flashModuleSaved)
			return c.Redirect(http.StatusSeeOther, modulePath(m.Name)+"#card-module-settings")
		}
		if refused, st, ok := s.refusedForm(c, err); ok {
			errs, status = refused, st
		} else if errs = f.Errors(err); errs.OK() {
			return fmt.Errorf("admin: save module settings: %w", err)
		}
	}
	return s.renderModule(c, status, m, &f, errs)
}
