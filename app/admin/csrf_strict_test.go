package admin

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestCSRFTokenOnlyFromBodyOrHeader: a token in the query string (it leaks
// into logs and Referer) is refused even when it is the right one; the form
// body and the X-CSRF-Token header work.
func TestCSRFTokenOnlyFromBodyOrHeader(t *testing.T) {
	tests := []struct {
		name  string
		query bool   // token in ?_csrf=
		field bool   // token in the form body
		head  bool   // token in X-CSRF-Token
		want  int    // status
		path  string // "" = /login
	}{
		{name: "query string only", query: true, want: http.StatusForbidden},
		{name: "form body", field: true, want: http.StatusSeeOther},
		{name: "header", head: true, want: http.StatusSeeOther},
		{name: "nowhere", want: http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.createAdmin()
			c := h.newClient()
			c.get("/login")
			tok := c.cookie(csrfCookie)
			path := "/login"
			if tt.query {
				path += "?" + url.Values{"_csrf": {tok}}.Encode()
			}
			form := url.Values{"username": {testUser}, "password": {testPassword}, "_csrf": {"-"}}
			if tt.field {
				form.Set("_csrf", tok)
			}
			var headers []string
			if tt.head {
				headers = []string{csrfHeader, tok}
			}
			wantStatus(t, c.post(path, form, headers...), tt.want)
		})
	}
}

// TestCSRFTokenShape: only tokens of the shape Kimi issues (crypto/rand.Text:
// 26 characters A-Z, 2-7) count. A planted one-character cookie with the
// same one-character field used to pass the double-submit check; a malformed
// cookie is replaced by a fresh token on the next page view.
func TestCSRFTokenShape(t *testing.T) {
	tests := []struct{ name, token string }{
		{"one character", "x"},
		{"twenty characters of another alphabet", "0123456789abcdef0123"},
		{"lower-case base32", "abcdefghijklmnopqrstuvwxyz"},
		{"27 characters", "ABCDEFGHIJKLMNOPQRSTUVWXYZA"},
		{"digit outside base32", "ABCDEFGHIJKLMNOPQRSTUVWXY1"},
	}
	shape := regexp.MustCompile(`\A[A-Z2-7]{26}\z`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.createAdmin()
			c := h.newClient()
			c.setCookie(csrfCookie, tt.token)
			res := c.post("/login", url.Values{"_csrf": {tt.token}, "username": {testUser}, "password": {testPassword}})
			wantStatus(t, res, http.StatusForbidden)

			// The refusal page itself may already have replaced the cookie.
			page := c.get("/login")
			wantStatus(t, page, http.StatusOK)
			issued := c.cookie(csrfCookie)
			if !shape.MatchString(issued) {
				t.Fatalf("GET /login with a malformed cookie issued %q, want a fresh rand.Text token", issued)
			}
			if c.csrf != issued || strings.Contains(page.body, `value="`+tt.token+`"`) {
				t.Fatalf("form carries %q, want the fresh token %q", c.csrf, issued)
			}
			wantStatus(t, c.post("/login", url.Values{"username": {testUser}, "password": {testPassword}}), http.StatusSeeOther)
		})
	}
}

// TestSessionCSRFTokenHasIssuedShape: the session's token, which checkCSRF
// now requires in the same shape, is what auth issues.
func TestSessionCSRFTokenHasIssuedShape(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	c.get("/settings")
	if !validCSRFToken(c.csrf) {
		t.Fatalf("session CSRF token %q is not of the issued shape", c.csrf)
	}
	wantStatus(t, c.post("/logout", nil), http.StatusSeeOther)
}
