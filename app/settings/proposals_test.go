package settings

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/store"
)

// TestProposalNotifications: off by default; each field's bad input is an
// *Error naming the field and changes nothing; the webhook URL is a secret
// setting, kept when left blank, never in the audit detail or printed.
func TestProposalNotifications(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	who := Actor{Name: "alice", IP: "127.0.0.1"}
	if n, err := LoadProposalNotifications(ctx, st); err != nil || n.Mode != NotifyOff {
		t.Fatalf("default = %+v, %v", n, err)
	}
	bad := []struct {
		mode, url, field string
	}{
		{"sms", "", FieldProposalNotify},
		{NotifyWebhook, "", FieldProposalWebhook},
		{NotifyWebhook, "http://hooks.example.com/x", FieldProposalWebhook},
		{NotifyWebhook, "https://127.0.0.1/x", FieldProposalWebhook},
		{NotifyWebhook, "https://192.168.1.2/x", FieldProposalWebhook},
		{NotifyWebhook, "https://localhost/x", FieldProposalWebhook},
		{NotifyWebhook, "https://u:p@hooks.example.com/x", FieldProposalWebhook},
		{NotifyWebhook, "https://" + strings.Repeat("a", MaxWebhookURLBytes), FieldProposalWebhook},
	}
	for _, b := range bad {
		err := SaveProposalNotifications(ctx, st, b.mode, b.url, who)
		var e *Error
		if !errors.As(err, &e) || e.Fields[b.field] == "" {
			t.Fatalf("Save(%q, %q) = %v, want a problem with %s", b.mode, b.url, err, b.field)
		}
	}
	if n, _ := LoadProposalNotifications(ctx, st); n.Mode != NotifyOff {
		t.Fatalf("a refused save changed the settings: %+v", n)
	}
	const hook = "https://hooks.example.com/x?token=s3cret"
	if err := SaveProposalNotifications(ctx, st, NotifyWebhook, hook, who); err != nil {
		t.Fatal(err)
	}
	if err := SaveProposalNotifications(ctx, st, NotifyDM, "", who); err != nil {
		t.Fatal(err)
	}
	if err := SaveProposalNotifications(ctx, st, NotifyWebhook, "", who); err != nil {
		t.Fatalf("webhook with the stored URL kept: %v", err)
	}
	n, _ := LoadProposalNotifications(ctx, st)
	if n.Mode != NotifyWebhook || n.WebhookURL != hook {
		t.Fatalf("stored = %+v", n)
	}
	if s := fmt.Sprintf("%v %#v %s", n, n, n); strings.Contains(s, "s3cret") {
		t.Fatalf("printed the webhook URL: %s", s)
	}
	var details string
	_ = st.Reader().QueryRow(`SELECT group_concat(detail, '|') FROM kimi_audit_log WHERE action = ?`, AuditActionProposalNotifications).Scan(&details)
	if strings.Count(details, "|") != 2 || strings.Contains(details, "s3cret") || !strings.Contains(details, "hooks.example.com") {
		t.Fatalf("audit details = %q", details)
	}
	var secret int
	_ = st.Reader().QueryRow(`SELECT secret FROM kimi_settings WHERE key = ?`, SettingProposalWebhook).Scan(&secret)
	if secret != 1 {
		t.Fatal("the webhook URL is not a secret setting")
	}
}
