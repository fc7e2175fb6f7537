package admin

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/settings"
)

// TestEveryRouteRequiresAuth walks echo's registered routes, so a route added
// later is covered without editing this test.
func TestEveryRouteRequiresAuth(t *testing.T) {
	h := newHarness(t, withModules(nil, false), withDemo)
	h.createAdmin()

	wantPublic := []string{
		"GET /healthz", "HEAD /healthz", "GET /readyz", "HEAD /readyz", "GET /static/*", "HEAD /static/*",
		"GET /robots.txt", "GET /setup", "POST /setup", "GET /login", "POST /login", "GET /metrics",
	}
	var gotPublic []string
	for k := range h.srv.publicPath {
		gotPublic = append(gotPublic, k)
	}
	slices.Sort(gotPublic)
	slices.Sort(wantPublic)
	if !slices.Equal(gotPublic, wantPublic) {
		t.Fatalf("public routes changed:\n got %v\nwant %v", gotPublic, wantPublic)
	}

	anon := h.newClient()
	anon.get("/login") // obtain a valid pre-session CSRF token, so POSTs reach the auth check
	protected := 0
	for _, r := range h.srv.echo.Routes() {
		if h.srv.isPublic(r.Method, r.Path) || r.Method == "echo_route_not_found" {
			continue
		}
		path := strings.NewReplacer(":name", "x", ":id", "1", "*", "x").Replace(r.Path)
		protected++
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			switch r.Method {
			case http.MethodGet, http.MethodHead:
				res := anon.get(path)
				wantStatus(t, res, http.StatusSeeOther)
				if loc := res.Header.Get("Location"); !strings.HasPrefix(loc, "/login") {
					t.Errorf("redirect to %q, want /login…", loc)
				}
			default:
				res := anon.post(path, url.Values{})
				wantStatus(t, res, http.StatusUnauthorized)
			}
		})
	}
	if protected < 10 {
		t.Errorf("only %d protected routes found; route walk broken?", protected)
	}
	// A signed-in admin reaches every protected GET page, and every
	// state-changing route refuses a request without the CSRF token.
	admin := h.newClient()
	admin.login(testUser, testPassword)
	before := h.sessionCount()
	for _, r := range h.srv.echo.Routes() {
		// :name is a module's (a page of an unknown one is a 404).
		path := strings.NewReplacer(":name", "hello", ":id", "1", "*", "x").Replace(r.Path)
		switch {
		case r.Method == http.MethodGet && (r.Path == "/modules/events" || r.Path == "/demo/events" || r.Path == "/discord/events" ||
			r.Path == "/proposals/events" || r.Path == "/results/events" || r.Path == "/assistant/events" ||
			r.Path == "/assistant/conversations/events"):
			// An event stream never ends by itself: TestModuleEvents*,
			// TestDemoEventsFollowTheFake, TestDiscordEvents,
			// TestProposalEvents, TestResultEvents and TestAssistantEvents
			// cover them.
		case r.Method == http.MethodGet && (r.Path == "/proposals/:id" || r.Path == "/results/:module/:name/:guild" ||
			r.Path == "/tasks/:id" || r.Path == "/tasks/:id/edit" || r.Path == "/tasks/events" || r.Path == "/assistant/conversations/:id" ||
			r.Path == "/guilds/:id/members/search"):
			// No proposal or task has the id "1" (not 32 hex), no
			// subscription the address /results/:module/…, the task
			// stream without an id streams nothing, and the bot knows no
			// guild 1 to search the members of: the page is a 404
			// (TestTaskEvents covers the stream, TestPickerScenarios the
			// search).
			if res := admin.get(path); res.StatusCode != http.StatusNotFound {
				t.Errorf("signed in GET %s = %d, want 404", r.Path, res.StatusCode)
			}
		case r.Method == http.MethodGet && !h.srv.isPublic(r.Method, r.Path):
			if res := admin.get(path); res.StatusCode != http.StatusOK {
				t.Errorf("signed in GET %s = %d", r.Path, res.StatusCode)
			}
		case r.Method == http.MethodPost:
			if res := admin.post(path, url.Values{"_csrf": {"-"}}); res.StatusCode != http.StatusForbidden {
				t.Errorf("signed in POST %s without _csrf = %d, want 403", r.Path, res.StatusCode)
			}
		}
	}
	if h.sessionCount() != before {
		t.Error("a POST without CSRF token changed the sessions")
	}
}

