package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// placeholderPage is a section that later work builds; until then it says
// what it will hold instead of being a broken link.
type placeholderPage struct {
	path, key string
	view      templates.Placeholder
}

// placeholders are the sections not built yet (none now: /tasks was the
// last); a new one lists itself here until its pages land.
var placeholders = []placeholderPage{}

func (s *Server) placeholder(p placeholderPage) echo.HandlerFunc {
	return func(c echo.Context) error {
		return render(c, http.StatusOK, templates.PlaceholderPage(s.chrome(c, p.view.Title, p.key), p.view))
	}
}
