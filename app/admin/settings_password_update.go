package admin

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/auth"
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
	current := c.FormValue("current_password")
	next := c.FormValue("new_password")
	confirm := c.FormValue("confirm_password")
	errs := map[string]string{}
	if current == "" {
		errs["current_password"] = "Enter your current password."
	}
	if err := auth.ValidatePassword(sess.Username, next); err != nil {
		errs["new_password"] = userMessage(err)
	} else if next != confirm {
		errs["confirm_password"] = userMessage(auth.ErrPasswordsDoNotMatch)
	}
	if len(errs) > 0 {
		return s.renderSettings(c, http.StatusUnprocessableEntity, errs)
	}
	issued, err := s.opts.Auth.ChangePassword(ctx, *sess, current, next, clientMeta(c))
	switch {
	case errors.Is(err, auth.ErrCurrentPasswordBad):
		return s.renderSettings(c, http.StatusUnprocessableEntity,
			map[string]string{"current_password": userMessage(err)})
	case auth.IsPasswordRuleError(err):
		return s.renderSettings(c, http.StatusUnprocessableEntity, map[string]string{"new_password": userMessage(err)})
	case err != nil:
		return err
	}
	s.setSessionCookie(c, issued)
	s.setFlash(c, flashPasswordChanged)
	return c.Redirect(http.StatusSeeOther, "/settings")
}
