package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Mirrors testdata/hangkimi.

// signedInClient signs the admin in on s and returns a client that carries the
// session.
func signedInClient(t *testing.T, s *server, password string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := *httpClient
	c.Jar = jar
	resp, err := c.Get(s.url + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF field on /login; log:\n%s", s.log())
	}
	resp, err = c.PostForm(s.url+"/login", url.Values{"_csrf": {string(m[1])}, "username": {"admin"}, "password": {password}})
	if err != nil || resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign-in while a module starts: %v %v; log:\n%s", err, resp, s.log())
	}
	resp.Body.Close()
	return &c
}

// getWith GETs path on s with c.
func getWith(t *testing.T, c *http.Client, s *server, path string) (int, string) {
	t.Helper()
	resp, err := c.Get(s.url + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// moduleRow returns the state and reason /modules shows for module.
func moduleRow(page, module string) (state, reason string) {
	if m := regexp.MustCompile(`data-testid="module-state-` + module + `" data-state="([^"]*)"`).FindStringSubmatch(page); m != nil {
		state = m[1]
	}
	if m := regexp.MustCompile(`data-testid="module-reason-` + module + `">([^<]*)<`).FindStringSubmatch(page); m != nil {
		reason = m[1]
	}
	return state, reason
}

// TestAdminAnswersWhileAModuleHangsInStart: with a module whose Start
// never returns (ignoring its ctx), the admin is up before any module
// starts: /healthz answers, /readyz says which parts are still starting,
// the admin signs in and /modules shows the module as starting with how
// long it has been; once the start timeout passed the same page shows it
// failed with the timeout's message, the rest of the appliance became
// ready, and nothing was restarted.
func TestAdminAnswersWhileAModuleHangsInStart(t *testing.T) {
	bin := buildTestdata(t, "hangkimi")
	const password = "correct-horse-battery"
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startBinaryUntil(t, listeningRE, bin, testEnv(dataDir, "KIMI_TEST_HANG=start", "KIMI_MODULES=hello,hang_start",
		"KIMI_MODULE_START_TIMEOUT=4s", "KIMI_ADMIN_PASSWORD="+password))
	listening := time.Since(s.began)

	if code, body := s.get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz while a module starts = %d %q", code, body)
	}
	code, body := s.get("/readyz")
	var starting struct{ Starting []string }
	if err := json.Unmarshal([]byte(body), &starting); code != http.StatusServiceUnavailable || err != nil ||
		!slices.Contains(starting.Starting, "modules") {
		t.Fatalf("/readyz while a module starts = %d %q, want 503 naming modules; log:\n%s", code, body, s.log())
	}
	c := signedInClient(t, s, password)
	code, page := getWith(t, c, s, "/modules")
	state, reason := moduleRow(page, "hang_start")
	if code != http.StatusOK || state != "starting" || !strings.Contains(reason, "starting for ") {
		t.Fatalf("/modules while hang_start starts = %d, state %q reason %q; log:\n%s", code, state, reason, s.log())
	}
	if len(s.linesContaining("Kimi module failed: hang_start")) != 0 {
		t.Fatalf("the module had already failed when the admin answered (%s after start): this proves nothing", listening)
	}
	t.Logf("the admin listened %s after the process started", listening)
	// The figure is 1 s (282 ms seen here); the bound is generous
	// for a loaded machine, and far below the 4 s start timeout it must
	// not wait for.
	if listening > 3*time.Second {
		t.Fatalf("the admin listened %s after the process started", listening)
	}

	// The start timeout passes: failed, with its message, on the same
	// running appliance.
	for i := 0; ; i++ {
		code, body = s.get("/readyz")
		if code == http.StatusOK {
			break
		}
		if i > 3000 {
			t.Fatalf("never ready after the module's start timeout: %d %q; log:\n%s", code, body, s.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, page = getWith(t, c, s, "/modules")
	state, reason = moduleRow(page, "hang_start")
	if state != "failed" || !strings.Contains(reason, "start() exceeded 4s") {
		t.Fatalf("/modules after the timeout: state %q reason %q", state, reason)
	}
	if state, _ := moduleRow(page, "hello"); state != "running" {
		t.Fatalf("hello is %q beside the hung module", state)
	}
	if n := len(s.linesContaining(`msg=starting component=kimi version=`)); n != 1 {
		t.Fatalf("the appliance started %d times", n)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d; log:\n%s", code, s.log())
	}
}

// TestSIGTERMWithinTheShutdownBound: SIGTERM with one module hung in
// Close and another hung in an event handler (both ignoring their ctx)
// still exits 0 within the 15 s README states, with the database
// checkpointed: each hang is abandoned within its part's budget and
// logged. The bound is the product's promise to a process manager, so
// this one test measures it.
func TestSIGTERMWithinTheShutdownBound(t *testing.T) {
	bin := buildTestdata(t, "hangkimi")
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startBinary(t, bin, testEnv(dataDir, "KIMI_TEST_HANG=close,handler", "KIMI_MODULES=hello,hang_close,hang_handler"))
	if code, body := s.get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d %q", code, body)
	}
	began := time.Now()
	code := s.stop(syscall.SIGTERM)
	took := time.Since(began)
	if code != 0 {
		t.Fatalf("exit code %d; log:\n%s", code, s.log())
	}
	if took >= 15*time.Second {
		t.Fatalf("SIGTERM took %s, past the documented 15 s; log:\n%s", took, s.log())
	}
	t.Logf("SIGTERM to exit: %s", took)
	if len(s.linesContaining("Kimi module hang_close close() exceeded")) != 1 {
		t.Fatalf("the hung close was not abandoned and logged; log:\n%s", s.log())
	}
	if len(s.linesContaining("database checkpointed and closed")) != 1 {
		t.Fatalf("no checkpoint after the hung module; log:\n%s", s.log())
	}
	for _, part := range []string{"tasks", "results", "modules", "discord", "admin", "store"} {
		if len(s.linesContaining(`msg=closed component=kimi part=`+part)) != 1 {
			t.Errorf("no closed line for part %s", part)
		}
	}
}
