package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// modulesList is /modules: every compiled-in module with its state, health,
// key metrics and enable/disable form, and "Restart modules".
func (s *Server) modulesList(c echo.Context) error {
	return render(c, http.StatusOK, templates.ModulesPage(s.chrome(c, "Modules", "modules"), s.modulesView()))
}
