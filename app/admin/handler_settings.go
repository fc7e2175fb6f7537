package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/web/templates"
)

// settings shows the password form, active sessions and the backup button.
func (s *Server) settings(c echo.Context) error {
	return s.renderSettings(c, http.StatusOK, nil)
}

func (s *Server) renderSettings(c echo.Context, status int, pwErrors map[string]string) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	sess := sessionOf(c)
	v := templates.SettingsView{
		Username: sess.Username, PasswordErrors: pwErrors,
		MinLen: auth.MinPasswordLength, MaxBytes: auth.MaxPasswordBytes,
	}
	if v.PasswordErrors == nil {
		v.PasswordErrors = map[string]string{}
	}
	list, err := s.opts.Auth.ListSessions(ctx, sess.AdminID)
	if err != nil {
		return fmt.Errorf("admin: settings: %w", err)
	}
	for _, l := range list {
		v.Sessions = append(v.Sessions, templates.SessionRow{
			Current: l.ID == sess.ID, Created: l.CreatedAt.UTC().Format("2006-01-02 15:04"),
			LastSeen: l.LastSeenAt.UTC().Format("2006-01-02 15:04"), IP: l.IP, UserAgent: l.UserAgent,
			Browser: summarizeUserAgent(l.UserAgent),
		})
	}
	if info, ok, err := s.status.lastBackup(ctx); err != nil {
		return fmt.Errorf("admin: settings: %w", err)
	} else if ok {
		v.LastBackup = info.At.UTC().Format("2006-01-02 15:04 UTC")
	}
	if n, err := s.status.dbSize(); err == nil {
		v.DBSize = humanBytes(n)
	}
	if v.Worldtree, err = s.worldtreeSettingsView(ctx, c); err != nil {
		return fmt.Errorf("admin: settings: %w", err)
	}
	return render(c, status, templates.SettingsPage(s.chrome(c, "Settings", "settings"), v))
}

// changePassword verifies the current password, sets the new one, signs out
// every other session and rotates this one.
func (s *Server) changePassword(c echo.Context) error {
	// Shares the sign-in budget: a stolen session must not become an oracle
	// for guessing the current password.
	if err := s.spendAttempt(c); err != nil {
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

// revokeSessions signs out every other session of this admin.
func (s *Server) revokeSessions(c echo.Context) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	if _, err := s.opts.Auth.RevokeOtherSessions(ctx, *sessionOf(c), clientMeta(c)); err != nil {
		return err
	}
	s.setFlash(c, flashSessionsRevoked)
	return c.Redirect(http.StatusSeeOther, "/settings")
}

// summarizeUserAgent turns a User-Agent header into "Browser on OS" for the
// session list; the full string stays available as a tooltip.
func summarizeUserAgent(ua string) string {
	if ua == "" {
		return "Unknown client"
	}
	browser := "Unknown browser"
	for _, b := range []struct{ token, name string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"Firefox/", "Firefox"}, {"HeadlessChrome/", "Headless Chrome"},
		{"Chromium/", "Chromium"}, {"Chrome/", "Chrome"}, {"Safari/", "Safari"}, {"curl/", "curl"}, {"Go-http-client", "Go client"},
	} {
		if strings.Contains(ua, b.token) {
			browser = b.name
			break
		}
	}
	for _, o := range []struct{ token, name string }{
		{"Android", "Android"}, {"iPhone", "iOS"}, {"iPad", "iPadOS"}, {"Windows", "Windows"},
		{"CrOS", "ChromeOS"}, {"Mac OS X", "macOS"}, {"Linux", "Linux"},
	} {
		if strings.Contains(ua, o.token) {
			return browser + " on " + o.name
		}
	}
	return browser
}
