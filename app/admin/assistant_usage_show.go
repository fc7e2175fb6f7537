package admin

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/assistant"

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
	var names []string // id, name, id, name, … of the guilds the bot knows by name
	if s.opts.Discord != nil {
		for _, g := range s.opts.Discord.Status().Guilds {
			if g.Name != "" {
				names = append(names, g.ID, g.Name)
			}
		}
	}
	body, err := s.usageBody.get(r, names)
	if err != nil {
		return fmt.Errorf("admin: assistant usage: %w", err)
	}
	if err := render(c, http.StatusOK, templates.AssistantUsagePage(s.chrome(c, "Assistant usage", "assistant"), templ.Raw(body))); err != nil {
		return fmt.Errorf("admin: assistant usage: %w", err)
	}
	return nil
}

// usageBodyCache keeps the usage page's body as rendered from one report
// (its Stamp) and the guilds' names, so a request while neither changed
// renders only the chrome around it.
type usageBodyCache struct {
	mu    sync.Mutex
	stamp string
	names []string
	html  string
}

// get returns the body of r with the guilds' names (id, name pairs),
// rendering it when either differs from the last one's.
func (u *usageBodyCache) get(r assistant.UsageReport, names []string) (string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.html != "" && u.stamp == r.Stamp && r.Stamp != "" && slices.Equal(u.names, names) {
		return u.html, nil
	}
	byID := make(map[string]string, len(names)/2)
	for i := 0; i+1 < len(names); i += 2 {
		byID[names[i]] = names[i+1]
	}
	var b bytes.Buffer
	if err := templates.AssistantUsageBody(assistantUsageView(r, byID)).Render(context.Background(), &b); err != nil {
		return "", err
	}
	u.stamp, u.names, u.html = r.Stamp, names, b.String()
	return u.html, nil
}
