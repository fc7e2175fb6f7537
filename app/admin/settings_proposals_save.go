package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// ProposalNotify is how the owner hears of a new proposal: Mode is
// form.ProposalNotifyOff, ProposalNotifyDM or ProposalNotifyWebhook;
// WebhookURL (a secret: it carries the hook's token) is kept while another
// mode is chosen.
type ProposalNotify struct {
	Mode       string
	WebhookURL string
}

// ProposalNotifySettings reads and stores the proposal notifications
// (app/serve.go passes the proposals service's settings). Save refuses what
// a person must correct with a *settings.Error keyed by the form's field
// names (a webhook host the egress rules forbid) and audits the change.
type ProposalNotifySettings interface {
	LoadProposalNotify(ctx context.Context) (ProposalNotify, error)
	SaveProposalNotify(ctx context.Context, n ProposalNotify, who settings.Actor) error
}

// proposalNotifyFormKey carries a refused form into renderSettings.
const proposalNotifyFormKey = "admin.proposal_notify_form"

// proposalNotifyView is the settings page's proposal-notification card.
func (s *Server) proposalNotifyView(ctx context.Context, c echo.Context) (templates.ProposalNotifySettingsView, error) {
	if v, ok := c.Get(proposalNotifyFormKey).(templates.ProposalNotifySettingsView); ok {
		return v, nil
	}
	if s.opts.ProposalNotify == nil {
		return templates.ProposalNotifySettingsView{}, nil
	}
	n, err := s.opts.ProposalNotify.LoadProposalNotify(ctx)
	if err != nil {
		return templates.ProposalNotifySettingsView{}, err
	}
	return storedProposalNotifyView(n), nil
}

func storedProposalNotifyView(n ProposalNotify) templates.ProposalNotifySettingsView {
	v := templates.ProposalNotifySettingsView{Available: true, Mode: n.Mode, WebhookSet: n.WebhookURL != ""}
	if u, err := url.Parse(n.WebhookURL); err == nil && v.WebhookSet {
		v.WebhookHost = u.Hostname() // never the path or query: they hold the token
	}
	return v
}

// saveProposalNotifications is POST /settings/proposals: off, a DM to the
// guild's owner, or a webhook URL (blank keeps the stored one). Refused
// input re-renders the settings page with the choice kept, the URL never
// echoed, and nothing stored.
func (s *Server) saveProposalNotifications(c echo.Context) error {
	if s.opts.ProposalNotify == nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "The proposals service is not running in this server.")
	}
	ctx, cancel := withTimeout(c, 10*time.Second)
	defer cancel()
	stored, err := s.opts.ProposalNotify.LoadProposalNotify(ctx)
	if err != nil {
		return fmt.Errorf("admin: save proposal notifications: %w", err)
	}
	f := form.ParseProposalNotifications(c.Request())
	errs := f.Validate(stored.WebhookURL != "")
	if errs.OK() {
		next := ProposalNotify{Mode: f.Mode, WebhookURL: stored.WebhookURL}
		if f.WebhookURL != "" {
			next.WebhookURL = f.WebhookURL
		}
		err := s.opts.ProposalNotify.SaveProposalNotify(ctx, next, settings.Actor{Name: sessionOf(c).Username, IP: c.RealIP()})
		var refused *settings.Error
		switch {
		case err == nil:
			s.setFlash(c, flashProposalNotifySaved)
			return c.Redirect(http.StatusSeeOther, "/settings#proposal-notifications")
		case errors.As(err, &refused):
			errs = form.ProposalNotifyErrors(refused.Fields)
		default:
			return fmt.Errorf("admin: save proposal notifications: %w", err)
		}
	}
	v := storedProposalNotifyView(stored)
	v.Mode, v.Errors = f.Mode, errs
	c.Set(proposalNotifyFormKey, v)
	return s.renderSettings(c, http.StatusUnprocessableEntity, nil)
}