func TestLocalRedirect(t *testing.T) {
	tests := map[string]string{
		"":               "/",
		"/":              "/",
		"/audit":         "/audit",
		"/audit?q=a%20b": "/audit?q=a%20b",
		"//evil":         "/",
		"/\\evil":        "/",
		"http://x/":      "/",
		"audit":          "/",
		"/a\nb":          "/",
	}
	for in, want := range tests {
		if got := localRedirect(in); got != want {
			t.Errorf("localRedirect(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoginCSRF(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	tests := []struct {
		name  string
		setup func(c *client) url.Values
	}{
		{"no pre-session cookie", func(c *client) url.Values {
			return url.Values{"_csrf": {"forged-token-forged-token"}}
		}},
		{"cookie but no field", func(c *client) url.Values {
			c.get("/login")
			return url.Values{"_csrf": {"-"}}
		}},
		{"cookie and a different field", func(c *client) url.Values {
			c.get("/login")
			return url.Values{"_csrf": {"forged-token-forged-token"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := h.newClient()
			form := tt.setup(c)
			form.Set("username", testUser)
			form.Set("password", testPassword)
			res := c.post("/login", form)
			wantStatus(t, res, http.StatusForbidden)
			if c.cookie(sessionCookie) != "" || h.sessionCount() != 0 {
				t.Error("a session was created despite the CSRF failure")
			}
		})
	}
}

func TestSessionRotationOnLogin(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	first := c.cookie(sessionCookie)
	if first == "" {
		t.Fatal("no session cookie after login")
	}
	// Signing in again (e.g. from a stale login tab) replaces the session.
	c.get("/logout") // GET is not a route: 404 page in the layout, session intact
	c.get("/settings")
	res := c.post("/login", url.Values{"username": {testUser}, "password": {testPassword}})
	wantStatus(t, res, http.StatusSeeOther)
	second := c.cookie(sessionCookie)
	if second == "" || second == first {
		t.Fatalf("session not rotated: %q -> %q", first, second)
	}
	stale := h.newClient()
	stale.setCookie(sessionCookie, first)
	res = stale.get("/")
	wantStatus(t, res, http.StatusSeeOther)
	if h.sessionCount() != 1 {
		t.Errorf("sessions = %d, want 1", h.sessionCount())
	}
	// A fixated (planted) cookie is dropped at login, not adopted.
	victim := h.newClient()
	victim.setCookie(sessionCookie, second)
	victim.get("/login") // already signed in with the planted cookie -> redirected
	victim.setCookie(sessionCookie, "planted.value")
	victim.login(testUser, testPassword)
	if got := victim.cookie(sessionCookie); got == "planted.value" || got == second {
		t.Errorf("login kept a planted cookie %q", got)
	}
}

func TestExpiredAndInvalidSessions(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	opts := h.auth.Options()
	tests := []struct {
		name    string
		prepare func(c *client)
		flash   bool
	}{
		{"idle", func(c *client) { h.clk.Add(opts.SessionIdle + time.Second) }, true},
		{"absolute", func(c *client) {
			for range int(opts.SessionAbsolute/(opts.SessionIdle/2)) + 1 {
				h.clk.Add(opts.SessionIdle / 2)
				c.get("/") // keeps it from idling out
			}
		}, true},
		{"tampered secret", func(c *client) {
			v := c.cookie(sessionCookie)
			last := "A"
			if strings.HasSuffix(v, "A") { // must differ, or nothing was tampered
				last = "B"
			}
			c.setCookie(sessionCookie, v[:len(v)-1]+last)
		}, false},
		{"garbage", func(c *client) { c.setCookie(sessionCookie, "garbage") }, false},
		{"deleted by another process", func(c *client) {
			if _, err := h.st.Writer().Exec(`DELETE FROM kimi_sessions`); err != nil {
				t.Fatal(err)
			}
			h.clk.Add(auth.SessionCacheTTL) // the in-memory session cache may serve it until then
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := h.newClient()
			c.login(testUser, testPassword)
			tt.prepare(c)
			res := c.get("/settings")
			wantStatus(t, res, http.StatusSeeOther)
			if loc := res.Header.Get("Location"); loc != "/login?next=%2Fsettings" {
				t.Errorf("Location = %q", loc)
			}
			if c.cookie(sessionCookie) != "" {
				t.Error("invalid session cookie was not cleared")
			}
			page := c.get("/login?next=%2Fsettings")
			if tt.flash {
				wantBody(t, page, "Your session expired")
			}
		})
	}
}

func TestSetupFlow(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	token, _, err := h.auth.NewSetupToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := h.newClient()
	wantBody(t, c.get("/login"), "No admin account exists yet")
	res := c.get("/setup")
	wantStatus(t, res, http.StatusOK)
	wantBody(t, res, "Set-up link needed", "/setup?token=")
	res = c.get("/setup?token=wrong")
	wantStatus(t, res, http.StatusForbidden)
	wantBody(t, res, "not valid")

	res = c.get("/setup?token=" + token)
	wantStatus(t, res, http.StatusOK)
	wantBody(t, res, "Create the admin account", `name="token" value="`+token+`"`)

	submit := func(user, pw, confirm, tok string) *response {
		return c.post("/setup", url.Values{"token": {tok}, "username": {user}, "password": {pw}, "confirm": {confirm}})
	}
	res = submit(testUser, testPassword, "something else", token)
	wantStatus(t, res, http.StatusUnprocessableEntity)
	wantBody(t, res, "The passwords do not match")
	res = submit("bad name", "short", "short", token)
	wantStatus(t, res, http.StatusUnprocessableEntity)
	wantBody(t, res, "Username must be", "Password must be at least 8 characters")
	res = submit(testUser, testPassword, testPassword, "wrong")
	wantStatus(t, res, http.StatusForbidden)

	res = submit(testUser, testPassword, testPassword, token)
	wantStatus(t, res, http.StatusSeeOther)
	if res.Header.Get("Location") != "/" {
		t.Fatalf("setup redirected to %q", res.Header.Get("Location"))
	}
	page := c.get("/")
	wantStatus(t, page, http.StatusOK)
	wantBody(t, page, "Welcome!", `data-testid="current-user">admin<`)

	// Single use: the token is burnt and /setup is gone.
	other := h.newClient()
	other.get("/login")
	res = other.post("/setup", url.Values{"token": {token}, "username": {"second"}, "password": {testPassword}, "confirm": {testPassword}})
	wantStatus(t, res, http.StatusSeeOther)
	if loc := res.Header.Get("Location"); loc != "/login" {
		t.Errorf("reused token Location = %q", loc)
	}
	res = other.get("/setup?token=" + token)
	wantStatus(t, res, http.StatusSeeOther)
	var admins int
	if err := h.st.Reader().QueryRow(`SELECT COUNT(*) FROM kimi_admins`).Scan(&admins); err != nil || admins != 1 {
		t.Errorf("admins = %d (%v), want 1", admins, err)
	}
	if n := h.auditCount(auth.ActionSetup); n != 1 {
		t.Errorf("setup audit rows = %d", n)
	}
}

func TestLoginRateLimit(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.LoginBurst = 3; o.LoginEvery = time.Hour })
	h.createAdmin()
	c := h.newClient()
	c.get("/login")
	for i := range 3 {
		res := c.post("/login", url.Values{"username": {testUser}, "password": {"wrong password"}})
		wantStatus(t, res, http.StatusUnauthorized)
		wantBody(t, res, "Invalid username or password")
		_ = i
	}
	res := c.post("/login", url.Values{"username": {testUser}, "password": {testPassword}})
	wantStatus(t, res, http.StatusTooManyRequests)
	wantBody(t, res, "Too many attempts")
	if res.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if c.cookie(sessionCookie) != "" {
		t.Error("rate-limited login still signed in")
	}
	if n := h.auditCount(auth.ActionLoginFailed); n != 3 {
		t.Errorf("failed-login audit rows = %d, want 3", n)
	}
	// Set-up shares the per-IP budget.
	res = c.post("/setup", url.Values{"token": {"x"}})
	wantStatus(t, res, http.StatusTooManyRequests)
}

func TestPasswordChangeRevokesOtherSessions(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	a, b := h.newClient(), h.newClient()
	a.login(testUser, testPassword)
	b.login(testUser, testPassword)
	oldA := a.cookie(sessionCookie)
	a.get("/settings")
	res := a.post("/settings/password", url.Values{
		"current_password": {"wrong password"}, "new_password": {"brand new secret"}, "confirm_password": {"brand new secret"},
	})
	wantStatus(t, res, http.StatusUnprocessableEntity)
	wantBody(t, res, "Current password is incorrect")
	res = a.post("/settings/password", url.Values{
		"current_password": {testPassword}, "new_password": {"brand new secret"}, "confirm_password": {"brand new secret"},
	})
	wantStatus(t, res, http.StatusSeeOther)
	if a.cookie(sessionCookie) == oldA {
		t.Error("session not rotated on password change")
	}
	wantBody(t, a.get("/settings"), "Password changed")
	wantStatus(t, b.get("/settings"), http.StatusSeeOther)
	if n := h.auditCount(auth.ActionPasswordChange); n != 1 {
		t.Errorf("password change audit rows = %d", n)
	}
	if n := h.auditCount(auth.ActionPasswordChangeFailed); n != 1 {
		t.Errorf("failed password change audit rows = %d", n)
	}
	c := h.newClient()
	c.login(testUser, "brand new secret")
}

func TestLogoutAndAuditTrail(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.get("/login")
	wantStatus(t, c.post("/login", url.Values{"username": {"nobody"}, "password": {"guess-guess"}}), http.StatusUnauthorized)
	c.login(testUser, testPassword)
	res := c.post("/logout", nil)
	wantStatus(t, res, http.StatusSeeOther)
	if res.Header.Get("Location") != "/login" {
		t.Errorf("logout Location = %q", res.Header.Get("Location"))
	}
	wantBody(t, c.get("/login"), "You have been signed out")
	wantStatus(t, c.get("/"), http.StatusSeeOther)

	entries, _, err := h.st.ListAudit(context.Background(), storeFilterAll())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Action+"/"+e.Actor+"/"+e.IP)
	}
	want := []string{
		auth.ActionLogout + "/admin/127.0.0.1", auth.ActionLogin + "/admin/127.0.0.1",
		auth.ActionLoginFailed + "/nobody/127.0.0.1", auth.ActionAdminCreate + "/test/",
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("audit =\n%v\nwant\n%v", got, want)
	}
	for _, e := range entries {
		if strings.Contains(e.Detail, "guess-guess") || strings.Contains(e.Detail, testPassword) {
			t.Errorf("password in audit row %+v", e)
		}
	}
}

