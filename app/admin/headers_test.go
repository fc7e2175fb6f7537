package admin

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/store"
)

// TestSecurityHeadersOnEveryResponse: the hardening headers and the CSP are
// on every kind of response — pages, assets, probes, metrics and every
// error status — not only on rendered pages.
func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	// A budget of two: the sign-in below, then one wrong password.
	h := newHarness(t, func(o *Options) { o.LoginBurst = 2; o.LoginEvery = time.Hour })
	h.createAdmin()
	signedIn := h.newClient()
	signedIn.login(testUser, testPassword)
	anon := h.newClient()
	anon.get("/login")
	huge := url.Values{"username": {strings.Repeat("x", 2<<20)}}

	tests := []struct {
		name   string
		do     func() *response
		status int
	}{
		{"page", func() *response { return signedIn.get("/settings") }, http.StatusOK},
		{"hashed asset", func() *response { return anon.get(h.srv.assets.url("app.css")) }, http.StatusOK},
		{"unknown asset", func() *response { return anon.get("/static/nope.css") }, http.StatusNotFound},
		{"robots.txt", func() *response { return anon.get("/robots.txt") }, http.StatusOK},
		{"healthz", func() *response { return anon.get("/healthz") }, http.StatusOK},
		{"metrics with the bearer token", func() *response {
			return anon.get("/metrics", "Authorization", "Bearer metrics-secret-token")
		}, http.StatusOK},
		{"metrics with a session", func() *response { return signedIn.get("/metrics") }, http.StatusOK},
		{"metrics refused", func() *response { return anon.get("/metrics") }, http.StatusUnauthorized},
		{"unknown page", func() *response { return signedIn.get("/nope") }, http.StatusNotFound},
		{"redirect to sign-in", func() *response { return anon.get("/settings") }, http.StatusSeeOther},
		{"trailing-slash redirect", func() *response { return signedIn.get("/settings/") }, http.StatusMovedPermanently},
		{"missing CSRF token", func() *response {
			return signedIn.post("/logout", url.Values{"_csrf": {"-"}})
		}, http.StatusForbidden},
		{"cross-origin POST", func() *response {
			return signedIn.post("/logout", nil, "Sec-Fetch-Site", "cross-site")
		}, http.StatusForbidden},
		{"body too large", func() *response { return signedIn.post("/settings/sessions/revoke", huge) }, http.StatusRequestEntityTooLarge},
		{"bad audit cursor", func() *response { return signedIn.get("/audit?before=x") }, http.StatusBadRequest},
		{"wrong password", func() *response {
			return anon.post("/login", url.Values{"username": {testUser}, "password": {"wrong password"}})
		}, http.StatusUnauthorized},
		{"rate limited", func() *response {
			return anon.post("/login", url.Values{"username": {testUser}, "password": {"wrong password"}})
		}, http.StatusTooManyRequests},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.do()
			wantStatus(t, res, tt.status)
			wantSecurityHeaders(t, res)
		})
	}
}

func wantSecurityHeaders(t *testing.T, res *response) {
	t.Helper()
	for k, want := range map[string]string{
		"X-Content-Type-Options":       "nosniff",
		"X-Frame-Options":              "DENY",
		"Referrer-Policy":              "same-origin",
		"Cross-Origin-Opener-Policy":   "same-origin",
		"Cross-Origin-Resource-Policy": "same-origin",
		"X-Robots-Tag":                 "noindex, nofollow",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("CSP %q lacks %q", csp, d)
		}
	}
	if res.Header.Get("Cache-Control") == "" {
		t.Error("no Cache-Control")
	}
	if res.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id")
	}
}

// TestReadyzOnUnmigratedDatabase: /readyz is 503 while the schema is behind
// the binary (without leaking the database path) and 200 once migrated,
// while /healthz stays 200 throughout.
func TestReadyzOnUnmigratedDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	st, err := store.Open(ctx, filepath.Join(dir, "kimi.db"), store.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	srv, err := New(Options{Store: st, Auth: auth.New(st, logger, auth.Options{BcryptCost: bcrypt.MinCost}), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	h := &harness{t: t, st: st, srv: srv, ts: ts}
	c := h.newClient()

	res := c.get("/readyz")
	wantStatus(t, res, http.StatusServiceUnavailable)
	wantBody(t, res, "not ready", "pending migrations")
	if strings.Contains(res.body, dir) {
		t.Errorf("readyz leaks the database path: %q", res.body)
	}
	wantStatus(t, c.get("/healthz"), http.StatusOK)
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, c.get("/readyz"), http.StatusOK)
}

// TestSecureCookiesBehindTLSProxy: behind a trusted TLS-terminating proxy
// (X-Forwarded-Proto: https) cookies carry Secure; the same header from an
// untrusted client changes nothing, and plain local HTTP keeps cookies
// usable (no Secure).
func TestSecureCookiesBehindTLSProxy(t *testing.T) {
	tests := []struct {
		name       string
		trustProxy bool
		headers    []string
		wantSecure bool
	}{
		{"plain local HTTP", false, nil, false},
		{"trusted proxy terminating TLS", true, []string{"X-Forwarded-Proto", "https"}, true},
		{"trusted proxy over plain HTTP", true, []string{"X-Forwarded-Proto", "http"}, false},
		{"header without a trusted proxy", false, []string{"X-Forwarded-Proto", "https"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options) {
				if tt.trustProxy { // the test client connects from loopback
					o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
				}
			})
			h.createAdmin()
			c := h.newClient()
			c.get("/login", tt.headers...)
			res := c.post("/login", url.Values{"username": {testUser}, "password": {testPassword}}, tt.headers...)
			wantStatus(t, res, http.StatusSeeOther)
			found := false
			for _, ck := range res.Cookies() {
				if ck.Name != sessionCookie {
					continue
				}
				found = true
				if ck.Secure != tt.wantSecure || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode {
					t.Errorf("session cookie Secure=%v HttpOnly=%v SameSite=%v, want Secure=%v HttpOnly SameSite=Lax",
						ck.Secure, ck.HttpOnly, ck.SameSite, tt.wantSecure)
				}
			}
			if !found {
				t.Fatal("no session cookie set on sign-in")
			}
		})
	}
}
