package admin

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/web/templates"
)

// loginForm shows the sign-in form (or goes on to ?next= when already
// signed in).
func (s *Server) loginForm(c echo.Context) error {
	next := localRedirect(c.QueryParam("next"))
	if sessionOf(c) != nil {
		return c.Redirect(http.StatusSeeOther, next)
	}
	ch := s.chrome(c, "Sign in", "")
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	has, err := s.opts.Auth.HasAdmin(ctx)
	if err != nil {
		return err
	}
	if !has {
		ch.Flashes = append(ch.Flashes, templates.Flash{Kind: templates.FlashInfo,
			Message: "No admin account exists yet. Open the set-up link that Kimi printed in its log to create one."})
	}
	return render(c, http.StatusOK, templates.LoginPage(ch, templates.LoginForm{Next: nextField(next)}))
}

func nextField(next string) string {
	if next == "/" {
		return ""
	}
	return next
}

// loginSubmit checks the credentials (rate-limited per IP) and starts a new
// session, replacing any session cookie the browser brought along.
func (s *Server) loginSubmit(c echo.Context) error {
	if err := s.spendAttempt(c); err != nil {
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
