package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/store"
)

func storeFilterAll() store.AuditFilter { return store.AuditFilter{Limit: store.AuditPageMax} }

func TestAuditPageFiltersAndPagination(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	ctx := context.Background()
	for i := range 120 {
		action := "test.even"
		if i%2 == 1 {
			action = "test.odd"
		}
		if err := h.st.Audit(ctx, store.AuditEntry{At: time.Now(), Actor: "robot", Action: action,
			Target: fmt.Sprintf("item-%03d", i), Detail: "<script>alert(1)</script>", IP: "192.0.2.1"}); err != nil {
			t.Fatal(err)
		}
	}
	c := h.newClient()
	c.login(testUser, testPassword)

	rows := regexp.MustCompile(`data-testid="audit-row"`)
	res := c.get("/audit")
	wantStatus(t, res, http.StatusOK)
	if n := len(rows.FindAllString(res.body, -1)); n != auditPageSize {
		t.Errorf("first page rows = %d, want %d", n, auditPageSize)
	}
	if strings.Contains(res.body, "<script>alert(1)</script>") {
		t.Error("audit detail not escaped")
	}
	wantBody(t, res, `<option value="test.odd">`, "auth.login", `data-testid="page-next"`)
	// Newest first: the login happened last.
	if strings.Index(res.body, `data-action="auth.login"`) > strings.Index(res.body, "item-119") {
		t.Error("audit is not newest first")
	}
	next := regexp.MustCompile(`href="(/audit\?before=\d+)"`).FindStringSubmatch(res.body)
	if next == nil {
		t.Fatal("no next-page link")
	}
	page2 := c.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	wantStatus(t, page2, http.StatusOK)
	wantBody(t, page2, `data-testid="page-first"`)
	if strings.Contains(page2.body, "item-119") {
		t.Error("page 2 repeats the newest entry")
	}

	res = c.get("/audit?action=test.odd&q=item-11")
	wantStatus(t, res, http.StatusOK)
	// item-111, 113, 115, 117, 119 and item-11 itself is even? 11 is odd: item-011 does not contain "item-11".
	if n := len(rows.FindAllString(res.body, -1)); n != 5 {
		t.Errorf("filtered rows = %d, want 5", n)
	}
	wantBody(t, res, `<option value="test.odd" selected>`)

	res = c.get("/audit?actor=nobody-at-all")
	wantBody(t, res, "No matching entries", "Clear filters")
	wantStatus(t, c.get("/audit?before=abc"), http.StatusBadRequest)
}

func TestStaticAssets(t *testing.T) {
	h := newHarness(t)
	c := h.newClient()
	cssURL := h.srv.assets.url("app.css")
	if !regexp.MustCompile(`\A/static/app\.[0-9a-f]{8}\.css\z`).MatchString(cssURL) {
		t.Fatalf("css URL = %q", cssURL)
	}
	tests := []struct {
		path, cache, ctype string
		status             int
	}{
		{cssURL, "public, max-age=31536000, immutable", "text/css", http.StatusOK},
		{"/static/app.css", "no-cache", "text/css", http.StatusOK},
		{h.srv.assets.url("favicon.svg"), "public, max-age=31536000, immutable", "image/svg+xml", http.StatusOK},
		{"/static/app.00000000.css", "no-store", "text/html", http.StatusNotFound},
		{"/static/../go.mod", "", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res := c.get(tt.path)
			wantStatus(t, res, tt.status)
			if tt.cache != "" && res.Header.Get("Cache-Control") != tt.cache {
				t.Errorf("Cache-Control = %q, want %q", res.Header.Get("Cache-Control"), tt.cache)
			}
			if tt.ctype != "" && !strings.HasPrefix(res.Header.Get("Content-Type"), tt.ctype) {
				t.Errorf("Content-Type = %q", res.Header.Get("Content-Type"))
			}
		})
	}
	// The login page links the hashed URL.
	wantBody(t, c.get("/login"), `href="`+cssURL+`"`)
	// Revalidation by ETag.
	res := c.get(cssURL, "If-None-Match", c.get(cssURL).Header.Get("ETag"))
	wantStatus(t, res, http.StatusNotModified)
}

func TestHealthAndReadiness(t *testing.T) {
	h := newHarness(t)
	c := h.newClient()
	res := c.get("/healthz")
	wantStatus(t, res, http.StatusOK)
	if res.body != "ok\n" {
		t.Errorf("healthz body %q", res.body)
	}
	wantStatus(t, c.get("/readyz"), http.StatusOK)
	if err := h.st.Close(); err != nil {
		t.Fatal(err)
	}
	res = c.get("/readyz")
	wantStatus(t, res, http.StatusServiceUnavailable)
	wantBody(t, res, "not ready", "database is unavailable")
	if strings.Contains(res.body, "store:") {
		t.Errorf("readyz shows the raw error to an unauthenticated caller: %q", res.body)
	}
	wantStatus(t, c.get("/healthz"), http.StatusOK)
}

