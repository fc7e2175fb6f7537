package admin

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
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
	f := form.ParseSetup(c.Request())
	if errs := f.Validate(); !errs.OK() {
		if err := s.opts.Auth.CheckSetupToken(ctx, f.Token); err != nil {
			return s.setupFailed(c, f.Token, err)
		}
		view := s.setupFormView(f.Token, f.Username)
		view.Errors = errs
		return render(c, http.StatusUnprocessableEntity, templates.SetupPage(s.chrome(c, "Set up", ""), view))
	}
	issued, err := s.opts.Auth.CompleteSetup(ctx, f.Token, f.Username, f.Password, clientMeta(c))
	if err != nil {
		return s.setupFailed(c, f.Token, err)
	}
	s.setSessionCookie(c, issued)
	s.rememberDevice(c, issued.Username)
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
