package admin

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/store"
)

// testAssistantConnection is POST /assistant/test: each backend is checked
// (GET /models, then a one-token completion offering one trivial tool),
// an audit row records the outcome (the step and scrubbed reason, never a
// key), and the page shows the report in its live region.
func (s *Server) testAssistantConnection(c echo.Context) error {
	ctx, cancel := withTimeout(c, assistantTestTimeout)
	defer cancel()
	rep := s.opts.Assistant.TestConnection(ctx)
	var parts []string
	for _, p := range rep.Probes {
		if p.OK {
			parts = append(parts, p.Backend+" passed ("+p.Model+")")
			continue
		}
		parts = append(parts, p.Backend+" failed at the "+p.FailedStep+": "+p.Reason)
	}
	actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer acancel()
	if err := s.opts.Store.Audit(actx, store.AuditEntry{Actor: actor(c), Action: ActionAssistantTest, Target: "assistant",
		Detail: clip(strings.Join(parts, "; "), 1000), IP: c.RealIP()}); err != nil {
		return fmt.Errorf("admin: test assistant connection: %w", err)
	}
	return c.Redirect(http.StatusSeeOther, "/assistant#test")
}