func TestRevokeOtherSessionsHTTP(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	a, b, c := h.newClient(), h.newClient(), h.newClient()
	for _, cl := range []*client{a, b, c} {
		cl.login(testUser, testPassword)
	}
	page := a.get("/settings")
	if n := strings.Count(page.body, `class="session-item"`); n != 3 {
		t.Fatalf("sessions listed = %d, want 3", n)
	}
	wantBody(t, page, "this session", `data-testid="revoke-sessions"`)
	// The first POST only asks: nothing is revoked, nothing audited.
	res := a.post("/settings/sessions/revoke", nil)
	wantStatus(t, res, http.StatusOK)
	wantBody(t, res, "Sign out other sessions?", `name="confirm" value="yes"`, `data-testid="confirm-yes">Yes, sign out other sessions<`,
		`data-testid="confirm-cancel"`, `action="/settings/sessions/revoke"`)
	wantStatus(t, b.get("/"), http.StatusOK)
	if n := h.auditCount(auth.ActionSessionsRevoke); n != 0 {
		t.Fatalf("revoke audited before confirmation: %d rows", n)
	}
	res = a.post("/settings/sessions/revoke", url.Values{"confirm": {"yes"}})
	wantStatus(t, res, http.StatusSeeOther)
	wantBody(t, a.get("/settings"), "All other sessions were signed out")
	wantStatus(t, b.get("/"), http.StatusSeeOther)
	wantStatus(t, c.get("/"), http.StatusSeeOther)
	wantStatus(t, a.get("/"), http.StatusOK)
	if n := h.auditCount(auth.ActionSessionsRevoke); n != 1 {
		t.Errorf("revoke audit rows = %d", n)
	}
}

