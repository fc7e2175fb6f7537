package admin

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// revokeSessions signs out every other session of this admin, once the
// confirmation page has been answered.
func (s *Server) revokeSessions(c echo.Context) error {
	if ok, err := s.confirm(c, "settings", confirmRevokeSessions); !ok {
		return err
	}
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	if _, err := s.opts.Auth.RevokeOtherSessions(ctx, *sessionOf(c), clientMeta(c)); err != nil {
		return err
	}
	s.setFlash(c, flashSessionsRevoked)
	return c.Redirect(http.StatusSeeOther, "/settings")
}
