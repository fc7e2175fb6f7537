package admin

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/web/templates"
)

// toggleModule enables or disables a module (POST /modules/{name}/enabled):
// the host stores the selection with its audit row and restarts the
// modules on it. Disabling is disruptive and asks first. With the
// selection from KIMI_MODULES the change is refused: it would only wait
// for the variable's removal, which the page says instead.
func (s *Server) toggleModule(c echo.Context) error {
	m, err := s.moduleParam(c)
	if err != nil {
		return err
	}
	f := form.ParseModuleToggle(c.Request())
	if errs := f.Validate(); !errs.OK() {
		return echo.NewHTTPError(http.StatusBadRequest, errs.Get(form.FieldForm))
	}
	if s.opts.Host.Selection().FromEnv {
		return echo.NewHTTPError(http.StatusConflict,
			"KIMI_MODULES sets the module selection, so it cannot be changed here. Edit the variable and restart Kimi.")
	}
	if !f.Enabled {
		ok, err := s.confirm(c, "modules", templates.ConfirmView{
			Title: "Disable " + m.Name + "?",
			Message: "Kimi closes " + m.Name + " and every module that depends on it, then restarts the modules on the new selection. " +
				"Its commands, tools and jobs stop until you enable it again; its data is kept.",
			Action: modulePath(m.Name) + "/enabled",
			Button: "Yes, disable " + m.Name,
			Cancel: modulePath(m.Name),
			Keep:   []templates.HiddenField{{Name: form.ModuleEnabled, Value: "false"}},
		})
		if !ok {
			return err
		}
	}
	ctx, cancel := withTimeout(c, moduleActionTimeout)
	defer cancel()
	if err := s.opts.Host.SetEnabled(ctx, m.Name, f.Enabled, actor(c)); err != nil {
		return fmt.Errorf("admin: toggle module: %w", err)
	}
	flash := flashModuleDisabled
	if f.Enabled {
		flash = flashModuleEnabled
	}
	s.setFlash(c, flash)
	return c.Redirect(http.StatusSeeOther, "/modules")
}
