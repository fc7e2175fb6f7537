package admin

import (
	"context"
	"net/http"
	"net/url"
	"testing"
)

// TestSetupWithTheDocumentedFields: /setup takes the fields the set-up
// contract names — username and password (plus the token and _csrf) — so a
// provisioning script that posts exactly those creates the admin. The
// browser form's confirm field, when sent, must still match (an empty one
// is a mismatch, not a skip).
func TestSetupWithTheDocumentedFields(t *testing.T) {
	tests := []struct {
		name   string
		form   url.Values
		status int
	}{
		{"username and password only", url.Values{"username": {testUser}, "password": {testPassword}}, http.StatusSeeOther},
		{"empty confirm", url.Values{"username": {testUser}, "password": {testPassword}, "confirm": {""}}, http.StatusUnprocessableEntity},
		{"different confirm", url.Values{"username": {testUser}, "password": {testPassword}, "confirm": {"other password"}}, http.StatusUnprocessableEntity},
		{"matching confirm", url.Values{"username": {testUser}, "password": {testPassword}, "confirm": {testPassword}}, http.StatusSeeOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			token, _, err := h.auth.NewSetupToken(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			c := h.newClient()
			c.get("/setup?token=" + token)
			tt.form.Set("token", token)
			res := c.post("/setup", tt.form)
			wantStatus(t, res, tt.status)
			has, err := h.auth.HasAdmin(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if created := tt.status == http.StatusSeeOther; has != created {
				t.Fatalf("admin exists = %v, want %v", has, created)
			}
			if tt.status == http.StatusSeeOther {
				if loc := res.Header.Get("Location"); loc != "/" {
					t.Fatalf("Location = %q, want /", loc)
				}
				wantStatus(t, c.get("/"), http.StatusOK)
			} else {
				wantBody(t, res, "The passwords do not match")
			}
		})
	}
}
