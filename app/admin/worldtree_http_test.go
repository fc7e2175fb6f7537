package admin

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
)

// Distinctive keys, so a leak into HTML, logs or the audit log is found by substring search.
const (
	wtDefaultKey  = "wt-default-key-7f3a9c0e5b1d"
	wtAdminKey    = "wt-admin-key-44c2e8a6f0b3"
	wtConsumerKey = "wt-consumer-key-91d7b5e3c1a0"
)

// fakeWorldtree is a Worldtree server for the admin page: it answers the overview's endpoints
// from its fields and records every request.
type fakeWorldtree struct {
	*httptest.Server

	mu           sync.Mutex
	requests     []*http.Request
	personaError map[string]string // agent id -> "status body"; default answers the PAD below
	meStatus     int               // 0 = 200
	sessionPages map[string]string // cursor ("" first) -> JSON page
	sessions403  string            // when set, /sessions answers 403 with this body
}

func newFakeWorldtree(t *testing.T) *fakeWorldtree {
	t.Helper()
	f := &fakeWorldtree{
		personaError: map[string]string{
			"domari": `404 {"detail":{"error_code":"persona_not_configured"}}`,
		},
		sessionPages: map[string]string{
			"": `{"items":[{"session_id":"sess-one","agent_id":"mimir","created_at":"2026-05-25T22:30:18+00:00",
				"last_active":"2026-05-26T08:00:00Z","metadata":{},"name":"First <chat>","archived":false,"tags":["demo"]}],
				"next_cursor":"cur/page+2=="}`,
			"cur/page+2==": `{"items":[{"session_id":"sess-two","agent_id":"domari","created_at":"2026-05-20T10:00:00Z",
				"last_active":"2026-05-21T10:00:00Z","metadata":null,"name":null,"archived":true,"tags":null}],"next_cursor":null}`,
		},
	}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeWorldtree) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Clone(context.Background()))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	answer := func(status int, body string) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.URL.Path == "/me":
		if f.meStatus != 0 {
			answer(f.meStatus, `{"detail":"nope"}`)
			return
		}
		answer(200, `{"user_id":"alice","scopes":["conversations.read","persona.read"],"tier":"user","key_id":"a1b2c3d4","key_label":"kimi appliance"}`)
	case r.URL.Path == "/capabilities":
		answer(200, `{"ephemeral_templates":{"echo":{"allowed_models":["glm5-turbo","glm4.7"],"default_model":"glm5-turbo","system_prompt_max_bytes":32768}}}`)
	case r.URL.Path == "/agents":
		answer(200, `[{"agent_id":"mimir","name":"Mimir","description":"Keeper of the <Well>","version":"0.2.0",
			"capabilities":["knowledge_base"],"persona_traits":{"ocean":{"openness":0.8,"neuroticism":0.2},"vibe":"contemplative"}},
			{"agent_id":"domari","name":"Domari","description":"No persona here"}]`)
	case strings.HasPrefix(r.URL.Path, "/agents/") && strings.HasSuffix(r.URL.Path, "/persona_state"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/agents/"), "/persona_state")
		if e, ok := f.personaError[id]; ok {
			status, body, _ := strings.Cut(e, " ")
			code := 500
			switch status {
			case "403":
				code = 403
			case "404":
				code = 404
			}
			answer(code, body)
			return
		}
		answer(200, `{"agent_id":"`+id+`","pad":{"pleasure":0.52,"arousal":0.47,"dominance":0.5},"dominant_emotion":"curiosity",
			"baseline_pad":{"pleasure":0.5,"arousal":0.4,"dominance":0.5},"last_updated_at":"2026-05-25T22:30:18+00:00"}`)
	case r.URL.Path == "/sessions" && f.sessions403 != "":
		answer(http.StatusForbidden, f.sessions403)
	case r.URL.Path == "/sessions":
		page, ok := f.sessionPages[r.URL.Query().Get("cursor")]
		if !ok {
			answer(422, `{"detail":{"error_code":"cursor_invalid"}}`)
			return
		}
		answer(200, page)
	default:
		answer(404, `{"detail":"not found"}`)
	}
}

