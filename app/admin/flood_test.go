package admin

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/kimiapp/kimi/app/auth"
)

// loopbackProxy trusts the test client's loopback connection as a reverse
// proxy, so X-Forwarded-For gives each request its own client address.
func loopbackProxy(o *Options) {
	o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// preSessionCSRF fetches /login once and returns its pre-session token.
func preSessionCSRF(t *testing.T, h *harness) string {
	t.Helper()
	c := h.newClient()
	c.get("/login")
	tok := c.cookie(csrfCookie)
	if tok == "" {
		t.Fatal("GET /login issued no pre-session CSRF cookie")
	}
	return tok
}

type attempt struct {
	status     int
	retryAfter string
}

// postLogin is one sign-in from client address ip, safe to call from any
// goroutine (it reports errors instead of failing the test).
func postLogin(h *harness, csrf, ip, username, password string) (attempt, error) {
	form := url.Values{"_csrf": {csrf}, "username": {username}, "password": {password}}
	req, err := http.NewRequest(http.MethodPost, h.ts.URL+"/login", strings.NewReader(form.Encode()))
	if err != nil {
		return attempt{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", ip)
	req.AddCookie(&http.Cookie{Name: csrfCookie, Value: csrf})
	res, err := noRedirect.Do(req)
	if err != nil {
		return attempt{}, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return attempt{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After")}, nil
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestDistributedSignInFlood reproduces the flood of issue 7: many source
// addresses, each inside its own budget, all guessing at once. The hashing
// queue is made small and GOMAXPROCS-independent (one worker, one waiting
// slot) and each check slow (bcrypt cost 10), so most of a wave overflows.
// Required: the overflow is answered 503 with Retry-After at once (not 500
// after the request deadline), every attempt whose password was checked has
// its failed-login row, and the real admin signs in afterwards.
func TestDistributedSignInFlood(t *testing.T) {
	h := newHarness(t, loopbackProxy, func(o *Options) {
		o.Auth = auth.New(o.Store, o.Logger, auth.Options{BcryptCost: 10, HashWorkers: 1, HashQueue: 1})
	})
	if err := h.srv.opts.Auth.CreateAdmin(t.Context(), testUser, testPassword, "test"); err != nil {
		t.Fatal(err)
	}
	csrf := preSessionCSRF(t, h)

	const perWave, maxWaves = 40, 5 // a wave that happens not to overflow is followed by another
	checked, refused := 0, 0
	for wave := 0; wave < maxWaves && refused == 0; wave++ {
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			results = make([]attempt, perWave)
			errs    = make([]error, perWave)
		)
		for i := range perWave {
			ip := fmt.Sprintf("198.51.%d.%d", 100+wave, i+1)
			username := fmt.Sprintf("guess-%d-%d", wave, i) // unknown names cost a check too
			if wave == 0 && i < 10 {
				username = testUser // a few guesses at the real name, under its budget
			}
			wg.Go(func() {
				<-start
				results[i], errs[i] = postLogin(h, csrf, ip, username, "wrong-password")
			})
		}
		close(start)
		wg.Wait()
		for i, r := range results {
			if errs[i] != nil {
				t.Fatalf("attempt %d: %v", i, errs[i])
			}
			switch r.status {
			case http.StatusUnauthorized:
				checked++
			case http.StatusServiceUnavailable:
				refused++
				if r.retryAfter != busyRetryAfter {
					t.Errorf("503 with Retry-After %q, want %q", r.retryAfter, busyRetryAfter)
				}
			default:
				t.Errorf("flood attempt answered %d, want 401 (checked) or 503 (queue full)", r.status)
			}
		}
	}
	if refused == 0 {
		t.Fatalf("no attempt of %d waves overflowed a queue of one worker and one waiting slot", maxWaves)
	}
	t.Logf("flood: %d checked (401), %d refused (503)", checked, refused)
	if got := h.auditCount(auth.ActionLoginFailed); got != checked {
		t.Errorf("%d failed-login rows, want %d: one per checked attempt", got, checked)
	}
	if strings.Contains(h.logs.String(), "audit failed login") {
		t.Error("a failed-login audit row could not be written")
	}

	res, err := postLogin(h, csrf, "203.0.113.7", testUser, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	if res.status != http.StatusSeeOther {
		t.Fatalf("real admin after the flood: status %d, want 303", res.status)
	}
}

// TestUsernameBudgetAcrossAddresses: guesses at one username from many
// addresses, each far inside its own budget, stop at the username's budget
// (20, counted case-insensitively); other usernames are unaffected.
func TestUsernameBudgetAcrossAddresses(t *testing.T) {
	h := newHarness(t, loopbackProxy)
	h.createAdmin()
	csrf := preSessionCSRF(t, h)
	spellings := []string{"admin", "Admin", "ADMIN", "aDmIn"}
	for i := range 20 {
		res, err := postLogin(h, csrf, fmt.Sprintf("198.51.100.%d", i+1), spellings[i%len(spellings)], "wrong-password")
		if err != nil {
			t.Fatal(err)
		}
		if res.status != http.StatusUnauthorized {
			t.Fatalf("guess %d = %d, want 401 (inside the username budget)", i+1, res.status)
		}
	}
	tests := []struct {
		name, ip, username, password string
		want                         int
	}{
		{"21st guess at the name from a fresh address", "198.51.100.200", "admin", "wrong-password", http.StatusTooManyRequests},
		{"right password, spent name", "198.51.100.201", "ADMIN", testPassword, http.StatusTooManyRequests},
		{"another username from a fresh address", "198.51.100.202", "operator", "wrong-password", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := postLogin(h, csrf, tt.ip, tt.username, tt.password)
			if err != nil {
				t.Fatal(err)
			}
			if res.status != tt.want {
				t.Fatalf("status %d, want %d", res.status, tt.want)
			}
			if tt.want == http.StatusTooManyRequests && res.retryAfter == "" {
				t.Error("429 without Retry-After")
			}
		})
	}
	if got := h.auditCount(auth.ActionLoginFailed); got != 21 {
		t.Errorf("%d failed-login rows, want 21 (the refused attempts are not checked)", got)
	}
}

// TestFullClientTableKeepsNewcomersBurst: after a spray of distinct
// addresses fills the client table past its cap, a new client still gets
// its whole burst over HTTP (it used to share one overflow bucket with
// every other newcomer).
func TestFullClientTableKeepsNewcomersBurst(t *testing.T) {
	h := newHarness(t, loopbackProxy)
	h.createAdmin()
	now := h.clk.Now()
	for i := range maxBuckets + 100 {
		ip := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		for range h.srv.opts.LoginBurst + 1 {
			h.srv.limiter.allow(clientKey(ip), now)
		}
	}
	csrf := preSessionCSRF(t, h)
	for i := range h.srv.opts.LoginBurst {
		res, err := postLogin(h, csrf, "203.0.113.99", fmt.Sprintf("newcomer-%d", i), "wrong-password")
		if err != nil {
			t.Fatal(err)
		}
		if res.status != http.StatusUnauthorized {
			t.Fatalf("newcomer attempt %d of its burst %d = %d, want 401", i+1, h.srv.opts.LoginBurst, res.status)
		}
	}
	if n := h.srv.limiter.len(); n > maxBuckets {
		t.Errorf("%d client buckets, want at most %d", n, maxBuckets)
	}
}

// TestUsernameBudgetSurvivesUsernameSpray: a guesser who has spent the
// admin's username budget and then sprays maxBuckets made-up usernames
// (1,000 addresses, ten each, are enough) must not get the admin's spent
// budget forgotten: the budget is kept for real accounts only, in buckets
// the table never evicts, so the next guess at the real name is still
// refused. (Were it an LRU table like the per-client one, with a bucket
// made for every username named, existing or not, before the password is
// checked, the spray would evict it.) The spray below goes straight to the
// limiter, exactly as spendAttempt does for each sprayed request, as
// TestFullClientTableKeepsNewcomersBurst does for the client table.
func TestUsernameBudgetSurvivesUsernameSpray(t *testing.T) {
	h := newHarness(t, loopbackProxy)
	h.createAdmin()
	csrf := preSessionCSRF(t, h)
	for i := range h.srv.opts.UserBurst {
		res, err := postLogin(h, csrf, fmt.Sprintf("198.51.100.%d", i+1), testUser, "wrong-password")
		if err != nil {
			t.Fatal(err)
		}
		if res.status != http.StatusUnauthorized {
			t.Fatalf("guess %d = %d, want 401 (inside the username budget)", i+1, res.status)
		}
	}
	res, err := postLogin(h, csrf, "198.51.101.1", testUser, "wrong-password")
	if err != nil {
		t.Fatal(err)
	}
	if res.status != http.StatusTooManyRequests {
		t.Fatalf("guess past the username budget = %d, want 429", res.status)
	}
	// The spray: one attempt per made-up username.
	for i := range maxBuckets {
		h.srv.userLimiter.allow(fmt.Sprintf("spray-%d", i), h.clk.Now())
	}
	res, err = postLogin(h, csrf, "198.51.101.2", testUser, "wrong-password")
	if err != nil {
		t.Fatal(err)
	}
	if res.status != http.StatusTooManyRequests {
		t.Fatalf("guess at %q after a spray of %d made-up usernames = %d, want 429: the spent username budget was forgotten",
			testUser, maxBuckets, res.status)
	}
}

// TestEmptyUsernameSignInIsAudited: form.Login says every attempt, empty
// fields included, goes to the service "so that each failure is
// rate-limited and audited alike", so a sign-in with an empty username
// writes its failed-login row too, with the actor auth.EmptyUsernameActor
// (store.Audit refuses an empty actor: "actor and action are required",
// which would lose the row and log an ERROR line per request — a request
// anyone can send as often as the budget allows).
func TestEmptyUsernameSignInIsAudited(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	csrf := preSessionCSRF(t, h)
	tests := []struct{ name, username string }{
		{"empty username", ""},
		{"named username", "nobody"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.auditCount("auth.login_failed")
			res, err := postLogin(h, csrf, "", tt.username, "some-guess")
			if err != nil {
				t.Fatal(err)
			}
			if res.status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", res.status)
			}
			if got := h.auditCount("auth.login_failed"); got != before+1 {
				t.Errorf("%d new failed-login rows, want 1", got-before)
			}
		})
	}
	if strings.Contains(h.logs.String(), "audit failed login") {
		t.Errorf("a failed sign-in lost its audit row:\n%s", h.logs.String())
	}
	// The audit page says no username was given (not a blank actor).
	c := h.newClient()
	c.login(testUser, testPassword)
	if page := c.get("/audit"); !strings.Contains(page.body, "Someone (no username)") {
		t.Errorf("the audit page does not show the empty-username attempt as such")
	}
}
