package admin

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// healthz answers while the process serves HTTP (liveness).
func (s *Server) healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// readyz answers 200 when the database is reachable and fully migrated,
// else 503 with the reason (readiness).
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := withTimeout(c, 2*time.Second)
	defer cancel()
	if err := s.opts.Store.Ready(ctx); err != nil {
		s.log.Warn("admin: not ready", "err", err)
		return c.String(http.StatusServiceUnavailable, "not ready: "+err.Error()+"\n")
	}
	return c.String(http.StatusOK, "ready\n")
}
