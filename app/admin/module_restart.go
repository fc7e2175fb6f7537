package admin

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// confirmRestartAll asks before POST /modules/restart.
var confirmRestartAll = templates.ConfirmView{
	Title: "Restart every module?",
	Message: "Kimi closes every running module, reads the selection again and starts them anew, in-process. " +
		"Commands and tools are unavailable for the moment it takes; saved settings take effect.",
	Action: "/modules/restart",
	Button: "Yes, restart modules",
	Cancel: "/modules",
}

// restartModules restarts every module (POST /modules/restart), after a
// confirmation; the host writes the audit row.
func (s *Server) restartModules(c echo.Context) error {
	if ok, err := s.confirm(c, "modules", confirmRestartAll); !ok {
		return err
	}
	return s.restart(c, "", "/modules")
}

// restartModule restarts one module and its dependents
// (POST /modules/{name}/restart), after a confirmation.
func (s *Server) restartModule(c echo.Context) error {
	m, err := s.moduleParam(c)
	if err != nil {
		return err
	}
	ok, err := s.confirm(c, "modules", templates.ConfirmView{
		Title: "Restart " + m.Name + "?",
		Message: "Kimi closes " + m.Name + " and every module that depends on it and starts them again, in-process. " +
			"Its commands and tools are unavailable for the moment it takes; saved settings take effect.",
		Action: modulePath(m.Name) + "/restart",
		Button: "Yes, restart " + m.Name,
		Cancel: modulePath(m.Name),
	})
	if !ok {
		return err
	}
	return s.restart(c, m.Name, modulePath(m.Name))
}

func (s *Server) restart(c echo.Context, name, back string) error {
	ctx, cancel := withTimeout(c, moduleActionTimeout)
	defer cancel()
	if err := s.opts.Host.Restart(ctx, name, actor(c)); err != nil {
		return fmt.Errorf("admin: restart modules: %w", err)
	}
	s.setFlash(c, flashModuleRestarted)
	return c.Redirect(http.StatusSeeOther, back)
}