func TestPasswordChangeRateLimited(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.LoginBurst = 2; o.LoginEvery = time.Hour })
	h.createAdmin()
	c := h.newClient()
	c.get("/login")
	wantStatus(t, c.post("/login", url.Values{"username": {testUser}, "password": {testPassword}}), http.StatusSeeOther)
	c.get("/settings")
	form := url.Values{"current_password": {"guess guess"}, "new_password": {"new password 1"}, "confirm_password": {"new password 1"}}
	wantStatus(t, c.post("/settings/password", form), http.StatusUnprocessableEntity)
	wantStatus(t, c.post("/settings/password", form), http.StatusTooManyRequests)
}

// evilNext are next= values that must never leave the admin.
var evilNext = []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)", "/ok\r\nX: y"}

// loginScenarios: sign-in, its failures (audited too), the next= redirect
// and sign-out.
var loginScenarios = append([]scenario{
	{name: "wrong password", method: http.MethodPost, url: "/login", form: url.Values{"username": {testUser}, "password": {"wrong password"}},
		wantStatus: http.StatusUnauthorized, wantContains: []string{"Invalid username or password"}, wantAudit: []string{auth.ActionLoginFailed},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			if c.cookie(sessionCookie) != "" || h.sessionCount() != 0 {
				t.Error("a failed sign-in created a session")
			}
		}},
	{name: "unknown user", method: http.MethodPost, url: "/login", form: url.Values{"username": {"nobody"}, "password": {"guess-guess"}},
		wantStatus: http.StatusUnauthorized, wantContains: []string{"Invalid username or password"}, wantNotContains: []string{"guess-guess"},
		wantAudit: []string{auth.ActionLoginFailed}},
	{name: "sign in", method: http.MethodPost, url: "/login", form: url.Values{"username": {testUser}, "password": {testPassword}},
		wantStatus: http.StatusSeeOther, wantLocation: "/", wantAudit: []string{auth.ActionLogin}},
	{name: "anonymous is sent to sign in with next", method: http.MethodGet, url: "/audit?actor=admin",
		wantStatus: http.StatusSeeOther, wantLocation: "/login?next=%2Faudit%3Factor%3Dadmin"},
	{name: "sign-in page keeps next", method: http.MethodGet, url: "/login?next=%2Faudit%3Factor%3Dadmin",
		wantStatus: http.StatusOK, wantContains: []string{`name="next" value="/audit?actor=admin"`}},
	{name: "sign in goes on to next", method: http.MethodPost, url: "/login",
		form:       url.Values{"username": {testUser}, "password": {testPassword}, "next": {"/audit?actor=admin"}},
		wantStatus: http.StatusSeeOther, wantLocation: "/audit?actor=admin", wantAudit: []string{auth.ActionLogin}},
	{name: "sign out", method: http.MethodPost, url: "/logout", signedIn: true,
		wantStatus: http.StatusSeeOther, wantLocation: "/login", wantAudit: []string{auth.ActionLogout},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			wantBody(t, c.get("/login"), "You have been signed out")
			wantStatus(t, c.get("/"), http.StatusSeeOther)
		}},
	{name: "sign out without the CSRF token keeps the session", method: http.MethodPost, url: "/logout", signedIn: true, noCSRF: true,
		wantStatus: http.StatusForbidden, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, _ *response) { wantStatus(t, c.get("/"), http.StatusOK) }},
}, evilNextScenarios()...)