// seen returns the requests to path.
func (f *fakeWorldtree) seen(path string) []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*http.Request
	for _, r := range f.requests {
		if r.URL.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// signedIn returns a harness with an admin and a signed-in client.
func signedIn(t *testing.T) (*harness, *client) {
	t.Helper()
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	return h, c
}

// configureWorldtree saves the settings form through HTTP and expects the redirect to /worldtree
// (the save's connection test passed).
func configureWorldtree(t *testing.T, c *client, form url.Values) {
	t.Helper()
	saveWorldtree(t, c, form, "/worldtree")
}

// saveWorldtree saves the settings form through HTTP and expects the redirect to location.
func saveWorldtree(t *testing.T, c *client, form url.Values, location string) {
	t.Helper()
	c.get("/settings")
	res := c.post("/settings/worldtree", form)
	wantStatus(t, res, http.StatusSeeOther)
	if loc := res.Header.Get("Location"); loc != location {
		t.Fatalf("save redirected to %q, want %q", loc, location)
	}
}

func allKeysForm(baseURL string) url.Values {
	return url.Values{"base_url": {baseURL}, "default_key": {wtDefaultKey}, "admin_key": {wtAdminKey}, "consumer_key": {wtConsumerKey}}
}

// wantNoKeys fails when any Worldtree key appears in s.
func wantNoKeys(t *testing.T, where, s string) {
	t.Helper()
	for _, k := range []string{wtDefaultKey, wtAdminKey, wtConsumerKey} {
		if strings.Contains(s, k) {
			t.Errorf("%s contains a Worldtree key", where)
		}
	}
}

func loadWT(t *testing.T, h *harness) settings.Worldtree {
	t.Helper()
	st, err := settings.LoadWorldtree(context.Background(), h.st)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestWorldtreeRoutesRequireAuth(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	// The route walk (TestEveryRouteRequiresAuth) covers these because they are registered on the
	// admin group; check they are there and not public.
	want := map[string]bool{"GET /worldtree": false, "POST /settings/worldtree": false, "POST /settings/worldtree/remove": false}
	for _, r := range h.srv.echo.Routes() {
		k := r.Method + " " + r.Path
		if _, ok := want[k]; ok {
			want[k] = true
			if h.srv.isPublic(r.Method, r.Path) {
				t.Errorf("%s is public", k)
			}
		}
	}
	for k, found := range want {
		if !found {
			t.Errorf("route %s not registered", k)
		}
	}
	anon := h.newClient()
	res := anon.get("/worldtree")
	wantStatus(t, res, http.StatusSeeOther)
	if loc := res.Header.Get("Location"); !strings.HasPrefix(loc, "/login") {
		t.Errorf("anonymous /worldtree redirects to %q", loc)
	}
	anon.get("/login")
	for _, p := range []string{"/settings/worldtree", "/settings/worldtree/remove"} {
		wantStatus(t, anon.post(p, allKeysForm("https://wt.example")), http.StatusUnauthorized)
	}
	if loadWT(t, h).Configured() {
		t.Fatal("an anonymous POST stored settings")
	}
}

func TestWorldtreeSettingsCSRF(t *testing.T) {
	h, c := signedIn(t)
	c.get("/settings")
	for _, token := range []string{"-", "forged-token"} {
		form := allKeysForm("https://wt.example")
		form.Set("_csrf", token)
		wantStatus(t, c.post("/settings/worldtree", form), http.StatusForbidden)
	}
	if loadWT(t, h).Configured() || h.auditCount(settings.AuditActionWorldtree) != 0 {
		t.Fatal("a POST without a valid CSRF token changed the settings")
	}
	configureWorldtree(t, c, allKeysForm(newFakeWorldtree(t).URL))
	wantStatus(t, c.post("/settings/worldtree/remove", url.Values{"_csrf": {"-"}}), http.StatusForbidden)
	if !loadWT(t, h).Configured() {
		t.Fatal("a remove without a CSRF token removed the settings")
	}
}

func TestWorldtreeSettingsSaveKeepClearRemove(t *testing.T) {
	h, c := signedIn(t)
	wt := newFakeWorldtree(t)

	configureWorldtree(t, c, allKeysForm(wt.URL+"/"))
	got := loadWT(t, h)
	want := settings.Worldtree{BaseURL: wt.URL, DefaultKey: wtDefaultKey, AdminKey: wtAdminKey, ConsumerKey: wtConsumerKey}
	if got != want {
		t.Fatalf("stored %v, want %v", got, want)
	}

	page := c.get("/worldtree")
	wantStatus(t, page, http.StatusOK)
	wantBody(t, page, "Saved. Connected as alice (scopes conversations.read, persona.read).", "Mimir")
	wantNoKeys(t, "/worldtree HTML", page.body)
	page = c.get("/settings")
	wantStatus(t, page, http.StatusOK)
	wantBody(t, page, `value="`+wt.URL+`"`, "Set — leave blank to keep", `name="clear_admin_key"`, `name="clear_consumer_key"`, "Remove Worldtree configuration")
	wantNoKeys(t, "/settings HTML", page.body)
	for _, r := range wt.seen("/me") {
		if r.Header.Get("Authorization") != "Bearer "+wtDefaultKey {
			t.Errorf("/me sent Authorization %q, want the default key", r.Header.Get("Authorization"))
		}
	}

	// Blank key fields keep the stored keys.
	configureWorldtree(t, c, url.Values{"base_url": {wt.URL}})
	if got := loadWT(t, h); got != want {
		t.Fatalf("blank fields changed the keys: %v", got)
	}
	// A new default key replaces it; a ticked box clears the admin key.
	configureWorldtree(t, c, url.Values{"base_url": {wt.URL}, "default_key": {"  second-default-key\n"}, "clear_admin_key": {"1"}})
	want.DefaultKey, want.AdminKey = "second-default-key", ""
	if got := loadWT(t, h); got != want {
		t.Fatalf("after replace and clear: %v, want %v", got, want)
	}
	page = c.get("/settings")
	wantBody(t, page, `name="clear_consumer_key"`)
	if strings.Contains(page.body, `name="clear_admin_key"`) {
		t.Error("a cleared key still offers its clear box")
	}

	// The audit log records every change and never a key.
	rows, _, err := h.st.ListAudit(context.Background(), store.AuditFilter{Action: settings.AuditActionWorldtree, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Actor != testUser || !strings.Contains(rows[0].Detail, "admin key cleared") {
		t.Fatalf("audit rows %+v", rows)
	}
	audit := c.get("/audit")
	wantBody(t, audit, settings.AuditActionWorldtree)
	for _, r := range rows {
		wantNoKeys(t, "audit detail", r.Detail)
	}
	wantNoKeys(t, "/audit HTML", audit.body)
	if strings.Contains(audit.body, "second-default-key") {
		t.Error("audit page shows the replaced key")
	}

	// Remove: everything goes, the nav item too.
	c.get("/settings")
	res := c.post("/settings/worldtree/remove", nil) // asks first
	wantStatus(t, res, http.StatusOK)
	wantBody(t, res, "Remove the Worldtree configuration?", "all three API keys")
	if !loadWT(t, h).Configured() {
		t.Fatal("the unconfirmed remove removed the configuration")
	}
	res = c.post("/settings/worldtree/remove", url.Values{"confirm": {"yes"}})
	wantStatus(t, res, http.StatusSeeOther)
	if loc := res.Header.Get("Location"); loc != "/settings" {
		t.Fatalf("remove redirected to %q", loc)
	}
	if got := loadWT(t, h); got != (settings.Worldtree{}) {
		t.Fatalf("after remove: %v", got)
	}
	page = c.get("/settings")
	wantBody(t, page, "The Worldtree configuration was removed", "Not set. The API key")
	if strings.Contains(page.body, "worldtree-remove") {
		t.Error("remove button shown without a configuration")
	}
	wantNoKeys(t, "logs", h.logs.String())
	if strings.Contains(h.logs.String(), "second-default-key") {
		t.Error("logs contain a key")
	}
}

func TestWorldtreeSettingsValidationErrors(t *testing.T) {
	tests := []struct {
		name     string
		form     url.Values
		field    string
		message  string
		keptURL  string // the base URL value the form must show again ("" = none)
		notShown string // input that must not be echoed
	}{
		{"relative URL", url.Values{"base_url": {"worldtree.example/api"}, "default_key": {wtDefaultKey}},
			"base_url", "scheme must be http or https", "worldtree.example/api", ""},
		{"query in URL", url.Values{"base_url": {"https://wt.example/?x=<y>"}, "default_key": {wtDefaultKey}},
			"base_url", "must not have a query", "https://wt.example/?x=&lt;y&gt;", "<y>"},
		{"credentials in URL are not echoed", url.Values{"base_url": {"https://bob:hunter2secret@wt.example"}, "default_key": {wtDefaultKey}},
			"base_url", "user name or password", "", "hunter2secret"},
		{"credentials without a scheme are not echoed", url.Values{"base_url": {"bob:hunter2secret@wt.example"}, "default_key": {wtDefaultKey}},
			"base_url", "user name or password", "", "hunter2secret"},
		{"credentials after a one-slash scheme are not echoed", url.Values{"base_url": {"https:/bob:hunter2secret@wt.example"}, "default_key": {wtDefaultKey}},
			"base_url", "user name or password", "", "hunter2secret"},
		{"consumer key equal to the default key", url.Values{"base_url": {"https://wt.example"}, "default_key": {wtDefaultKey}, "consumer_key": {wtDefaultKey}},
			"consumer_key", "must differ from the default key", "https://wt.example", ""},
		{"missing default key", url.Values{"base_url": {"https://wt.example"}},
			"default_key", "Enter the Worldtree API key", "https://wt.example", ""},
		{"key with spaces", url.Values{"base_url": {"https://wt.example"}, "default_key": {"two words"}},
			"default_key", "space, control or non-ASCII", "https://wt.example", "two words"},
		{"key and clear", url.Values{"base_url": {"https://wt.example"}, "default_key": {wtDefaultKey}, "consumer_key": {wtConsumerKey}, "clear_consumer_key": {"1"}},
			"consumer_key", "not both", "https://wt.example", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, c := signedIn(t)
			c.get("/settings")
			res := c.post("/settings/worldtree", tt.form)
			wantStatus(t, res, http.StatusUnprocessableEntity)
			wantBody(t, res, `data-testid="error-`+tt.field+`"`, tt.message, "The Worldtree settings were not saved", `data-testid="card-password"`)
			if tt.keptURL != "" {
				wantBody(t, res, `value="`+tt.keptURL+`"`)
			} else if strings.Contains(res.body, `id="wt-base-url" name="base_url" type="url" value=`) {
				t.Error("base URL echoed back")
			}
			if tt.notShown != "" && strings.Contains(res.body, tt.notShown) {
				t.Errorf("response echoes %q", tt.notShown)
			}
			wantNoKeys(t, "error page", res.body)
			if loadWT(t, h).Configured() || h.auditCount(settings.AuditActionWorldtree) != 0 {
				t.Fatal("refused input was stored or audited")
			}
		})
	}
}

func TestWorldtreePageRendersServer(t *testing.T) {
	h, c := signedIn(t)
	wt := newFakeWorldtree(t)
	configureWorldtree(t, c, allKeysForm(wt.URL))
	_ = h

	page := c.get("/worldtree")
	wantStatus(t, page, http.StatusOK)
	wantBody(t, page,
		// identity and scopes
		"alice", "kimi appliance", "a1b2c3d4", "conversations.read", "persona.read",
		// ephemeral templates
		"echo", "glm5-turbo, glm4.7", "32.0 KiB",
		// agents, traits, escaped description
		"Mimir", "v0.2.0", "Keeper of the &lt;Well&gt;", "ocean.openness", "0.8", "contemplative", "knowledge_base",
		// live PAD with baseline, dominant emotion
		`data-testid="worldtree-pad-pleasure">0.52`, "baseline 0.5", `data-testid="worldtree-pad-arousal">0.47`, "curiosity", "2026-05-25 22:30 UTC",
		// persona not configured for domari
		"No persona is configured for this agent",
		// sessions
		"sess-one", "First &lt;chat&gt;", "demo", `href="/worldtree?cursor=cur%2Fpage%2B2%3D%3D"`, "Include archived",
	)
	if strings.Contains(page.body, "<Well>") || strings.Contains(page.body, "<chat>") {
		t.Error("server text rendered unescaped")
	}
	if got := wt.seen("/sessions"); len(got) != 1 || got[0].URL.RawQuery != "limit=25" {
		t.Fatalf("/sessions requests %v, want one with limit=25", got)
	}
	if n := len(wt.seen("/agents/domari/persona_state")) + len(wt.seen("/agents/mimir/persona_state")); n != 2 {
		t.Errorf("%d persona reads, want 2", n)
	}
}

func TestWorldtreeSessionPaging(t *testing.T) {
	_, c := signedIn(t)
	wt := newFakeWorldtree(t)
	configureWorldtree(t, c, allKeysForm(wt.URL))

	page := c.get("/worldtree?cursor=" + url.QueryEscape("cur/page+2=="))
	wantStatus(t, page, http.StatusOK)
	wantBody(t, page, "sess-two", "archived", `data-testid="page-first"`, `href="/worldtree"`)
	if strings.Contains(page.body, "sess-one") || strings.Contains(page.body, `data-testid="page-next"`) {
		t.Error("second page shows the first page's session or a next link")
	}
	reqs := wt.seen("/sessions")
	last := reqs[len(reqs)-1]
	if got := last.URL.Query().Get("cursor"); got != "cur/page+2==" {
		t.Fatalf("cursor passed to Worldtree = %q, want it unchanged", got)
	}

	// The include-archived toggle reaches Worldtree and is kept in the next link.
	page = c.get("/worldtree?archived=1")
	wantBody(t, page, "Hide archived", `href="/worldtree?archived=1&amp;cursor=cur%2Fpage%2B2%3D%3D"`)
	reqs = wt.seen("/sessions")
	if q := reqs[len(reqs)-1].URL.Query(); q.Get("include_archived") != "true" || q.Has("cursor") {
		t.Fatalf("archived first page query = %v", q)
	}

	// A cursor Worldtree rejects explains itself and offers the first page; other sections still render.
	page = c.get("/worldtree?cursor=stale")
	wantStatus(t, page, http.StatusOK)
	wantBody(t, page, `data-testid="worldtree-error-sessions"`, "Start again from the first page", "Back to the first page", "Mimir", "alice")

	// An absurd cursor is refused before it reaches Worldtree.
	before := len(wt.seen("/sessions"))
	wantStatus(t, c.get("/worldtree?cursor="+strings.Repeat("x", worldtreeMaxCursor+1)), http.StatusBadRequest)
	if len(wt.seen("/sessions")) != before {
		t.Error("an over-long cursor was sent to Worldtree")
	}
}

func TestWorldtreeSectionErrors(t *testing.T) {
	_, c := signedIn(t)
	wt := newFakeWorldtree(t)
	configureWorldtree(t, c, allKeysForm(wt.URL))

	wt.mu.Lock()
	wt.personaError["mimir"] = `403 {"detail":{"error_code":"auth_scope_denied","message":"missing scope"}}`
	wt.meStatus = http.StatusUnauthorized
	wt.mu.Unlock()

	page := c.get("/worldtree")
	wantStatus(t, page, http.StatusOK)
	// The 403 names the scope; the 401 names the key to check; the other sections still render.
	wantBody(t, page, `lacks the &#34;persona.read&#34; scope`, `data-testid="worldtree-error-identity"`,
		"Worldtree rejected the API key (401)", "Mimir", "echo", "sess-one")
	wantNoKeys(t, "page with errors", page.body)

	// Worldtree down: the page still renders, and says so once instead of in every section.
	wt.Close()
	page = c.get("/worldtree")
	wantStatus(t, page, http.StatusOK)
	for _, section := range []string{"identity", "templates", "agents", "sessions"} {
		if strings.Contains(page.body, `data-testid="worldtree-error-`+section+`"`) {
			t.Errorf("section %s repeats the page-level cause", section)
		}
	}
	if n := strings.Count(page.body, "Could not reach the Worldtree server"); n != 1 {
		t.Errorf("the cause shows %d times, want once", n)
	}
}

func TestWorldtreeNavOnlyWhenConfigured(t *testing.T) {
	h, c := signedIn(t)
	const link = `data-testid="nav-worldtree"`
	for _, p := range []string{"/", "/settings", "/audit"} {
		if strings.Contains(c.get(p).body, link) {
			t.Fatalf("%s links Worldtree before it is configured", p)
		}
	}
	empty := c.get("/worldtree")
	wantStatus(t, empty, http.StatusOK)
	wantBody(t, empty, "Worldtree is not configured", `href="/settings#worldtree"`)

	wt := newFakeWorldtree(t)
	configureWorldtree(t, c, allKeysForm(wt.URL))
	for _, p := range []string{"/", "/settings", "/audit"} {
		if !strings.Contains(c.get(p).body, link) {
			t.Fatalf("%s lacks the Worldtree link once configured", p)
		}
	}
	// A second server over the same database (a restart) reads the state from the store.
	srv2, err := New(h.srv.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv2.Close)
	ts2 := httptest.NewServer(srv2.Handler())
	t.Cleanup(ts2.Close)
	h2 := &harness{t: t, st: h.st, auth: h.auth, srv: srv2, ts: ts2, clk: h.clk, logs: h.logs}
	c2 := h2.newClient()
	c2.login(testUser, testPassword)
	if !strings.Contains(c2.get("/").body, link) {
		t.Fatal("a restarted server does not link the configured Worldtree")
	}

	c.get("/settings")
	wantStatus(t, c.post("/settings/worldtree/remove", url.Values{"confirm": {"yes"}}), http.StatusSeeOther)
	if strings.Contains(c.get("/").body, link) {
		t.Fatal("Worldtree still linked after removal")
	}
}

// TestWorldtreeSessionsScopeDeniedNamesScope checks a key without the scope to list sessions gets
// a message naming that scope, taken from Worldtree's message or, without one, from the endpoint.
func TestWorldtreeSessionsScopeDeniedNamesScope(t *testing.T) {
	_, c := signedIn(t)
	wt := newFakeWorldtree(t)
	configureWorldtree(t, c, allKeysForm(wt.URL))
	for _, body := range []string{
		`{"detail":{"error_code":"auth_scope_denied","message":"Missing required scope: conversations.read"}}`,
		`{"detail":"Forbidden"}`,
	} {
		wt.mu.Lock()
		wt.sessions403 = body
		wt.mu.Unlock()
		page := c.get("/worldtree")
		wantStatus(t, page, http.StatusOK)
		wantBody(t, page, `data-testid="worldtree-error-sessions"`, `lacks the &#34;conversations.read&#34; scope`, "Mimir", "alice")
		wantNoKeys(t, "page with a sessions 403", page.body)
	}
}

// TestWorldtreeOverlongNextCursorNotLinked checks a next-page cursor the page would refuse is not
// offered as a link that always fails, and the operator is told why paging stops.
func TestWorldtreeOverlongNextCursorNotLinked(t *testing.T) {
	_, c := signedIn(t)
	wt := newFakeWorldtree(t)
	configureWorldtree(t, c, allKeysForm(wt.URL))
	long := strings.Repeat("c", worldtreeMaxCursor+1)
	wt.mu.Lock()
	wt.sessionPages[""] = `{"items":[{"session_id":"sess-one","agent_id":"mimir"}],"next_cursor":"` + long + `"}`
	wt.mu.Unlock()
	page := c.get("/worldtree")
	wantStatus(t, page, http.StatusOK)
	wantBody(t, page, "sess-one", "next-page cursor is too long")
	if strings.Contains(page.body, long) || strings.Contains(page.body, `data-testid="page-next"`) {
		t.Error("an over-long cursor is linked")
	}
}

// TestWorldtreePageNeverRendersEchoedKeys points the page at a server that echoes the bearer key
// into every error it sends (error_code, message, body), with a long and a short default key.
func TestWorldtreePageNeverRendersEchoedKeys(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		status := http.StatusInternalServerError
		switch r.URL.Path {
		case "/me":
			status = http.StatusUnauthorized
		case "/sessions":
			status = http.StatusForbidden
		case "/agents":
			status = http.StatusUnprocessableEntity
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"detail":{"error_code":"bad_`+tok+`","message":"Missing required scope: `+tok+` for `+tok+`"}}`)
	}))
	t.Cleanup(echo.Close)
	for _, key := range []string{wtDefaultKey, "k3y-a1"} {
		t.Run(key, func(t *testing.T) {
			h, c := signedIn(t)
			// The save's connection test fails (401): the result shows beside the form.
			saveWorldtree(t, c, url.Values{"base_url": {echo.URL}, "default_key": {key}}, "/settings#worldtree")
			if res := c.get("/settings"); strings.Contains(res.body, key) {
				t.Errorf("the settings page renders the echoed key %q", key)
			}
			page := c.get("/worldtree")
			wantStatus(t, page, http.StatusOK)
			for _, section := range []string{"identity", "templates", "agents", "sessions"} {
				wantBody(t, page, `data-testid="worldtree-error-`+section+`"`)
			}
			if strings.Contains(page.body, key) {
				t.Errorf("the page renders the echoed key %q", key)
			}
			if strings.Contains(h.logs.String(), key) {
				t.Errorf("the logs contain the key %q", key)
			}
		})
	}
}

// closedURL returns the address of a loopback port that refuses connections.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// TestWorldtreeSaveTestsTheConnection saves the settings against a server that answers and one
// that is unreachable: each save is stored and reported by exactly one message, and an
// unreachable server's page shows one notice instead of an error per section.
func TestWorldtreeSaveTestsTheConnection(t *testing.T) {
	const connected = "Saved. Connected as alice (scopes conversations.read, persona.read)."
	const unreachable = "Saved, but Worldtree could not be reached: Could not reach the Worldtree server (connection refused)."
	tests := []struct {
		name     string
		base     func(t *testing.T) string
		location string // where the save redirects
		page     string // the page that shows the result once
		result   string
	}{
		{"good server", func(t *testing.T) string { return newFakeWorldtree(t).URL }, "/worldtree", "/worldtree", connected},
		{"closed loopback port", closedURL, "/settings#worldtree", "/settings", unreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, c := signedIn(t)
			base := tt.base(t)
			saveWorldtree(t, c, allKeysForm(base), tt.location)
			if got := loadWT(t, h); got.BaseURL != base || got.DefaultKey != wtDefaultKey {
				t.Fatalf("stored %v, want the saved settings whatever the test found", got)
			}
			if n := h.auditCount(settings.AuditActionWorldtree); n != 1 {
				t.Errorf("%d audit rows, want 1", n)
			}
			page := c.get(tt.page)
			wantStatus(t, page, http.StatusOK)
			if n := strings.Count(page.body, tt.result); n != 1 {
				t.Errorf("%s shows the result %d times, want once:\n%s", tt.page, n, page.body)
			}
			if n := strings.Count(page.body, "Saved"); n != 1 {
				t.Errorf("%s has %d save messages, want one", tt.page, n)
			}
			if n := strings.Count(page.body, `data-testid="worldtree-error-`); n != 0 {
				t.Errorf("%s shows %d section errors, want none", tt.page, n)
			}
			wantNoKeys(t, tt.page, page.body)
			if again := c.get(tt.page); strings.Contains(again.body, tt.result) {
				t.Errorf("%s shows the save result again on the next view", tt.page)
			}
		})
	}
}