func TestSecurityHeaders(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.BaseURL = "https://kimi.example.org" })
	h.createAdmin()
	c := h.newClient()
	for _, path := range []string{"/login", "/healthz", "/nope"} {
		res := c.get(path)
		for k, want := range map[string]string{
			"X-Content-Type-Options": "nosniff",
			"X-Frame-Options":        "DENY",
			"Referrer-Policy":        "same-origin",
		} {
			if got := res.Header.Get(k); got != want {
				t.Errorf("%s %s = %q, want %q", path, k, got, want)
			}
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'self'", "frame-ancestors 'none'", "script-src 'self'", "form-action 'self'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("%s CSP %q lacks %q", path, csp, d)
			}
		}
		if strings.Contains(csp, "unsafe-inline") {
			t.Errorf("CSP allows unsafe-inline: %q", csp)
		}
		if res.Header.Get("Permissions-Policy") == "" || res.Header.Get("Strict-Transport-Security") == "" {
			t.Errorf("%s lacks Permissions-Policy or HSTS", path)
		}
	}
	// https BaseURL: cookies are Secure, HttpOnly, SameSite.
	c = h.newClient()
	res := c.get("/login")
	found := false
	for _, ck := range res.Cookies() {
		if ck.Name == csrfCookie {
			found = true
			if !ck.Secure || !ck.HttpOnly || ck.SameSite == http.SameSiteNoneMode || ck.SameSite == 0 {
				t.Errorf("pre-session cookie attributes: %+v", ck)
			}
		}
	}
	if !found {
		t.Error("no pre-session CSRF cookie issued on /login")
	}
	// The trusted BaseURL origin passes the cross-origin check.
	c.setCookie(csrfCookie, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") // the shape Kimi issues (rand.Text)
	res = c.post("/login", url.Values{"_csrf": {"ABCDEFGHIJKLMNOPQRSTUVWXYZ"}, "username": {testUser}, "password": {testPassword}},
		"Origin", "https://kimi.example.org")
	wantStatus(t, res, http.StatusSeeOther)
	for _, ck := range res.Cookies() {
		if ck.Name == sessionCookie && (!ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode) {
			t.Errorf("session cookie attributes: %+v", ck)
		}
	}
}

func TestNotFoundAndErrors(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	anon := h.newClient()
	res := anon.get("/no/such/page")
	wantStatus(t, res, http.StatusSeeOther) // strangers cannot probe which pages exist
	c := h.newClient()
	c.login(testUser, testPassword)
	res = c.get("/no/such/page")
	wantStatus(t, res, http.StatusNotFound)
	wantBody(t, res, "Page not found", `data-testid="sidebar"`, `data-testid="request-id"`)
	if id := res.Header.Get("X-Request-Id"); id == "" || !strings.Contains(res.body, id) {
		t.Errorf("request id %q not on the error page", id)
	}
	res = c.post("/", nil)
	if res.StatusCode != http.StatusMethodNotAllowed && res.StatusCode != http.StatusNotFound {
		t.Errorf("POST / = %d", res.StatusCode)
	}
	wantStatus(t, anon.get("/static/missing.css"), http.StatusNotFound)
}

func TestAccessLogKeepsSecretsOut(t *testing.T) {
	h := newHarness(t)
	token, _, err := h.auth.NewSetupToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := h.newClient()
	c.get("/setup?token=" + token)
	c.post("/setup", url.Values{"token": {token}, "username": {testUser}, "password": {testPassword}, "confirm": {testPassword}})
	c.get("/metrics", "Authorization", "Bearer metrics-secret-token")
	logs := h.logs.String()
	if !strings.Contains(logs, "path=/setup") {
		t.Fatalf("no access log line for /setup:\n%s", logs)
	}
	for _, secret := range []string{token, testPassword, "metrics-secret-token", c.cookie(sessionCookie)} {
		if secret != "" && strings.Contains(logs, secret) {
			t.Errorf("log contains a secret %q", secret)
		}
	}
}

func TestErrorsNeverLeakInternals(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	h.srv.echo.GET("/test-panic", func(echo.Context) error { panic("kaboom internal state") })
	h.srv.echo.GET("/test-error", func(echo.Context) error {
		return errors.New("store: open /secret/path/kimi.db: permission denied")
	})
	c := h.newClient()
	c.login(testUser, testPassword)
	for _, path := range []string{"/test-panic", "/test-error"} {
		res := c.get(path)
		wantStatus(t, res, http.StatusInternalServerError)
		wantBody(t, res, "Something went wrong", res.Header.Get("X-Request-Id"))
		for _, leak := range []string{"kaboom", "/secret/path", "permission denied", "goroutine"} {
			if strings.Contains(res.body, leak) {
				t.Errorf("%s: page leaks %q", path, leak)
			}
		}
		if !strings.Contains(h.logs.String(), "request_id="+res.Header.Get("X-Request-Id")) {
			t.Errorf("%s: error not logged with its request id", path)
		}
	}
	if !strings.Contains(h.logs.String(), "kaboom internal state") {
		t.Error("panic value not logged")
	}
	// The server keeps serving after a panic.
	wantStatus(t, c.get("/"), http.StatusOK)
}