func evilNextScenarios() []scenario {
	var out []scenario
	for _, evil := range evilNext {
		out = append(out, scenario{name: "next stays local: " + evil, method: http.MethodPost, url: "/login",
			form:       url.Values{"username": {testUser}, "password": {testPassword}, "next": {evil}},
			wantStatus: http.StatusSeeOther, wantLocation: "/", wantAudit: []string{auth.ActionLogin}})
	}
	return out
}

func TestLoginScenarios(t *testing.T) { runScenarios(t, loginScenarios) }

// passwordUnchanged checks that the admin still signs in with testPassword.
func passwordUnchanged(t *testing.T, h *harness, _ *client, _ *response) {
	t.Helper()
	if _, err := h.auth.Login(context.Background(), testUser, testPassword, auth.ClientMeta{}, ""); err != nil {
		t.Errorf("password changed: %v", err)
	}
}

// changeForm is a valid password change from testPassword.
func changeForm(csrf string) url.Values {
	v := url.Values{"current_password": {testPassword}, "new_password": {"another password"}, "confirm_password": {"another password"}}
	if csrf != "" {
		v.Set("_csrf", csrf)
	}
	return v
}

// csrfScenarios: a state-changing request without the right token, or from
// another site, is refused and changes nothing.
var csrfScenarios = []scenario{
	{name: "missing token", method: http.MethodPost, url: "/settings/password", signedIn: true, noCSRF: true, form: changeForm(""),
		wantStatus: http.StatusForbidden, wantContains: []string{"Request refused"}, wantNoAudit: true, check: passwordUnchanged},
	{name: "wrong token", method: http.MethodPost, url: "/settings/password", signedIn: true, form: changeForm("not-the-token"),
		wantStatus: http.StatusForbidden, wantContains: []string{"Request refused"}, wantNoAudit: true, check: passwordUnchanged},
	{name: "token of another session", method: http.MethodPost, url: "/settings/password", signedIn: true, form: changeForm("{other_csrf}"),
		setup: func(t *testing.T, h *harness) {
			other := h.newClient()
			other.login(testUser, testPassword)
			other.get("/settings")
			h.vars["other_csrf"] = other.csrf
		},
		wantStatus: http.StatusForbidden, wantContains: []string{"Request refused"}, wantNoAudit: true, check: passwordUnchanged},
	{name: "cross-origin Origin", method: http.MethodPost, url: "/settings/password", signedIn: true, form: changeForm(""),
		headers:    map[string]string{"Origin": "http://evil.example"},
		wantStatus: http.StatusForbidden, wantContains: []string{"Request refused"}, wantNoAudit: true, check: passwordUnchanged},
	{name: "cross-site Sec-Fetch-Site", method: http.MethodPost, url: "/settings/password", signedIn: true, form: changeForm(""),
		headers:    map[string]string{"Sec-Fetch-Site": "cross-site"},
		wantStatus: http.StatusForbidden, wantContains: []string{"Request refused"}, wantNoAudit: true, check: passwordUnchanged},
	{name: "same-site Sec-Fetch-Site", method: http.MethodPost, url: "/settings/password", signedIn: true, form: changeForm(""),
		headers:    map[string]string{"Sec-Fetch-Site": "same-site"},
		wantStatus: http.StatusForbidden, wantContains: []string{"Request refused"}, wantNoAudit: true, check: passwordUnchanged},
	{name: "same-origin with the right token works", method: http.MethodPost, url: "/settings/password", signedIn: true, form: changeForm(""),
		headers:    map[string]string{"Origin": "{origin}", "Sec-Fetch-Site": "same-origin"},
		setup:      func(t *testing.T, h *harness) { h.vars["origin"] = h.ts.URL },
		wantStatus: http.StatusSeeOther, wantLocation: "/settings", wantAudit: []string{auth.ActionPasswordChange}},
}

