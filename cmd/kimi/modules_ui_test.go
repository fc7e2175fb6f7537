package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestModulePagesThroughBinary: the served binary wires the module host
// into the admin (/modules lists the bundled modules and says the
// selection comes from KIMI_MODULES), and SIGTERM with a module event
// stream open shuts down without waiting out the in-flight deadline: the
// stream is ended on shutdown instead of holding Shutdown for 15 s.
func TestModulePagesThroughBinary(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startServer(t, testEnv(dataDir, "KIMI_ADMIN_PASSWORD=correct-horse-battery", "KIMI_MODULES=hello"))
	jar, _ := cookiejar.New(nil)
	c := *httpClient
	c.Jar = jar
	c.Timeout = 0 // the event stream is read below under its own bound
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := c.Get(s.url + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, login := get("/login")
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindStringSubmatch(login)
	if m == nil {
		t.Fatal("no CSRF field on /login")
	}
	resp, err := c.PostForm(s.url+"/login", url.Values{"_csrf": {m[1]}, "username": {"admin"}, "password": {"correct-horse-battery"}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %v %v", err, resp)
	}
	resp.Body.Close()
	status, page := get("/modules")
	for _, want := range []string{`data-testid="module-row-hello"`, `data-testid="module-row-reference_kudos"`, `data-testid="selection-from-env"`} {
		if status != http.StatusOK || !strings.Contains(page, want) {
			t.Fatalf("GET /modules = %d, lacks %s:\n%.800s", status, want, page)
		}
	}

	stream, err := c.Get(s.url + "/modules/events?view=overview")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if ct := stream.Header.Get("Content-Type"); stream.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("GET /modules/events = %d %s", stream.StatusCode, ct)
	}
	first, err := bufio.NewReader(stream.Body).ReadString('\n')
	if err != nil || first != "event: fragment\n" {
		t.Fatalf("first line of the stream %q, %v", first, err)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, s.log())
	}
	if lines := s.linesContaining("did not finish in time"); len(lines) > 0 {
		t.Errorf("shutdown waited for the open event stream: %s", strings.Join(lines, "\n"))
	}
}
