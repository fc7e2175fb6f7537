package settings

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"

	"github.com/kimiapp/kimi/app/store"
)

// Keys of the proposal notification settings. The webhook URL is a secret
// setting: webhook URLs usually carry their own token.
const (
	SettingProposalNotify  = "proposals.notify"
	SettingProposalWebhook = "proposals.notify.webhook_url"
)

// AuditActionProposalNotifications is the audit action of a change to the
// proposal notifications; its detail never holds the webhook URL.
const AuditActionProposalNotifications = "settings.proposal_notifications"

// Field names of the proposal notification settings (Error.Fields keys and
// the /settings form's field names).
const (
	FieldProposalNotify  = "proposal_notify"
	FieldProposalWebhook = "proposal_webhook_url"
)

// Notification modes: off (the default), a DM to the owner, or a JSON POST
// to a webhook URL.
const (
	NotifyOff     = "off"
	NotifyDM      = "dm"
	NotifyWebhook = "webhook"
)

// MaxWebhookURLBytes bounds the webhook URL.
const MaxWebhookURLBytes = 2048

// ProposalNotifications says whether and how the owner hears of a new
// proposal. The webhook URL is a secret: printed with %v or slog it shows
// only its host.
type ProposalNotifications struct {
	Mode       string // NotifyOff, NotifyDM or NotifyWebhook
	WebhookURL string
}

// WebhookHost is the webhook URL's host ("" when none), what a page shows
// instead of the URL.
func (n ProposalNotifications) WebhookHost() string {
	u, err := url.Parse(n.WebhookURL)
	if err != nil || n.WebhookURL == "" {
		return ""
	}
	return u.Host
}

// String describes the settings without the webhook URL.
func (n ProposalNotifications) String() string {
	return fmt.Sprintf("settings.ProposalNotifications{mode: %s, webhook host: %q}", n.Mode, n.WebhookHost())
}

// GoString is String.
func (n ProposalNotifications) GoString() string { return n.String() }

// LogValue keeps the webhook URL out of slog output.
func (n ProposalNotifications) LogValue() slog.Value {
	return slog.GroupValue(slog.String("mode", n.Mode), slog.String("webhook_host", n.WebhookHost()))
}

var (
	_ fmt.Stringer   = ProposalNotifications{}
	_ fmt.GoStringer = ProposalNotifications{}
	_ slog.LogValuer = ProposalNotifications{}
)

// WebhookURLProblem returns a sentence for a webhook URL Kimi would not
// post to, or "": https only, a host name or public address (the egress
// rules refuse private and loopback addresses again when connecting), no
// credentials in the URL.
func WebhookURLProblem(raw string) string {
	if raw == "" {
		return "Enter the webhook URL (https://…)."
	}
	if len(raw) > MaxWebhookURLBytes {
		return fmt.Sprintf("The URL is longer than %d bytes.", MaxWebhookURLBytes)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "This is not a URL."
	case u.Scheme != "https":
		return "The webhook URL must start with https://."
	case u.Hostname() == "":
		return "The webhook URL has no host."
	case u.User != nil:
		return "Put no user name or password in the URL."
	case u.Fragment != "":
		return "The webhook URL must not have a #fragment."
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "The webhook must be on a public host, not this machine."
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if !addr.IsGlobalUnicast() || addr.IsPrivate() || addr.IsLoopback() {
			return "The webhook must be on a public address, not a private, loopback or link-local one."
		}
	}
	return ""
}

// LoadProposalNotifications reads the stored settings; nothing stored is
// NotifyOff.
func LoadProposalNotifications(ctx context.Context, st Store) (ProposalNotifications, error) {
	n, err := readProposalNotifications(ctx, st.Reader())
	if err != nil {
		return ProposalNotifications{}, fmt.Errorf("settings: load proposal notifications: %w", err)
	}
	return n, nil
}

func readProposalNotifications(ctx context.Context, q querier) (ProposalNotifications, error) {
	rows, err := q.QueryContext(ctx, `SELECT key, value FROM kimi_settings WHERE key IN (?, ?)`, SettingProposalNotify, SettingProposalWebhook)
	if err != nil {
		return ProposalNotifications{}, err
	}
	defer rows.Close()
	n := ProposalNotifications{Mode: NotifyOff}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return ProposalNotifications{}, err
		}
		switch k {
		case SettingProposalNotify:
			if v == NotifyDM || v == NotifyWebhook {
				n.Mode = v
			}
		case SettingProposalWebhook:
			n.WebhookURL = v
		}
	}
	return n, rows.Err()
}

// SaveProposalNotifications stores the mode and, when webhookURL is not
// blank, the webhook URL (blank keeps the stored one), with an audit row.
// Invalid input returns an *Error keyed by FieldProposalNotify and
// FieldProposalWebhook and changes nothing.
func SaveProposalNotifications(ctx context.Context, st Store, mode, webhookURL string, who Actor) error {
	mode, webhookURL = strings.TrimSpace(mode), strings.TrimSpace(webhookURL)
	problems := map[string]string{}
	switch mode {
	case NotifyOff, NotifyDM, NotifyWebhook:
	default:
		problems[FieldProposalNotify] = "Choose off, a Discord DM to the owner, or a webhook."
	}
	if webhookURL != "" {
		if msg := WebhookURLProblem(webhookURL); msg != "" {
			problems[FieldProposalWebhook] = msg
		}
	}
	if len(problems) > 0 {
		return &Error{Fields: problems}
	}
	err := st.Write(ctx, func(tx *sql.Tx) error {
		cur, err := readProposalNotifications(ctx, tx)
		if err != nil {
			return fmt.Errorf("read settings: %w", err)
		}
		if mode == NotifyWebhook && webhookURL == "" && cur.WebhookURL == "" {
			return &Error{Fields: map[string]string{FieldProposalWebhook: WebhookURLProblem("")}}
		}
		if err := store.SetSettingTx(ctx, tx, SettingProposalNotify, mode); err != nil {
			return err
		}
		detail := "notify " + mode
		if webhookURL != "" {
			if err := store.SetSecretSettingTx(ctx, tx, SettingProposalWebhook, webhookURL); err != nil {
				return err
			}
			detail += ", webhook set (host " + (ProposalNotifications{WebhookURL: webhookURL}).WebhookHost() + ")"
		}
		return store.AuditTx(ctx, tx, store.AuditEntry{Actor: who.Name, Action: AuditActionProposalNotifications, Target: "proposals", Detail: detail, IP: who.IP})
	})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		return fmt.Errorf("settings: save proposal notifications: %w", err)
	}
	return nil
}