func TestCSRFScenarios(t *testing.T) { runScenarios(t, csrfScenarios) }

// settingsScenarios: the password form's refusals and success, the backup.
var settingsScenarios = []scenario{
	{name: "wrong current password", method: http.MethodPost, url: "/settings/password", signedIn: true,
		form:       url.Values{"current_password": {"wrong password"}, "new_password": {"brand new secret"}, "confirm_password": {"brand new secret"}},
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"Current password is incorrect."},
		wantAudit: []string{auth.ActionPasswordChangeFailed}, check: passwordUnchanged},
	{name: "no current password", method: http.MethodPost, url: "/settings/password", signedIn: true,
		form:       url.Values{"new_password": {"brand new secret"}, "confirm_password": {"brand new secret"}},
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"Enter your current password."}, wantNoAudit: true, check: passwordUnchanged},
	{name: "short new password", method: http.MethodPost, url: "/settings/password", signedIn: true,
		form:       url.Values{"current_password": {testPassword}, "new_password": {"short"}, "confirm_password": {"short"}},
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"Password must be at least 8 characters."}, wantNoAudit: true, check: passwordUnchanged},
	{name: "confirmation differs", method: http.MethodPost, url: "/settings/password", signedIn: true,
		form:       url.Values{"current_password": {testPassword}, "new_password": {"brand new secret"}, "confirm_password": {"brand new secreT"}},
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"The passwords do not match."}, wantNoAudit: true, check: passwordUnchanged},
	{name: "password changed", method: http.MethodPost, url: "/settings/password", signedIn: true,
		form:       url.Values{"current_password": {testPassword}, "new_password": {"brand new secret"}, "confirm_password": {"brand new secret"}},
		wantStatus: http.StatusSeeOther, wantLocation: "/settings", wantAudit: []string{auth.ActionPasswordChange},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			wantBody(t, c.get("/settings"), "Password changed")
			if _, err := h.auth.Login(context.Background(), testUser, "brand new secret", auth.ClientMeta{}, ""); err != nil {
				t.Errorf("new password refused: %v", err)
			}
		}},
	{name: "body too large", method: http.MethodPost, url: "/settings/password", signedIn: true,
		form:       url.Values{"current_password": {strings.Repeat("x", 2<<20)}},
		wantStatus: http.StatusRequestEntityTooLarge, wantContains: []string{"too large"}, wantNoAudit: true, check: passwordUnchanged},
}

