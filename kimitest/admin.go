package kimitest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Admin is a browser without JavaScript signed in to the appliance's
// admin as its operator: a cookie jar, no automatic redirects, and the
// last CSRF token a page carried, which Post sends. Appliance.Admin
// returns one.
type Admin struct {
	a    *Appliance
	http *http.Client
	csrf string
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// Admin signs in to the admin (AdminUsername, AdminPassword) and returns
// the signed-in client. It fails the test when the sign-in is refused.
func (a *Appliance) Admin() *Admin {
	a.t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		a.t.Fatalf("kimitest: %v", err)
	}
	c := &Admin{a: a, http: &http.Client{Jar: jar, Transport: &http.Transport{Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	c.Get("/login")
	code, _, loc := c.Post("/login", url.Values{"username": {AdminUsername}, "password": {AdminPassword}})
	if code != http.StatusSeeOther || loc != "/" {
		a.t.Fatalf("kimitest: sign in to the admin: %d to %q", code, loc)
	}
	a.t.Cleanup(c.http.CloseIdleConnections)
	return c
}

// Get fetches an admin page (path from the admin's root, "/modules") and
// returns its status and body.
func (c *Admin) Get(path string) (int, string) {
	c.a.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.a.URL()+path, nil)
	if err != nil {
		c.a.t.Fatalf("kimitest: %v", err)
	}
	code, body, _ := c.Do(req)
	return code, body
}

// Post submits a form with the last CSRF token seen, as the page's form
// would, and returns the status, body and Location (a redirect's target).
func (c *Admin) Post(path string, form url.Values) (int, string, string) {
	c.a.t.Helper()
	form.Set("_csrf", c.csrf)
	req, err := http.NewRequest(http.MethodPost, c.a.URL()+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.a.t.Fatalf("kimitest: %v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.Do(req)
}

// Do sends req with the session's cookies and returns the status, body
// and Location; it keeps the body's CSRF token for the next Post.
func (c *Admin) Do(req *http.Request) (int, string, string) {
	c.a.t.Helper()
	res, err := c.http.Do(req)
	if err != nil {
		c.a.t.Fatalf("kimitest: %s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.a.t.Fatalf("kimitest: %s %s: %v", req.Method, req.URL, err)
	}
	if m := csrfField.FindStringSubmatch(string(b)); m != nil {
		c.csrf = m[1]
	}
	return res.StatusCode, string(b), res.Header.Get("Location")
}

// CSRF is the last CSRF token a page carried (for a request built by
// hand and sent with Do).
func (c *Admin) CSRF() string { return c.csrf }

// WaitPage fetches a page until it answers 200 with every one of parts in
// its body, and returns that body; it fails the test after the
// appliance's wait. A page has no change signal a client without
// JavaScript can wait on, so this one re-fetches, at most every 10 ms.
func (c *Admin) WaitPage(path string, parts ...string) string {
	c.a.t.Helper()
	deadline := time.Now().Add(c.a.o.wait)
	for {
		code, body := c.Get(path)
		if code == http.StatusOK && containsAll(body, parts) {
			return body
		}
		if time.Now().After(deadline) {
			c.a.t.Fatalf("kimitest: %s did not show %q within %s (status %d):\n%s", path, parts, c.a.o.wait, code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// HTTPClient is the signed-in client itself (its cookie jar holds the
// session; it follows no redirects), for a request whose body is read as
// it streams, such as a live region's events.
func (c *Admin) HTTPClient() *http.Client { return c.http }
