package admin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// loginWith posts a sign-in from ip carrying cookies (besides the CSRF
// cookie) and returns the status and the cookies set.
func loginWith(t *testing.T, h *harness, csrf, ip, username, password string, cookies ...*http.Cookie) (int, []*http.Cookie) {
	t.Helper()
	form := url.Values{"_csrf": {csrf}, "username": {username}, "password": {password}}
	req, err := http.NewRequest(http.MethodPost, h.ts.URL+"/login", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", ip)
	req.AddCookie(&http.Cookie{Name: csrfCookie, Value: csrf})
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, res.Cookies()
}

// TestDeviceCookieBeatsTheLockout reproduces the audit's lock-out: two
// addresses, each inside its own budget, spend the admin account's budget
// and keep it empty, so the admin's correct password is refused (429). A
// browser that signed in before carries a device cookie and still gets in;
// one without, a device cookie for another account, or a forged one does
// not. The per-client budget still holds for the device.
func TestDeviceCookieBeatsTheLockout(t *testing.T) {
	h := newHarness(t, loopbackProxy)
	h.createAdmin()
	csrf := preSessionCSRF(t, h)

	// The admin signs in once from their browser: a device cookie.
	status, set := loginWith(t, h, csrf, "192.0.2.10", testUser, testPassword)
	var device *http.Cookie
	for _, ck := range set {
		if ck.Name == deviceCookie && ck.Value != "" {
			device = ck
		}
	}
	if status != http.StatusSeeOther || device == nil {
		t.Fatalf("first sign-in = %d with cookies %v, want 303 and a %s cookie", status, set, deviceCookie)
	}
	if !device.HttpOnly || device.SameSite != http.SameSiteStrictMode || device.MaxAge < 300*24*3600 {
		t.Errorf("device cookie %+v: want HttpOnly, SameSite=Strict, a long life", device)
	}

	// Two guessers spend the account's budget (within their own budgets).
	for i := range h.srv.opts.UserBurst {
		ip := fmt.Sprintf("198.51.100.%d", 1+i%2)
		if st, _ := loginWith(t, h, csrf, ip, testUser, fmt.Sprintf("guess-%d", i)); st != http.StatusUnauthorized && st != http.StatusTooManyRequests {
			t.Fatalf("guess %d = %d", i, st)
		}
	}
	if st, _ := loginWith(t, h, csrf, "198.51.100.3", strings.ToUpper(testUser), "guess"); st != http.StatusTooManyRequests {
		t.Fatalf("a guess past the account budget (other case) = %d, want 429", st)
	}

	forged := &http.Cookie{Name: deviceCookie, Value: strings.Repeat("A", 26) + "." + strings.Repeat("x", 43)}
	tests := []struct {
		name   string
		cookie *http.Cookie
		want   int
	}{
		{"no device cookie: locked out", nil, http.StatusTooManyRequests},
		{"forged device cookie: locked out", forged, http.StatusTooManyRequests},
		{"malformed device cookie: locked out", &http.Cookie{Name: deviceCookie, Value: "x"}, http.StatusTooManyRequests},
		{"the admin's device: signed in", device, http.StatusSeeOther},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cks []*http.Cookie
			if tt.cookie != nil {
				cks = append(cks, tt.cookie)
			}
			if st, _ := loginWith(t, h, csrf, fmt.Sprintf("192.0.2.%d", 20+i), testUser, testPassword, cks...); st != tt.want {
				t.Errorf("status %d, want %d", st, tt.want)
			}
		})
	}

	// A device cookie counts only for the account it was issued for.
	if err := h.auth.CreateAdmin(context.Background(), "second", testPassword, "test"); err != nil {
		t.Fatal(err)
	}
	for i := range h.srv.opts.UserBurst + 1 {
		loginWith(t, h, csrf, fmt.Sprintf("198.51.100.%d", 11+i%3), "second", "guess")
	}
	if st, _ := loginWith(t, h, csrf, "192.0.2.40", "second", testPassword, device); st != http.StatusTooManyRequests {
		t.Errorf("another account's device cookie let a locked-out account in: %d", st)
	}

	// The device still meets the per-client budget.
	n := 0
	for ; n < h.srv.opts.LoginBurst+1; n++ {
		if st, _ := loginWith(t, h, csrf, "192.0.2.99", testUser, "wrong", device); st == http.StatusTooManyRequests {
			break
		}
	}
	if n != h.srv.opts.LoginBurst {
		t.Errorf("the device's client was refused after %d attempts, want its budget of %d", n, h.srv.opts.LoginBurst)
	}
}
