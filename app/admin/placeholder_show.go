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

var placeholders = []placeholderPage{
	{path: "/tasks", key: "tasks", view: templates.Placeholder{
		Title: "Tasks", Lead: "Scheduled work and its runs.",
		Features: []string{
			"Scheduled tasks with their next and last run",
			"Run history with duration and outcome",
			"Run a task now, pause or resume it",
		},
	}},
}

func (s *Server) placeholder(p placeholderPage) echo.HandlerFunc {
	return func(c echo.Context) error {
		return render(c, http.StatusOK, templates.PlaceholderPage(s.chrome(c, p.view.Title, p.key), p.view))
	}
}
