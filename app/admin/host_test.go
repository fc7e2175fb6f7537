package admin

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestHostHeaderAllowList reproduces DNS rebinding: a page on evil.example
// whose name now resolves to this server talks to it from the victim's
// browser with Host: evil.example. Every route but the probes must refuse it
// with a plain 421 before any handler; the allowed names work.
func TestHostHeaderAllowList(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.AllowedHosts = []string{"kimi.example.org", "127.0.0.1:8080"}
	})
	h.createAdmin()
	var csrf string
	send := func(method, path, host string) (int, string) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(url.Values{"_csrf": {csrf}, "username": {testUser}, "password": {testPassword}}.Encode())
		}
		req, err := http.NewRequest(method, h.ts.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.AddCookie(&http.Cookie{Name: csrfCookie, Value: csrf})
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		for _, ck := range res.Cookies() {
			if ck.Name == csrfCookie && csrf == "" {
				csrf = ck.Value
			}
		}
		return res.StatusCode, string(b)
	}
	if status, _ := send(http.MethodGet, "/login", "kimi.example.org"); status != http.StatusOK || csrf == "" {
		t.Fatalf("GET /login at the base URL host = %d, CSRF cookie %q", status, csrf)
	}
	tests := []struct {
		name, method, path, host string
		want                     int
	}{
		{"rebound name, sign-in page", "GET", "/login", "evil.example", http.StatusMisdirectedRequest},
		{"rebound name, sign-in post", "POST", "/login", "evil.example", http.StatusMisdirectedRequest},
		{"rebound name, overview", "GET", "/", "evil.example", http.StatusMisdirectedRequest},
		{"rebound name with the port", "GET", "/login", "evil.example:8080", http.StatusMisdirectedRequest},
		{"rebound name, trailing-slash redirect", "GET", "/login/", "evil.example", http.StatusMisdirectedRequest},
		{"rebound name, static file", "GET", "/static/app.css", "evil.example", http.StatusMisdirectedRequest},
		{"allowed name at another port", "GET", "/login", "kimi.example.org:8443", http.StatusMisdirectedRequest},
		{"bound literal at another port", "GET", "/login", "127.0.0.1:9090", http.StatusMisdirectedRequest},
		{"base URL host", "GET", "/login", "kimi.example.org", http.StatusOK},
		{"base URL host, any case", "GET", "/login", "KIMI.Example.ORG", http.StatusOK},
		{"base URL host with the default port", "GET", "/login", "kimi.example.org:443", http.StatusOK},
		{"base URL host, sign-in post", "POST", "/login", "kimi.example.org", http.StatusSeeOther},
		{"bound literal", "GET", "/login", "127.0.0.1:8080", http.StatusOK},
		{"bound literal, overview", "GET", "/", "127.0.0.1:8080", http.StatusSeeOther},
		{"probe exempt: healthz", "GET", "/healthz", "evil.example", http.StatusOK},
		{"probe exempt: readyz", "GET", "/readyz", "container-probe", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := send(tt.method, tt.path, tt.host)
			if status != tt.want {
				t.Fatalf("%s %s Host %q = %d, want %d; body %.200s", tt.method, tt.path, tt.host, status, tt.want, body)
			}
			if status == http.StatusMisdirectedRequest && body != msgMisdirected {
				t.Errorf("421 body %q, want the plain message", body)
			}
		})
	}
	if n := h.auditCount("auth.login_failed"); n != 0 {
		t.Errorf("%d failed sign-ins recorded: a refused host reached the handler", n)
	}
}

// TestHostCheckLetsTokenScrapersThrough: a Prometheus on a container
// network names Kimi by its service name; with the metrics bearer token its
// GET /metrics passes the Host check (a rebinding page cannot add a token it
// does not know). Without the token, with a wrong one, or on another path or
// method, the foreign Host is still refused.
func TestHostCheckLetsTokenScrapersThrough(t *testing.T) {
	const token = "a-metrics-token-of-32-characters"
	h := newHarness(t, func(o *Options) {
		o.AllowedHosts = []string{"kimi.example.org"}
		o.MetricsToken = token
	})
	tests := []struct {
		name, method, path, auth string
		want                     int
	}{
		{"scraper with the token", http.MethodGet, "/metrics", "Bearer " + token, http.StatusOK},
		{"scraper without a token", http.MethodGet, "/metrics", "", http.StatusMisdirectedRequest},
		{"scraper with a wrong token", http.MethodGet, "/metrics", "Bearer not-the-token-at-all-nope!", http.StatusMisdirectedRequest},
		{"the token on another page", http.MethodGet, "/login", "Bearer " + token, http.StatusMisdirectedRequest},
		{"the token on a POST", http.MethodPost, "/metrics", "Bearer " + token, http.StatusMisdirectedRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, h.ts.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = "kimi:8080"
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			res, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tt.want {
				t.Errorf("status %d, want %d", res.StatusCode, tt.want)
			}
		})
	}
}
