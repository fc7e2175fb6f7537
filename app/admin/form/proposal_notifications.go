package form

import (
	"net/http"
	"net/url"
	"strings"
)

// Field names of the proposal-notification form (POST
// /settings/proposals), shared by proposals_settings.templ and the save
// handler.
const (
	ProposalNotifyMode       = "proposal_notify"
	ProposalNotifyWebhookURL = "proposal_webhook_url"
)

// The notification modes (settings.NotifyOff, NotifyDM, NotifyWebhook):
// none, a Discord DM to the owner, or a POST to a webhook URL.
const (
	ProposalNotifyOff     = "off"
	ProposalNotifyDM      = "dm"
	ProposalNotifyWebhook = "webhook"
)

// Messages of a refused notification form.
const (
	MsgProposalNotifyMode       = "Choose off, a DM to the owner, or a webhook."
	MsgProposalNotifyWebhook    = "Enter the webhook's address: an absolute https:// URL without a user name or password, at most 2000 characters."
	MsgProposalNotifyWebhookNew = "Enter the webhook's address: no webhook URL is stored yet."
	MsgProposalNotifyNotSaved   = "The proposal notifications were not saved. Correct the fields marked below."
)

// ProposalNotifications is the submitted notification form. A blank
// webhook URL keeps the stored one (it is a secret and never shown again).
type ProposalNotifications struct {
	Mode       string
	WebhookURL string
}

// ParseProposalNotifications reads the form from r.
func ParseProposalNotifications(r *http.Request) ProposalNotifications {
	return ProposalNotifications{Mode: strings.TrimSpace(value(r, ProposalNotifyMode)),
		WebhookURL: strings.TrimSpace(value(r, ProposalNotifyWebhookURL))}
}

// Validate checks the form on its own; webhookStored says whether a URL is
// stored (a blank field keeps it). The egress rules (which hosts a webhook
// may reach) are the settings' to judge on save.
func (f ProposalNotifications) Validate(webhookStored bool) Errors {
	var e Errors
	switch f.Mode {
	case ProposalNotifyOff, ProposalNotifyDM:
		if f.WebhookURL != "" && !webhookURLValid(f.WebhookURL) {
			e.Add(ProposalNotifyWebhookURL, MsgProposalNotifyWebhook)
		}
	case ProposalNotifyWebhook:
		switch {
		case f.WebhookURL == "" && !webhookStored:
			e.Add(ProposalNotifyWebhookURL, MsgProposalNotifyWebhookNew)
		case f.WebhookURL != "" && !webhookURLValid(f.WebhookURL):
			e.Add(ProposalNotifyWebhookURL, MsgProposalNotifyWebhook)
		}
	default:
		e.Add(ProposalNotifyMode, MsgProposalNotifyMode)
	}
	if !e.OK() {
		e.Add(FieldForm, MsgProposalNotifyNotSaved)
	}
	return e
}

func webhookURLValid(raw string) bool {
	if len(raw) > 2000 || strings.ContainsAny(raw, " \t\r\n") {
		return false
	}
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil && u.Opaque == ""
}

// ProposalNotifyErrors maps a refusal keyed by field name (the settings'
// *Error fields, named as this form's fields) onto the form.
func ProposalNotifyErrors(fields map[string]string) Errors {
	if len(fields) == 0 {
		return nil
	}
	var e Errors
	for field, msg := range fields {
		switch field {
		case ProposalNotifyMode, ProposalNotifyWebhookURL:
			e.Add(field, msg)
		default:
			e.Add(FieldForm, msg)
		}
	}
	e.Add(FieldForm, MsgProposalNotifyNotSaved)
	return e
}
