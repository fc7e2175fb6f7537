package admin

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/web/templates"
)

// loginSubmit checks the credentials (rate-limited per IP) and starts a new
// session, replacing any session cookie the browser brought along.
func (s *Server) loginSubmit(c echo.Context) error {
	if err := s.spendAttempt(c, c.FormValue("username")); err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 15*time.Second)
	defer cancel()
	username := c.FormValue("username")
	password := c.FormValue("password")
	next := localRedirect(c.FormValue("next"))
	var old string
	if ck, err := c.Cookie(sessionCookie); err == nil {
		old = ck.Value
	}
	issued, err := s.opts.Auth.Login(ctx, username, password, clientMeta(c), old)
	if errors.Is(err, auth.ErrInvalidCredentials) {
		form := templates.LoginForm{Username: username, Next: nextField(next), Error: "Invalid username or password."}
		return render(c, http.StatusUnauthorized, templates.LoginPage(s.chrome(c, "Sign in", ""), form))
	}
	if err != nil {
		return err
	}
	s.setSessionCookie(c, issued)
	s.clearCookie(c, csrfCookie)
	return c.Redirect(http.StatusSeeOther, next)
}
