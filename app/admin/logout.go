package admin

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// logout ends the session. When the store refuses the write (a full disk,
// another program's lock) the browser is signed out all the same: its
// cookie is cleared and the page and the log say that the session row
// stays until it expires.
func (s *Server) logout(c echo.Context) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	sess := *sessionOf(c)
	flash := flashSignedOut
	if err := s.opts.Auth.Logout(ctx, sess, clientMeta(c)); err != nil {
		if _, _, refused := s.writeRefusal(err); !refused {
			return err
		}
		s.log.WarnContext(ctx, "sign-out could not delete the session; it expires on its own",
			"err", err, "user", sess.Username, "expires_at", sess.ExpiresAt.UTC(), "request_id", requestIDOf(c))
		flash = flashSignedOutKept
	}
	s.clearCookie(c, sessionCookie)
	s.setFlash(c, flash)
	return c.Redirect(http.StatusSeeOther, "/login")
}