func TestSettingsScenarios(t *testing.T) { runScenarios(t, settingsScenarios) }

// sessionCountIs checks the number of sessions after the request.
func sessionCountIs(n int) func(*testing.T, *harness, *client, *response) {
	return func(t *testing.T, h *harness, c *client, _ *response) {
		t.Helper()
		if got := h.sessionCount(); got != n {
			t.Errorf("sessions = %d, want %d", got, n)
		}
		wantStatus(t, c.get("/"), http.StatusOK) // this session always survives
	}
}

// secondSession signs in a second browser.
func secondSession(t *testing.T, h *harness) { h.newClient().login(testUser, testPassword) }

// worldtreeConfigured stores a Worldtree configuration.
func worldtreeConfigured(t *testing.T, h *harness) {
	t.Helper()
	if _, err := settings.SaveWorldtree(context.Background(), h.st, settings.WorldtreeUpdate{BaseURL: "https://wt.example",
		DefaultKey: settings.KeyUpdate{Value: wtDefaultKey}}, settings.Actor{Name: "test"}); err != nil {
		t.Fatal(err)
	}
}

func worldtreeIsConfigured(want bool) func(*testing.T, *harness, *client, *response) {
	return func(t *testing.T, h *harness, _ *client, _ *response) {
		t.Helper()
		if got := loadWT(t, h).Configured(); got != want {
			t.Errorf("Worldtree configured = %t, want %t", got, want)
		}
	}
}

