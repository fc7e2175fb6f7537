package admin

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// scenario is one HTTP request against a fresh harness and what it must do,
// as PocketBase's tests.ApiScenario: the status, the redirect, text that must
// and must not appear, and — the column that keeps "every mutation writes an
// audit row" true — the audit actions this request writes, in order.
//
// Every scenario runs on its own harness (a fresh SQLite file with the admin
// created, unless noAdmin), so no scenario sees another's state.
type scenario struct {
	name        string
	method, url string // url, form values and wantContains may hold {name}: h.vars["name"] (see withSetupToken)
	form        url.Values
	headers     map[string]string
	// signedIn signs the client in first; otherwise it only opens /login
	// to get a pre-session CSRF token (its audit rows, if any, are before
	// the request and not counted).
	signedIn bool
	noCSRF   bool // send no _csrf field
	noAdmin  bool // no admin account (first-run scenarios)
	opts     []func(*Options)
	// setup prepares the harness before the request (after sign-in).
	setup func(t *testing.T, h *harness)

	wantStatus      int
	wantLocation    string // exact Location header; "" = not checked
	wantContains    []string
	wantNotContains []string
	// wantAudit lists the actions the request writes, in order, and no
	// others; wantNoAudit says a request writes none. A request that is
	// not GET or HEAD must set one of the two, so a table cannot forget.
	wantAudit   []string
	wantNoAudit bool
	// check makes further assertions on the state after the request.
	check func(t *testing.T, h *harness, c *client, res *response)
}

// withSetupToken mints a set-up token for the scenario, as {token}.
func withSetupToken(t *testing.T, h *harness) {
	t.Helper()
	tok, _, err := h.auth.NewSetupToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.vars["token"] = tok
}

