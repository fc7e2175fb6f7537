package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// proposalNotifyFormKey carries a refused form into renderSettings.
const proposalNotifyFormKey = "admin.proposal_notify_form"

// proposalNotifyView is the settings page's proposal-notification card.
func (s *Server) proposalNotifyView(ctx context.Context, c echo.Context) (templates.ProposalNotifySettingsView, error) {
	if v, ok := c.Get(proposalNotifyFormKey).(templates.ProposalNotifySettingsView); ok {
		return v, nil
	}
	if s.opts.Proposals == nil {
		return templates.ProposalNotifySettingsView{}, nil
	}
	n, err := settings.LoadProposalNotifications(ctx, s.opts.Store)
	if err != nil {
		return templates.ProposalNotifySettingsView{}, err
	}
	return storedProposalNotifyView(n), nil
}

// storedProposalNotifyView shows the stored settings: the webhook only by
// its host (never the path or query: they hold the token).
func storedProposalNotifyView(n settings.ProposalNotifications) templates.ProposalNotifySettingsView {
	return templates.ProposalNotifySettingsView{Available: true, Mode: n.Mode, WebhookSet: n.WebhookURL != "", WebhookHost: n.WebhookHost()}
}

// saveProposalNotifications is POST /settings/proposals: off, a DM to the
// owner, or a webhook URL (blank keeps the stored one). Refused
// input re-renders the settings page with the choice kept, the URL never
// echoed, and nothing stored.
func (s *Server) saveProposalNotifications(c echo.Context) error {
	if s.opts.Proposals == nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "The proposals service is not running in this server.")
	}
	ctx, cancel := withTimeout(c, 10*time.Second)
	defer cancel()
	stored, err := settings.LoadProposalNotifications(ctx, s.opts.Store)
	if err != nil {
		return fmt.Errorf("admin: save proposal notifications: %w", err)
	}
	f := form.ParseProposalNotifications(c.Request())
	errs := f.Validate(stored.WebhookURL != "")
	status := http.StatusUnprocessableEntity
	if errs.OK() {
		// A blank URL keeps the stored one (the settings' rule too).
		err := settings.SaveProposalNotifications(ctx, s.opts.Store, f.Mode, f.WebhookURL, settings.Actor{Name: sessionOf(c).Username, IP: c.RealIP()})
		var refused *settings.Error
		formErrs, refusedStatus, writeRefused := s.refusedForm(c, err)
		switch {
		case err == nil:
			s.setFlash(c, flashProposalNotifySaved)
			return c.Redirect(http.StatusSeeOther, "/settings#proposal-notifications")
		case writeRefused:
			errs, status = formErrs, refusedStatus
		case errors.As(err, &refused):
			errs = form.ProposalNotifyErrors(refused.Fields)
		default:
			return fmt.Errorf("admin: save proposal notifications: %w", err)
		}
	}
	v := storedProposalNotifyView(stored)
	v.Mode, v.Errors = f.Mode, errs
	c.Set(proposalNotifyFormKey, v)
	return s.renderSettings(c, status, nil)
}