// confirmScenarios: destructive actions ask first. The first POST changes
// nothing and writes no row; only confirm=yes in the body acts; a confirmed
// POST without the CSRF token is refused.
var confirmScenarios = []scenario{
	{name: "sign out others asks first", method: http.MethodPost, url: "/settings/sessions/revoke", signedIn: true, setup: secondSession,
		wantStatus: http.StatusOK, wantNoAudit: true, check: sessionCountIs(2),
		wantContains: []string{"Sign out other sessions?", "must sign in again", `action="/settings/sessions/revoke"`,
			`name="confirm" value="yes"`, `data-testid="confirm-yes">Yes, sign out other sessions<`, `href="/settings"`, `name="_csrf" value="`}},
	{name: "sign out others: confirm in the query string does not count", method: http.MethodPost, url: "/settings/sessions/revoke?confirm=yes",
		signedIn: true, setup: secondSession, wantStatus: http.StatusOK, wantContains: []string{"Sign out other sessions?"},
		wantNoAudit: true, check: sessionCountIs(2)},
	{name: "sign out others confirmed", method: http.MethodPost, url: "/settings/sessions/revoke", signedIn: true, setup: secondSession,
		form:       url.Values{"confirm": {"yes"}},
		wantStatus: http.StatusSeeOther, wantLocation: "/settings", wantAudit: []string{auth.ActionSessionsRevoke}, check: sessionCountIs(1)},
	{name: "sign out others confirmed without CSRF", method: http.MethodPost, url: "/settings/sessions/revoke", signedIn: true, noCSRF: true,
		setup: secondSession, form: url.Values{"confirm": {"yes"}},
		wantStatus: http.StatusForbidden, wantNoAudit: true, check: sessionCountIs(2)},

	{name: "remove Worldtree asks first", method: http.MethodPost, url: "/settings/worldtree/remove", signedIn: true, setup: worldtreeConfigured,
		wantStatus: http.StatusOK, wantNoAudit: true, check: worldtreeIsConfigured(true),
		wantContains: []string{"Remove the Worldtree configuration?", "all three API keys", `action="/settings/worldtree/remove"`,
			`name="confirm" value="yes"`, `Yes, remove the Worldtree configuration`, `href="/settings#worldtree"`},
		wantNotContains: []string{wtDefaultKey}},
	{name: "remove Worldtree confirmed", method: http.MethodPost, url: "/settings/worldtree/remove", signedIn: true, setup: worldtreeConfigured,
		form:       url.Values{"confirm": {"yes"}},
		wantStatus: http.StatusSeeOther, wantLocation: "/settings", wantAudit: []string{settings.AuditActionWorldtree}, check: worldtreeIsConfigured(false)},
	{name: "remove Worldtree confirmed without CSRF", method: http.MethodPost, url: "/settings/worldtree/remove", signedIn: true, noCSRF: true,
		setup: worldtreeConfigured, form: url.Values{"confirm": {"yes"}},
		wantStatus: http.StatusForbidden, wantNoAudit: true, check: worldtreeIsConfigured(true)},
	// The server is a closed loopback port: saved all the same, and the
	// failed connection test is shown beside the form.
	{name: "save Worldtree settings", method: http.MethodPost, url: "/settings/worldtree", signedIn: true,
		form:       url.Values{"base_url": {"http://127.0.0.1:1"}, "default_key": {wtDefaultKey}},
		wantStatus: http.StatusSeeOther, wantLocation: "/settings#worldtree", wantAudit: []string{settings.AuditActionWorldtree}, check: worldtreeIsConfigured(true)},
}

func TestConfirmScenarios(t *testing.T) { runScenarios(t, confirmScenarios) }
