package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// request sends one request to the server with the given Host header.
func (s *server) request(method, path, host string, form url.Values, cookies ...*http.Cookie) (*http.Response, string) {
	s.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, "http://"+s.addr+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Host = host
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s (Host %s): %v", method, path, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestHostAllowListThroughBinary: the server learns its bound address (port
// 0 resolved to the real port) and its base URL, answers to those, and
// refuses any other Host — the DNS-rebinding route to the sign-in form —
// with 421 before any handler. Probes answer any Host.
func TestHostAllowListThroughBinary(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		allowed []string // besides the bound literal
	}{
		{"loopback bind, derived base URL", nil, []string{"localhost:PORT", "[::1]:PORT"}},
		{"loopback bind, https base URL", []string{"KIMI_BASE_URL=https://kimi.example.org"}, []string{"kimi.example.org", "KIMI.example.org:443", "localhost:PORT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			s := startServer(t, testEnv(dataDir, append([]string{"KIMI_ADMIN_PASSWORD=long-enough-pw"}, tt.env...)...))
			_, port, err := net.SplitHostPort(s.addr)
			if err != nil || port == "0" {
				t.Fatalf("ready address %q", s.addr)
			}
			allowed := []string{s.addr}
			for _, h := range tt.allowed {
				allowed = append(allowed, strings.ReplaceAll(h, "PORT", port))
			}
			for _, host := range allowed {
				if resp, body := s.request(http.MethodGet, "/login", host, nil); resp.StatusCode != http.StatusOK {
					t.Errorf("GET /login Host %q = %d, want 200; body %.200s", host, resp.StatusCode, body)
				}
			}
			// A sign-in form's CSRF cookie, fetched at an allowed host.
			resp, _ := s.request(http.MethodGet, "/login", s.addr, nil)
			var csrf *http.Cookie
			for _, c := range resp.Cookies() {
				if c.Name == "kimi_csrf" {
					csrf = c
				}
			}
			if csrf == nil {
				t.Fatal("no kimi_csrf cookie from GET /login")
			}
			form := url.Values{"_csrf": {csrf.Value}, "username": {"admin"}, "password": {"long-enough-pw"}}
			for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.2:" + port, "localhost:1"} {
				for _, rq := range []struct {
					method, path string
					form         url.Values
				}{{"GET", "/login", nil}, {"POST", "/login", form}, {"GET", "/", nil}} {
					resp, body := s.request(rq.method, rq.path, host, rq.form, csrf)
					if resp.StatusCode != http.StatusMisdirectedRequest {
						t.Errorf("%s %s Host %q = %d, want 421; body %.200s", rq.method, rq.path, host, resp.StatusCode, body)
					}
				}
			}
			if resp, _ := s.request(http.MethodGet, "/healthz", "evil.example", nil); resp.StatusCode != http.StatusOK {
				t.Errorf("GET /healthz Host evil.example = %d, want 200 (probes are exempt)", resp.StatusCode)
			}
			if resp, _ := s.request(http.MethodPost, "/login", s.addr, form, csrf); resp.StatusCode != http.StatusSeeOther {
				t.Errorf("POST /login at the bound address = %d, want 303", resp.StatusCode)
			}
		})
	}
}

// TestProxySettingsThroughBinary: the removed KIMI_TRUST_PROXY and a bad
// KIMI_TRUSTED_PROXIES entry stop start-up with exit 2 and a message that
// says what to do.
func TestProxySettingsThroughBinary(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"removed setting", []string{"KIMI_TRUST_PROXY=true"}, nil,
			"config: KIMI_TRUST_PROXY: was replaced by KIMI_TRUSTED_PROXIES: list the addresses of your reverse proxies instead, e.g. KIMI_TRUSTED_PROXIES=127.0.0.1,::1, and unset KIMI_TRUST_PROXY"},
		{"bad entry", []string{"KIMI_TRUSTED_PROXIES=127.0.0.1,proxy.lan"}, nil,
			`config: KIMI_TRUSTED_PROXIES: "proxy.lan" is not an IP address or CIDR (e.g. 127.0.0.1, ::1 or 10.0.0.0/8)`},
		{"bad flag entry", nil, []string{"--trusted-proxies", "10.0.0.0/33"},
			`config: --trusted-proxies: "10.0.0.0/33" is not an IP address or CIDR (e.g. 127.0.0.1, ::1 or 10.0.0.0/8)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runKimi(t, testEnv(filepath.Join(t.TempDir(), "data"), tt.env...), "", append([]string{"serve"}, tt.args...)...)
			if res.code != 2 {
				t.Fatalf("exit code %d, want 2; stderr:\n%s", res.code, res.stderr)
			}
			lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
			if last := lines[len(lines)-1]; last != tt.want {
				t.Fatalf("last stderr line\n got %q\nwant %q", last, tt.want)
			}
		})
	}
}

// TestHelpAndDuplicateAdminTexts: `kimi serve -h` no longer prints the
// broken "file holding the creates the admin…", and creating an admin that
// exists says so in one sentence.
func TestHelpAndDuplicateAdminTexts(t *testing.T) {
	env := testEnv(filepath.Join(t.TempDir(), "data"))
	help := runKimi(t, env, "", "serve", "-h")
	out := help.stdout + help.stderr
	const want = "file holding the password of the admin created on first start without the setup page (env KIMI_ADMIN_PASSWORD or KIMI_ADMIN_PASSWORD_FILE)"
	if help.code != 0 || !strings.Contains(out, want) || strings.Contains(out, "holding the creates") {
		t.Fatalf("kimi serve -h (exit %d) lacks %q:\n%s", help.code, want, out)
	}
	if res := runKimi(t, env, "long-enough-pw", "admin", "create", "--username", "alice", "--password-stdin"); res.code != 0 {
		t.Fatalf("first create: exit %d\n%s", res.code, res.stderr)
	}
	res := runKimi(t, env, "long-enough-pw", "admin", "create", "--username", "Alice", "--password-stdin")
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	if last := lines[len(lines)-1]; res.code != 1 || last != `kimi admin: auth: an admin named "alice" already exists` {
		t.Fatalf("duplicate create: exit %d, last line %q", res.code, last)
	}
}
