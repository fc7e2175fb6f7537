package admin

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// resultsList is GET /results: every subscription grouped by module, then
// name and guild, with its notifications' counts by status, the oldest
// waiting one and the last error. The list is a live region
// (GET /results/events?view=list); its render is kept between changes
// (results_kept.go).
func (s *Server) resultsList(c echo.Context) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	list, err := s.resultsListHTML(ctx)
	if err != nil {
		return err
	}
	v := templates.ResultsView{Live: "/results/events?view=list", Region: rawRegion(list)}
	return render(c, http.StatusOK, templates.ResultsPage(s.chrome(c, "Results", "results"), v))
}
