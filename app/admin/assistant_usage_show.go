package admin

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/web/templates"
)

// assistantUsageShow is GET /assistant/usage: the last 30 UTC days of the
// assistant's usage. Without the assistant's records it answers 503.
func (s *Server) assistantUsageShow(c echo.Context) error {
	if s.opts.Usage == nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "The assistant's usage records are not available on this server.")
	}
	ctx, cancel := withTimeout(c, assistantUsageTimeout)
	defer cancel()
	r, err := s.opts.Usage.UsageReport(ctx)
	if err != nil {
		return fmt.Errorf("admin: assistant usage: %w", err)
	}
	names := map[string]string{}
	if s.opts.Discord != nil {
		for _, g := range s.opts.Discord.Status().Guilds {
			if g.Name != "" {
				names[g.ID] = g.Name
			}
		}
	}
	v := assistantUsageView(r, names)
	if err := render(c, http.StatusOK, templates.AssistantUsagePage(s.chrome(c, "Assistant usage", "assistant"), v)); err != nil {
		return fmt.Errorf("admin: assistant usage: %w", err)
	}
	return nil
}
