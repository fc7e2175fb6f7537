package templates

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
	"golang.org/x/net/html"

	"github.com/kimiapp/kimi/app/admin/form"
)

func sampleChrome(user string) Chrome {
	return Chrome{
		Title: "Page", Active: "overview", User: user, CSRF: "csrf-token-123",
		Assets:  Assets{CSS: "/static/app.12345678.css", Icon: "/static/favicon.12345678.svg"},
		Version: "v1.0.0", Flashes: []Flash{{Kind: FlashSuccess, Message: "Saved <b>ok</b>"}},
	}
}

// pages renders every page with representative data, so the invariants
// below hold for all of them (and for pages added later to this list).
func pages() map[string]templ.Component {
	errs := map[string]string{"username": "Bad name", "password": "Too short", "confirm": "Mismatch"}
	return map[string]templ.Component{
		"setup":         SetupPage(sampleChrome(""), SetupForm{Token: "tok", Username: "x", Errors: errs, MinLen: 8, MaxBytes: 72}),
		"setup-missing": SetupBlockedPage(sampleChrome(""), SetupBlocked{Reason: "missing"}),
		"setup-invalid": SetupBlockedPage(sampleChrome(""), SetupBlocked{Reason: "invalid"}),
		"login":         LoginPage(sampleChrome(""), LoginForm{Username: "admin", Next: "/audit", Errors: form.Errors{form.FieldForm: "Invalid"}}),
		"overview": OverviewPage(sampleChrome("admin"), Overview{Version: "v1", StartedAt: time.Unix(0, 0), Uptime: "1h",
			DBPath: "/data/kimi.db", DBSize: "1 MiB", LastBackup: "yesterday", Discord: "not configured", ModuleCount: 1,
			Modules: []Module{{Name: "kudos", Version: "1.0.0"}}, SchemaVersion: "1"}),
		"overview-empty": OverviewPage(sampleChrome("admin"), Overview{Version: "v1", Discord: "not configured"}),
		"audit": AuditPage(sampleChrome("admin"), AuditView{
			Rows: []AuditRow{{ID: 1, At: "2026-01-01T00:00:00Z", AtExact: "2026-01-01 00:00:00 UTC", AtRelative: "yesterday",
				Attempted: "a", Action: AuditAction{ID: "auth.login_failed", Label: "Failed sign-in"}, Detail: "<script>x</script>", IP: "1.2.3.4"}},
			Actions: []AuditAction{{ID: "auth.login", Label: "Signed in"}, {ID: "auth.login_failed", Label: "Failed sign-in"}}, Action: "auth.login", Filtered: true, NextURL: "/audit?before=1", FirstURL: "/audit",
		}),
		"audit-empty":    AuditPage(sampleChrome("admin"), AuditView{}),
		"audit-filtered": AuditPage(sampleChrome("admin"), AuditView{Filtered: true}),
		"settings": SettingsPage(sampleChrome("admin"), SettingsView{Username: "admin", MinLen: 8, MaxBytes: 72,
			PasswordErrors: map[string]string{"new_password": "Too short"},
			Sessions:       []SessionRow{{Current: true, Browser: "Firefox on Linux"}, {Browser: "Chrome on Android", IP: "10.0.0.1"}}}),
		"placeholder": PlaceholderPage(sampleChrome("admin"), Placeholder{Title: "Tasks", Lead: "Soon", Features: []string{"a", "b"}, Hint: "h"}),
		"confirm": ConfirmPage(sampleChrome("admin"), ConfirmView{Title: "Remove it?", Message: "It goes.", Action: "/settings/x/remove",
			Button: "Yes, remove it", Cancel: "/settings", Keep: []HiddenField{{Name: "id", Value: "42"}}}),
		"error-in":  ErrorPage(sampleChrome("admin"), ErrorView{Status: 404, Title: "Not found", Message: "m", RequestID: "r1", SignedIn: true}),
		"error-out": ErrorPage(sampleChrome(""), ErrorView{Status: 429, Title: "Slow down", Message: "m"}),

		// Worldtree (samples in worldtree_test.go).
		"settings-worldtree": SettingsPage(sampleChrome("admin"), SettingsView{Username: "admin", MinLen: 8, MaxBytes: 72,
			Worldtree: sampleWorldtreeSettings()}),
		"worldtree":       WorldtreePage(sampleChrome("admin"), sampleWorldtreeView()),
		"worldtree-empty": WorldtreePage(sampleChrome("admin"), WorldtreeView{}),

		// Proposals (samples in proposals_test.go).
		"proposals":       ProposalsPage(sampleChrome("admin"), sampleProposalsView()),
		"proposals-empty": ProposalsPage(sampleChrome("admin"), ProposalsView{}),
		"proposal":        ProposalPage(sampleChrome("admin"), sampleProposalView()),
		"settings-proposal": SettingsPage(sampleChrome("admin"), SettingsView{Username: "admin", MinLen: 8, MaxBytes: 72,
			Proposals: ProposalNotifySettingsView{Available: true, Mode: "webhook", WebhookSet: true, WebhookHost: "hooks.example.org",
				Errors: form.Errors{form.FieldForm: "Not saved", form.ProposalNotifyWebhookURL: "Bad"}}}),
	}
}

