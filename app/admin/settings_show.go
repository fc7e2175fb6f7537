package admin

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/web/templates"
)

// settings shows the password form, active sessions and the backup button.
func (s *Server) settings(c echo.Context) error {
	return s.renderSettings(c, http.StatusOK, nil)
}

// renderSettings renders the settings page with status and the password
// form's errors (nil when there are none).
func (s *Server) renderSettings(c echo.Context, status int, pwErrors form.Errors) error {
	ctx, cancel := withTimeout(c, 5*time.Second)
	defer cancel()
	sess := sessionOf(c)
	v := templates.SettingsView{
		Username: sess.Username, PasswordErrors: pwErrors,
		MinLen: auth.MinPasswordLength, MaxBytes: auth.MaxPasswordBytes,
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
	if v.Proposals, err = s.proposalNotifyView(ctx, c); err != nil {
		return fmt.Errorf("admin: settings: %w", err)
	}
	return render(c, status, templates.SettingsPage(s.chrome(c, "Settings", "settings"), v))
}
