package admin

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
)

// changePassword verifies the current password, sets the new one, signs out
// every other session and rotates this one.
func (s *Server) changePassword(c echo.Context) error {
	// Shares the sign-in budget: a stolen session must not become an oracle
	// for guessing the current password.
	if err := s.spendAttempt(c, sessionOf(c).Username); err != nil {
		return err
	}
	ctx, cancel := withTimeout(c, 15*time.Second)
	defer cancel()
	sess := sessionOf(c)
	f := form.ParsePasswordChange(c.Request(), sess.Username)
	if errs := f.Validate(); !errs.OK() {
		return s.renderSettings(c, http.StatusUnprocessableEntity, errs)
	}
	issued, err := s.opts.Auth.ChangePassword(ctx, *sess, f.Current, f.New, clientMeta(c))
	if errs := f.Refused(err); errs != nil {
		return s.renderSettings(c, http.StatusUnprocessableEntity, errs)
	}
	if err != nil {
		return err
	}
	s.setSessionCookie(c, issued)
	s.setFlash(c, flashPasswordChanged)
	return c.Redirect(http.StatusSeeOther, "/settings")
}
