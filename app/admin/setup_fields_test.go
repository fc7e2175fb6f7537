package admin

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/auth"
)

// wantAdmin checks whether set-up created the admin.
func wantAdmin(want bool) func(*testing.T, *harness, *client, *response) {
	return func(t *testing.T, h *harness, c *client, _ *response) {
		t.Helper()
		has, err := h.auth.HasAdmin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if has != want {
			t.Fatalf("admin exists = %v, want %v", has, want)
		}
		if want {
			wantStatus(t, c.get("/"), http.StatusOK) // and signed in
		}
	}
}

// setupScenarios: /setup takes the fields the set-up contract names —
// username and password (plus the token and _csrf) — so a provisioning
// script that posts exactly those creates the admin. The browser form's
// confirm field, when sent, must still match (an empty one is a mismatch,
// not a skip).
var setupScenarios = []scenario{
	{name: "documented fields: username and password only", method: http.MethodPost, url: "/setup", noAdmin: true, setup: withSetupToken,
		form:       url.Values{"token": {"{token}"}, "username": {testUser}, "password": {testPassword}},
		wantStatus: http.StatusSeeOther, wantLocation: "/", wantAudit: []string{auth.ActionSetup}, check: wantAdmin(true)},
	{name: "documented fields: empty confirm", method: http.MethodPost, url: "/setup", noAdmin: true, setup: withSetupToken,
		form:       url.Values{"token": {"{token}"}, "username": {testUser}, "password": {testPassword}, "confirm": {""}},
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"The passwords do not match"}, wantNoAudit: true, check: wantAdmin(false)},
	{name: "documented fields: different confirm", method: http.MethodPost, url: "/setup", noAdmin: true, setup: withSetupToken,
		form:       url.Values{"token": {"{token}"}, "username": {testUser}, "password": {testPassword}, "confirm": {"other password"}},
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"The passwords do not match"}, wantNoAudit: true, check: wantAdmin(false)},
	{name: "documented fields: matching confirm", method: http.MethodPost, url: "/setup", noAdmin: true, setup: withSetupToken,
		form:       url.Values{"token": {"{token}"}, "username": {testUser}, "password": {testPassword}, "confirm": {testPassword}},
		wantStatus: http.StatusSeeOther, wantLocation: "/", wantAudit: []string{auth.ActionSetup}, check: wantAdmin(true)},

	{name: "no token explains where the link is", method: http.MethodGet, url: "/setup", noAdmin: true, setup: withSetupToken,
		wantStatus: http.StatusOK, wantContains: []string{"Set-up link needed", "/setup?token="}},
	{name: "wrong token", method: http.MethodGet, url: "/setup?token=wrong", noAdmin: true, setup: withSetupToken,
		wantStatus: http.StatusForbidden, wantContains: []string{"not valid"}},
	{name: "live token shows the form", method: http.MethodGet, url: "/setup?token={token}", noAdmin: true, setup: withSetupToken,
		wantStatus: http.StatusOK, wantContains: []string{"Create the admin account", `name="token" value="{token}"`}},
	{name: "bad name and short password", method: http.MethodPost, url: "/setup", noAdmin: true, setup: withSetupToken,
		form:       url.Values{"token": {"{token}"}, "username": {"bad name"}, "password": {"short"}, "confirm": {"short"}},
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"Username must be", "Password must be at least 8 characters"},
		wantNoAudit: true, check: wantAdmin(false)},
	{name: "post with a wrong token", method: http.MethodPost, url: "/setup", noAdmin: true, setup: withSetupToken,
		form:       url.Values{"token": {"wrong"}, "username": {testUser}, "password": {testPassword}, "confirm": {testPassword}},
		wantStatus: http.StatusForbidden, wantNoAudit: true, check: wantAdmin(false)},
	{name: "expired token page", method: http.MethodGet, url: "/setup?token={token}", noAdmin: true,
		setup:      func(t *testing.T, h *harness) { withSetupToken(t, h); h.clk.Add(31 * time.Minute) },
		wantStatus: http.StatusForbidden, wantContains: []string{"expired"}},
	{name: "expired token post", method: http.MethodPost, url: "/setup", noAdmin: true,
		setup:      func(t *testing.T, h *harness) { withSetupToken(t, h); h.clk.Add(31 * time.Minute) },
		form:       url.Values{"token": {"{token}"}, "username": {testUser}, "password": {testPassword}, "confirm": {testPassword}},
		wantStatus: http.StatusForbidden, wantNoAudit: true, check: wantAdmin(false)},
}

func TestSetupScenarios(t *testing.T) { runScenarios(t, setupScenarios) }
