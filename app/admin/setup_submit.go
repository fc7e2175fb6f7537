package admin

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/web/templates"
)

// setupSubmit burns the token, creates the admin and signs them in.
func (s *Server) setupSubmit(c echo.Context) error {
	if err := s.spendAttempt(c, ""); err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 15*time.Second)
	defer cancel()
	token := c.FormValue("token")
	username := c.FormValue("username")
	password := c.FormValue("password")
	// The set-up contract is username + password; the browser form adds a
	// confirm field, checked whenever it is sent (an empty one is a mismatch).
	_, hasConfirm := c.Request().PostForm["confirm"]
	confirm := c.FormValue("confirm")

	view := s.setupFormView(token, username)
	if err := auth.ValidateUsername(username); err != nil {
		view.Errors["username"] = userMessage(err)
	}
	if err := auth.ValidatePassword(username, password); err != nil {
		view.Errors["password"] = userMessage(err)
	} else if hasConfirm && password != confirm {
		view.Errors["confirm"] = userMessage(auth.ErrPasswordsDoNotMatch)
	}
	if len(view.Errors) > 0 {
		if err := s.opts.Auth.CheckSetupToken(ctx, token); err != nil {
			return s.setupFailed(c, token, err)
		}
		return render(c, http.StatusUnprocessableEntity, templates.SetupPage(s.chrome(c, "Set up", ""), view))
	}
	issued, err := s.opts.Auth.CompleteSetup(ctx, token, username, password, clientMeta(c))
	if err != nil {
		return s.setupFailed(c, token, err)
	}
	s.setSessionCookie(c, issued)
	s.clearCookie(c, csrfCookie)
	s.setFlash(c, flashWelcome)
	return c.Redirect(http.StatusSeeOther, "/")
}

func (s *Server) setupFailed(c echo.Context, token string, err error) error {
	switch {
	case errors.Is(err, auth.ErrAdminExists):
		return c.Redirect(http.StatusSeeOther, "/login")
	case errors.Is(err, auth.ErrInvalidSetupToken):
		if token == "" {
			token = "-" // a POST without a token is an invalid token, not a missing link
		}
		return s.renderSetupBlocked(c, token)
	}
	return err
}
