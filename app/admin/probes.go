package admin

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/store"
)

// healthz answers while the process serves HTTP (liveness).
func (s *Server) healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// Startup is serve's progress (*lifecycle.Runner): the parts still
// starting and whether shutdown began.
type Startup interface {
	Starting() []string
	Closing() bool
}

// startupBody is /readyz's JSON answer while parts start or after shutdown
// began.
type startupBody struct {
	Starting []string `json:"starting,omitempty"`
	Stopping bool     `json:"stopping,omitempty"`
}

// readyz answers 200 when every part of the appliance has started and the
// database is reachable and fully migrated, else 503 with the reason
// (readiness): {"starting": ["modules"]} while parts start,
// {"stopping": true} once shutdown began, "the disk is full" while the
// store's last write failed for lack of space. The probe is public, so the
// reason is one of a fixed few; the underlying error goes to the log only.
func (s *Server) readyz(c echo.Context) error {
	if su := s.opts.Startup; su != nil {
		if su.Closing() {
			return c.JSON(http.StatusServiceUnavailable, startupBody{Stopping: true})
		}
		if parts := su.Starting(); len(parts) > 0 {
			return c.JSON(http.StatusServiceUnavailable, startupBody{Starting: parts})
		}
	}
	ctx, cancel := withTimeout(c, 2*time.Second)
	defer cancel()
	if err := s.opts.Store.Ready(ctx); err != nil {
		s.log.Warn("not ready", "err", err, "request_id", requestIDOf(c))
		reason := "the database is unavailable (see the server log)"
		if errors.Is(err, store.ErrNotMigrated) {
			reason = "the database has pending migrations"
		}
		return c.String(http.StatusServiceUnavailable, "not ready: "+reason+"\n")
	}
	if !s.opts.Store.WriteHealth().DiskFullSince.IsZero() {
		return c.String(http.StatusServiceUnavailable, "not ready: the last write failed: the disk is full\n")
	}
	if s.opts.Scheduler != nil {
		st, err := s.opts.Scheduler.Status(ctx)
		if err != nil {
			s.log.Warn("scheduler status unavailable", "err", err, "request_id", requestIDOf(c))
		} else if st.Standby {
			return c.String(http.StatusOK, readyStandby)
		}
	}
	return c.String(http.StatusOK, "ready\n")
}
