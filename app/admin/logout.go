package admin

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// logout ends the session.
func (s *Server) logout(c echo.Context) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	if err := s.opts.Auth.Logout(ctx, *sessionOf(c), clientMeta(c)); err != nil {
		return err
	}
	s.clearCookie(c, sessionCookie)
	s.setFlash(c, flashSignedOut)
	return c.Redirect(http.StatusSeeOther, "/login")
}
