package main

import (
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

// TestGuildPagesThroughBinary: the served binary wires the guild
// configuration into the admin — the guild page offers a settings form for
// a compiled-in module with guild settings (kudos), adding a guild stores
// its server-setup document with an audit row.
func TestGuildPagesThroughBinary(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	env := testEnv(dataDir, "KIMI_ADMIN_PASSWORD=correct-horse-battery", "KIMI_STAFF_ROLE_IDS=999")
	s := startServer(t, env)
	jar, _ := cookiejar.New(nil)
	c := *httpClient
	c.Jar = jar
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
	csrfRE := regexp.MustCompile(`name="_csrf" value="([^"]+)"`)
	post := func(path string, form url.Values, page string) *http.Response {
		t.Helper()
		m := csrfRE.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no CSRF field on the page before POST %s", path)
		}
		form.Set("_csrf", m[1])
		resp, err := c.PostForm(s.url+path, form)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	_, login := get("/login")
	if resp := post("/login", url.Values{"username": {"admin"}, "password": {"correct-horse-battery"}}, login); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in = %d", resp.StatusCode)
	}
	status, list := get("/guilds")
	if status != http.StatusOK || !strings.Contains(list, "No guilds yet") {
		t.Fatalf("GET /guilds = %d:\n%.500s", status, list)
	}
	if resp := post("/guilds", url.Values{"guild_id": {"42"}}, list); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/guilds/42" {
		t.Fatalf("add guild = %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	status, page := get("/guilds/42")
	if status != http.StatusOK || !strings.Contains(page, `data-testid="module-form-reference_kudos"`) {
		t.Fatalf("GET /guilds/42 = %d, no kudos settings form:\n%.500s", status, page)
	}
	if code := s.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}

	st := openDB(t, dataDir)
	defer st.Close()
	if got := queryStrings(t, st.Reader(), `SELECT content FROM kimi_documents WHERE target = 'guild:42'`); len(got) != 1 || got[0] != "---\nbot_active: false\n---\n" {
		t.Fatalf("guild:42 document = %q", got)
	}
	if got := queryStrings(t, st.Reader(), `SELECT actor || ' ' || target FROM kimi_audit_log WHERE action = 'guild.document.save'`); len(got) != 1 || got[0] != "admin guild:42" {
		t.Fatalf("save audit rows = %q", got)
	}
}
