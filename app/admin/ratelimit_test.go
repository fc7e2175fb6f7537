package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestLoginRateLimitCannotBeDodged: the per-client sign-in budget holds
// against a spoofed X-Forwarded-For when no proxy is trusted, follows the
// real client behind a trusted proxy, and treats an IPv6 /64 (what one
// subscriber is routed) as one client, so rotating addresses inside it does
// not buy more attempts.
func TestLoginRateLimitCannotBeDodged(t *testing.T) {
	const burst = 2
	tests := []struct {
		name       string
		trustProxy bool
		// forwarded returns the X-Forwarded-For of attempt i ("" = none).
		forwarded func(i int) string
		// limitedAfter is how many attempts pass before the first 429
		// (-1: none of the attempts is limited).
		limitedAfter int
	}{
		{"spoofed header without a trusted proxy", false, func(i int) string { return fmt.Sprintf("203.0.113.%d", i+1) }, burst},
		{"one client behind a trusted proxy", true, func(int) string { return "203.0.113.7" }, burst},
		{"different clients behind a trusted proxy", true, func(i int) string { return fmt.Sprintf("203.0.113.%d", i+1) }, -1},
		{"rotating addresses inside one IPv6 /64", true, func(i int) string { return fmt.Sprintf("2001:db8:1:2::%x", i+1) }, burst},
		{"rotating IPv4-mapped IPv6 spellings", true, func(i int) string {
			if i%2 == 0 {
				return "203.0.113.9"
			}
			return "::ffff:203.0.113.9"
		}, burst},
		{"different IPv6 /64s", true, func(i int) string { return fmt.Sprintf("2001:db8:1:%x::1", i+1) }, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options) {
				o.LoginBurst = burst
				o.LoginEvery = time.Hour
				o.TrustProxy = tt.trustProxy
			})
			h.createAdmin()
			c := h.newClient()
			c.get("/login")
			for i := range burst + 3 {
				wrong := url.Values{"username": {testUser}, "password": {"wrong password"}}
				res := c.post("/login", wrong, "X-Forwarded-For", tt.forwarded(i))
				want := http.StatusUnauthorized
				if tt.limitedAfter >= 0 && i >= tt.limitedAfter {
					want = http.StatusTooManyRequests
				}
				if res.StatusCode != want {
					t.Fatalf("attempt %d (X-Forwarded-For %s) = %d, want %d; body: %.300s", i+1, tt.forwarded(i), res.StatusCode, want, res.body)
				}
			}
		})
	}
}

func TestLimiterKey(t *testing.T) {
	tests := []struct{ ip, want string }{
		{"203.0.113.5", "203.0.113.5"},
		{"::ffff:203.0.113.5", "203.0.113.5"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:DB8:1:2::ffff", "2001:db8:1:2::/64"},
		{"::1", "::/64"},
		{"not-an-ip", "not-an-ip"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := limiterKey(tt.ip); got != tt.want {
			t.Errorf("limiterKey(%q) = %q, want %q", tt.ip, got, tt.want)
		}
	}
}

// TestSetupTokenGuessesAreRateLimited: GET /setup?token= answers whether a
// token is live, so guessing through it spends the same per-client budget
// as sign-in and set-up posts; opening /setup without a token does not.
func TestSetupTokenGuessesAreRateLimited(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.LoginBurst = 3; o.LoginEvery = time.Hour })
	c := h.newClient()
	for range 5 {
		wantStatus(t, c.get("/setup"), http.StatusOK) // the "link needed" help page is free
	}
	for i := range 3 {
		res := c.get(fmt.Sprintf("/setup?token=guess-%d", i))
		wantStatus(t, res, http.StatusForbidden)
	}
	res := c.get("/setup?token=guess-3")
	wantStatus(t, res, http.StatusTooManyRequests)
	wantBody(t, res, "Too many attempts")
	// The budget is shared with sign-in.
	c.get("/login")
	res = c.post("/login", url.Values{"username": {testUser}, "password": {testPassword}})
	wantStatus(t, res, http.StatusTooManyRequests)
}