func render(t *testing.T, c templ.Component) string {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	return buf.String()
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func walk(n *html.Node, fn func(*html.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

// TestPageInvariants checks what the server's security and accessibility
// rely on: no inline script or style (the CSP forbids them), a _csrf field in
// every POST form, labelled inputs, unique ids, escaped content.
func TestPageInvariants(t *testing.T) {
	for name, page := range pages() {
		t.Run(name, func(t *testing.T) {
			out := render(t, page)
			doc, err := html.Parse(strings.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out, "<!doctype html>") && !strings.HasPrefix(out, "<!DOCTYPE html>") {
				t.Error("missing doctype")
			}
			ids := map[string]bool{}
			labels := map[string]bool{}
			var inputs []*html.Node
			walk(doc, func(n *html.Node) {
				if n.Type != html.ElementNode {
					return
				}
				if n.Data == "script" || n.Data == "style" {
					t.Errorf("inline <%s> element (CSP forbids it)", n.Data)
				}
				for _, a := range n.Attr {
					if a.Key == "style" || strings.HasPrefix(a.Key, "on") {
						t.Errorf("<%s %s=…> is blocked by the CSP", n.Data, a.Key)
					}
				}
				if id, ok := attr(n, "id"); ok {
					if ids[id] {
						t.Errorf("duplicate id %q", id)
					}
					ids[id] = true
				}
				if n.Data == "label" {
					if f, ok := attr(n, "for"); ok {
						labels[f] = true
					}
				}
				if n.Data == "input" || n.Data == "select" {
					inputs = append(inputs, n)
				}
				if n.Data == "form" {
					if m, _ := attr(n, "method"); strings.EqualFold(m, "post") {
						found := false
						walk(n, func(c *html.Node) {
							if c.Type == html.ElementNode && c.Data == "input" {
								if nm, _ := attr(c, "name"); nm == "_csrf" {
									v, _ := attr(c, "value")
									found = v == "csrf-token-123"
								}
							}
						})
						if !found {
							action, _ := attr(n, "action")
							t.Errorf("POST form %q lacks the _csrf field", action)
						}
					}
				}
			})
			for _, in := range inputs {
				typ, _ := attr(in, "type")
				if typ == "hidden" || typ == "submit" {
					continue
				}
				if hidden, _ := attr(in, "aria-hidden"); hidden == "true" {
					continue
				}
				id, _ := attr(in, "id")
				if _, ok := attr(in, "aria-label"); !ok && !labels[id] {
					name, _ := attr(in, "name")
					t.Errorf("input %q has no label", name)
				}
			}
			if strings.Contains(out, "<script>x</script>") || strings.Contains(out, "<b>ok</b>") {
				t.Error("content is not escaped")
			}
		})
	}
}

func TestNavMarksActiveSection(t *testing.T) {
	for _, item := range Nav {
		c := sampleChrome("admin")
		c.Active = item.Key
		out := render(t, PlaceholderPage(c, Placeholder{Title: item.Label}))
		if n := strings.Count(out, `aria-current="page"`); n != 1 {
			t.Errorf("%s: %d items marked current, want 1", item.Key, n)
		}
		if !strings.Contains(out, `href="`+item.Href+`" class="nav-link is-active" aria-current="page"`) {
			t.Errorf("%s: active link not marked", item.Key)
		}
	}
}

func TestFieldWiring(t *testing.T) {
	tests := []struct {
		name  string
		field Field
		want  []string
		not   []string
	}{
		{"plain", Field{ID: "f", Name: "n", Label: "L"}, []string{`type="text"`, `for="f"`}, []string{"aria-invalid", "aria-describedby"}},
		{"hint", Field{ID: "f", Name: "n", Label: "L", Hint: "help"}, []string{`aria-describedby="f-desc"`, "help"}, []string{"aria-invalid"}},
		{"error hides hint", Field{ID: "f", Name: "n", Label: "L", Hint: "help", Error: "bad"},
			[]string{`aria-invalid="true"`, `class="field has-error"`, "bad"}, []string{"help"}},
		{"password never echoes", Field{ID: "p", Name: "password", Label: "P", Type: "password", Required: true, MinLength: 8},
			[]string{`type="password"`, "required", `minlength="8"`}, []string{"value="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := render(t, FormField(tt.field))
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q in %s", w, out)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("has %q in %s", n, out)
				}
			}
		})
	}
}

// TestConfirmPagePostsTheSameFormConfirmed: the confirmation page's one form
// posts back to the action with the CSRF token, the kept fields and
// confirm=yes; Cancel is a plain link, not a form.
func TestConfirmPagePostsTheSameFormConfirmed(t *testing.T) {
	out := render(t, pages()["confirm"])
	for _, want := range []string{
		`<form method="post" action="/settings/x/remove"`,
		`name="_csrf" value="csrf-token-123"`,
		`name="id" value="42"`,
		`name="` + form.FieldConfirm + `" value="` + form.ConfirmYes + `"`,
		`data-testid="confirm-yes">Yes, remove it</button>`,
		`<a href="/settings" class="btn btn-secondary" data-testid="confirm-cancel">Cancel</a>`,
		"It goes.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("confirm page lacks %q", want)
		}
	}
	if n := strings.Count(out, `action="/settings/x/remove"`); n != 1 {
		t.Errorf("confirm page has %d forms posting the action, want 1", n)
	}
}