// expand replaces every {name} in s by h.vars[name].
func (h *harness) expand(s string) string {
	for k, v := range h.vars {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// auditWithoutAddress returns the actions of the audit rows after id that
// record no client address, oldest first.
func (h *harness) auditWithoutAddress(after int64) []string {
	h.t.Helper()
	var bare []string
	rows, err := h.st.Reader().Query(`SELECT action FROM kimi_audit_log WHERE id > ? AND COALESCE(ip, '') = '' ORDER BY id`, after)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var action string
		if err := rows.Scan(&action); err != nil {
			h.t.Fatal(err)
		}
		bare = append(bare, action)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return bare
}

// auditActions returns the actions of the audit rows after id, oldest
// first, and the newest id.
func (h *harness) auditActions(after int64) ([]string, int64) {
	h.t.Helper()
	rows, err := h.st.Reader().Query(`SELECT id, action FROM kimi_audit_log WHERE id > ? ORDER BY id`, after)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var actions []string
	last := after
	for rows.Next() {
		var action string
		if err := rows.Scan(&last, &action); err != nil {
			h.t.Fatal(err)
		}
		actions = append(actions, action)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return actions, last
}

func runScenarios(t *testing.T, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { sc.run(t) })
	}
}

func (sc scenario) run(t *testing.T) {
	readOnly := sc.method == http.MethodGet || sc.method == http.MethodHead
	switch {
	case sc.wantNoAudit && len(sc.wantAudit) > 0:
		t.Fatal("scenario sets both wantAudit and wantNoAudit")
	case !readOnly && !sc.wantNoAudit && len(sc.wantAudit) == 0:
		t.Fatalf("%s scenario states no audit expectation: set wantAudit or wantNoAudit", sc.method)
	case sc.wantStatus == 0:
		t.Fatal("scenario has no wantStatus")
	}
	h := newHarness(t, sc.opts...)
	if !sc.noAdmin {
		h.createAdmin()
	}
	c := h.newClient()
	if sc.signedIn {
		c.login(testUser, testPassword)
	} else {
		c.get("/login")
	}
	if sc.setup != nil {
		sc.setup(t, h)
	}
	if sc.signedIn {
		c.get("/settings") // the CSRF token of the session as it is now
	}
	_, before := h.auditActions(0)

	target := h.expand(sc.url)
	var headers []string
	for k, v := range sc.headers {
		headers = append(headers, k, v)
	}
	var res *response
	if readOnly {
		res = c.get(target, headers...)
	} else {
		form := url.Values{}
		for k, vs := range sc.form {
			for _, v := range vs {
				form.Add(k, h.expand(v))
			}
		}
		if sc.noCSRF {
			form.Set("_csrf", "-")
		}
		res = c.send(sc.method, target, form, headers...)
	}

	if res.StatusCode != sc.wantStatus {
		t.Errorf("%s %s = %d, want %d; body: %.400s", sc.method, sc.url, res.StatusCode, sc.wantStatus, res.body)
	}
	if sc.wantLocation != "" {
		if got := res.Header.Get("Location"); got != sc.wantLocation {
			t.Errorf("Location = %q, want %q", got, sc.wantLocation)
		}
	}
	for _, want := range sc.wantContains {
		if want = h.expand(want); !strings.Contains(res.body, want) {
			t.Errorf("body lacks %q", want)
		}
	}
	for _, bad := range sc.wantNotContains {
		if strings.Contains(res.body, bad) {
			t.Errorf("body contains %q", bad)
		}
	}
	if got, _ := h.auditActions(before); !slices.Equal(got, sc.wantAudit) {
		t.Errorf("audit rows written = %q, want exactly %q", got, sc.wantAudit)
	}
	if bare := h.auditWithoutAddress(before); len(bare) > 0 {
		t.Errorf("audit rows written for the request without its address: %q", bare)
	}
	if sc.check != nil {
		sc.check(t, h, c, res)
	}
}

// auditExempt lists the state-changing routes that need no scenario with an
// audit row, each with the reason. HEAD routes are read-only and not listed.
// Everything else — including /login, whose failures write rows too, and
// /logout — must have one.
var auditExempt = map[string]string{}

// TestEveryMutationIsAudited walks the route table: every route that is not
// GET or HEAD appears in at least one scenario that writes an audit row, so
// a new mutation without its row (or without a scenario) fails the suite.
func TestEveryMutationIsAudited(t *testing.T) {
	h := newHarness(t)
	var audited []string // method and path of each scenario that writes a row
	for _, sc := range allScenarios() {
		if len(sc.wantAudit) > 0 {
			path, _, _ := strings.Cut(sc.url, "?")
			audited = append(audited, sc.method+" "+path)
		}
	}
	n := 0
	for _, r := range h.srv.echo.Routes() {
		switch r.Method {
		case http.MethodGet, http.MethodHead, "echo_route_not_found":
			continue
		}
		n++
		key := r.Method + " " + r.Path
		if _, ok := auditExempt[key]; ok {
			continue
		}
		if !slices.ContainsFunc(audited, func(a string) bool { return routeMatches(key, a) }) {
			t.Errorf("%s: no scenario writes an audit row for this mutation (add one to a scenario table, or list it in auditExempt with the reason)", key)
		}
	}
	if n < 8 {
		t.Errorf("only %d mutations in the route table; route walk broken?", n)
	}
	for key := range auditExempt {
		if slices.ContainsFunc(audited, func(a string) bool { return routeMatches(key, a) }) {
			t.Errorf("%s is exempt but has an audited scenario: drop the exemption", key)
		}
	}
}

// routeMatches reports whether a request "METHOD /path" is one of the route
// "METHOD /pattern": a ":param" segment of the pattern matches any one
// segment ("/guilds/:id/setup" matches "/guilds/42/setup").
func routeMatches(route, request string) bool {
	rs, qs := strings.Split(route, "/"), strings.Split(request, "/")
	if len(rs) != len(qs) {
		return false
	}
	for i := range rs {
		if rs[i] != qs[i] && !(strings.HasPrefix(rs[i], ":") && qs[i] != "") {
			return false
		}
	}
	return true
}

// allScenarios is every scenario table, for the meta-test above.
func allScenarios() []scenario {
	return slices.Concat(setupScenarios, loginScenarios, csrfScenarios, settingsScenarios, confirmScenarios, pageScenarios, guildScenarios, moduleScenarios, moduleJobScenarios, demoScenarios, demoInteractScenarios, discordScenarios, assistantScenarios, assistantBehaviourScenarios, assistantLimitsScenarios, assistantRetentionScenarios, assistantConversationScenarios, proposalScenarios, proposalRollbackScenarios, resultScenarios, taskScenarios, taskRunScenarios, nameScenarios, checklistScenarios, demoLinkScenarios)
}
