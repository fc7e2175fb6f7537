package app

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeGivesTheAdminTheProposals: `serve` passes its proposals service
// to the admin UI — signed in, /proposals is the inbox (not the 503 of a
// server without the service) and /settings has the notification form.
func TestServeGivesTheAdminTheProposals(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0",
		"KIMI_ADMIN_USERNAME": "admin", "KIMI_ADMIN_PASSWORD": "correct horse battery"}, "")
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() { code <- c.main(ctx, []string{"serve"}) }()
	defer func() {
		cancel()
		select {
		case <-code:
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop after cancel")
		}
	}()
	readyRE := regexp.MustCompile(`msg=ready component=kimi addr=(\S+) url=(\S+)`)
	var base string
	for deadline := time.Now().Add(60 * time.Second); base == ""; time.Sleep(5 * time.Millisecond) {
		if m := readyRE.FindStringSubmatch(stderr.String()); m != nil {
			base = m[2]
		} else if time.Now().After(deadline) {
			t.Fatalf("not ready:\n%s", stderr)
		}
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Transport: &http.Transport{Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string) {
		t.Helper()
		res, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	_, login := get("/login")
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindStringSubmatch(login)
	if m == nil {
		t.Fatalf("no CSRF token on /login")
	}
	res, err := client.PostForm(base+"/login", url.Values{"_csrf": {m[1]}, "username": {"admin"}, "password": {"correct horse battery"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in = %d", res.StatusCode)
	}
	if st, body := get("/proposals"); st != http.StatusOK || !strings.Contains(body, "No proposals yet") {
		t.Fatalf("GET /proposals = %d: %.300s", st, body)
	}
	if st, body := get("/settings"); st != http.StatusOK || !strings.Contains(body, `data-testid="proposal-notify-form"`) {
		t.Fatalf("GET /settings = %d, notification form shown: %t", st, strings.Contains(body, `data-testid="proposal-notify-form"`))
	}
}