// metricsScenario is a GET /metrics with an Authorization header.
func metricsScenario(name, authorization string, status int) scenario {
	sc := scenario{name: "metrics: " + name, method: http.MethodGet, url: "/metrics", wantStatus: status}
	if authorization != "" {
		sc.headers = map[string]string{"Authorization": authorization}
	}
	if status == http.StatusOK {
		// An earlier scrape, so the request counter has a /metrics series.
		sc.setup = func(t *testing.T, h *harness) { h.newClient().get("/metrics") }
		sc.wantContains = []string{"go_goroutines", "process_", `kimi_http_requests_total{method="GET",route="/metrics"`,
			"kimi_http_request_duration_seconds_bucket", `go_sql_open_connections{db_name="writer"}`,
			`go_sql_open_connections{db_name="reader"}`, "kimi_db_size_bytes"}
	}
	return sc
}

// pageScenarios: pages, metrics, the backup download and canonical paths.
var pageScenarios = []scenario{
	{name: "overview", method: http.MethodGet, url: "/", signedIn: true,
		opts:       []func(*Options){func(o *Options) { o.Modules = []ModuleInfo{{Name: "reference", Version: "1.2.3"}} }},
		wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="overview-version">v0.0.0-test<`, `data-testid="overview-uptime">1h 30m<`,
			`data-testid="overview-modules">1<`, "not configured", "never", "reference", "1.2.3", `aria-current="page"`},
		check: func(t *testing.T, h *harness, _ *client, res *response) { wantBody(t, res, h.st.Path()) }},

	metricsScenario("no credentials", "", http.StatusUnauthorized),
	metricsScenario("wrong token", "Bearer nope", http.StatusUnauthorized),
	metricsScenario("token prefix", "Bearer metrics-secret", http.StatusUnauthorized),
	metricsScenario("basic scheme", "Basic metrics-secret-token", http.StatusUnauthorized),
	metricsScenario("right token", "Bearer metrics-secret-token", http.StatusOK),
	metricsScenario("lowercase scheme", "bearer metrics-secret-token", http.StatusOK),
	{name: "metrics: a session", method: http.MethodGet, url: "/metrics", signedIn: true,
		wantStatus: http.StatusOK, wantContains: []string{`route="/",status="200"`}},
	{name: "metrics: no configured token, only sessions", method: http.MethodGet, url: "/metrics",
		opts: []func(*Options){func(o *Options) { o.MetricsToken = "" }}, headers: map[string]string{"Authorization": "Bearer "},
		wantStatus: http.StatusUnauthorized},

	{name: "backup download", method: http.MethodPost, url: "/settings/backup", signedIn: true,
		wantStatus: http.StatusOK, wantAudit: []string{ActionBackupDownload}, check: checkBackupDownload},

	{name: "trailing slash redirects", method: http.MethodGet, url: "/settings/", signedIn: true,
		wantStatus: http.StatusMovedPermanently, wantLocation: "/settings"},
	// A scheme-relative trick through the trailing-slash redirect stays local.
	{name: "scheme-relative redirect stays local", method: http.MethodGet, url: "//evil.example/", signedIn: true,
		wantStatus: http.StatusMovedPermanently, wantLocation: "/evil.example"},
}

func TestPageScenarios(t *testing.T) { runScenarios(t, pageScenarios) }

// checkBackupDownload: the download is a named, usable SQLite file with the
// admin in it, no temporary copy is left, and the overview shows its age.
func checkBackupDownload(t *testing.T, h *harness, c *client, res *response) {
	t.Helper()
	cd := res.Header.Get("Content-Disposition")
	if !regexp.MustCompile(`\Aattachment; filename="kimi-backup-\d{8}T\d{6}Z\.db"\z`).MatchString(cd) {
		t.Errorf("Content-Disposition = %q", cd)
	}
	if !strings.HasPrefix(res.body, "SQLite format 3\x00") {
		t.Errorf("body is not an SQLite file: %q", res.body[:min(len(res.body), 20)])
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(h.st.Path()), ".kimi-download-*"))
	if len(left) != 0 {
		t.Errorf("temporary backup left behind: %v", left)
	}
	wantBody(t, c.get("/"), "ago")
	p := filepath.Join(t.TempDir(), "dl.db")
	if err := os.WriteFile(p, []byte(res.body), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := store.Check(context.Background(), p)
	if err != nil {
		t.Fatalf("check downloaded backup: %v (%+v)", err, rep)
	}
}