// TestWorldtreePageOneNoticeWhenUnreachable checks a page whose four sections all fail with the
// same cause shows that cause once, as a page-level notice, and no section.
func TestWorldtreePageOneNoticeWhenUnreachable(t *testing.T) {
	_, c := signedIn(t)
	saveWorldtree(t, c, allKeysForm(closedURL(t)), "/settings#worldtree")
	page := c.get("/worldtree")
	wantStatus(t, page, http.StatusOK)
	const cause = "Could not reach the Worldtree server (connection refused)."
	if n := strings.Count(page.body, cause); n != 1 {
		t.Errorf("the cause shows %d times, want once:\n%s", n, page.body)
	}
	wantBody(t, page, `data-testid="worldtree-notice"`)
	for _, section := range []string{"identity", "templates", "agents", "sessions"} {
		if strings.Contains(page.body, `data-testid="worldtree-error-`+section+`"`) ||
			strings.Contains(page.body, `data-testid="worldtree-`+section+`"`) {
			t.Errorf("section %s shown for an unreachable server", section)
		}
	}
}

// TestWorldtreeSaveResultNeverRendersEchoedKeys points the save's connection test at a server
// that answers /me with the key it was sent as the user id and a scope.
func TestWorldtreeSaveResultNeverRendersEchoedKeys(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"user_id":"`+tok+`","scopes":["`+tok+`"]}`)
	}))
	t.Cleanup(echo.Close)
	_, c := signedIn(t)
	configureWorldtree(t, c, allKeysForm(echo.URL))
	page := c.get("/worldtree")
	wantBody(t, page, "Saved. Connected as [REDACTED] (scopes [REDACTED]).")
}
