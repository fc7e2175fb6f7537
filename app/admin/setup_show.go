package admin

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/web/templates"
)

// setupForm shows the first-run form for a live token, explains what to do
// without one, and is gone (redirect to sign-in) once an admin exists.
func (s *Server) setupForm(c echo.Context) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	token := c.QueryParam("token")
	// The answer tells whether a token is live, so a guess spends the
	// sign-in budget like a post does (the help page without one is free).
	if token != "" {
		if err := s.spendAttempt(c, ""); err != nil {
			return err
		}
	}
	err := s.opts.Auth.CheckSetupToken(ctx, token)
	switch {
	case errors.Is(err, auth.ErrAdminExists):
		return c.Redirect(http.StatusSeeOther, "/login")
	case errors.Is(err, auth.ErrInvalidSetupToken):
		return s.renderSetupBlocked(c, token)
	case err != nil:
		return err
	}
	return render(c, http.StatusOK, templates.SetupPage(s.chrome(c, "Set up", ""), s.setupFormView(token, "")))
}

func (s *Server) renderSetupBlocked(c echo.Context, token string) error {
	reason, status := "invalid", http.StatusForbidden
	if token == "" {
		reason, status = "missing", http.StatusOK
	}
	return render(c, status, templates.SetupBlockedPage(s.chrome(c, "Set up", ""), templates.SetupBlocked{Reason: reason}))
}

func (s *Server) setupFormView(token, username string) templates.SetupForm {
	return templates.SetupForm{
		Token: token, Username: username,
		MinLen: auth.MinPasswordLength, MaxBytes: auth.MaxPasswordBytes,
	}
}
