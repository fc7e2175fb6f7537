package egress

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestAllowedHost(t *testing.T) {
	var gotUA string
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		gotUA = r.Header.Get("User-Agent")
		fmt.Fprint(w, `{"ok":true}`)
	})
	var observed []Metrics
	p := newPort(t, Options{
		Rules:    []sdk.HostRule{httpRule("svc.test", sdk.NetworkPrivate, s.port)},
		Settings: allowed(t, true),
		Resolver: resolverFor("svc.test", "127.0.0.1"),
		Observe:  func(m Metrics, _ *Refusal) { observed = append(observed, m) },
	})
	resp, err := p.Get(context.Background(), s.urlFor("svc.test", "/x"), sdk.WithHeader("User-Agent", "spoofed"))
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	var v struct{ OK bool }
	if resp.Status != 200 || resp.JSON(&v) != nil || !v.OK {
		t.Fatalf("response %d %q", resp.Status, resp.Body)
	}
	if gotUA != "Kimi-Module/m" {
		t.Errorf("User-Agent %q, want the fixed Kimi-Module/m", gotUA)
	}
	m := p.Metrics()
	if m.Requests != 1 || m.Bytes != int64(len(`{"ok":true}`)) || len(m.Refusals) != 0 {
		t.Errorf("metrics %+v", m)
	}
	if len(observed) != 1 || observed[0].Requests != 1 {
		t.Errorf("observed %+v", observed)
	}
}

// TestRefusedBeforeConnect: the URL checks, on the first request. The
// server is never reached.
func TestRefusedBeforeConnect(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	rules := []sdk.HostRule{
		httpRule("svc.test", sdk.NetworkPrivate, s.port),
		httpRule("pub.test", sdk.NetworkPublic, s.port),
		httpRule("127.0.0.1", sdk.NetworkPublic, s.port),
		httpRule("10.1.2.3", sdk.NetworkPrivate, s.port),
		{Host: "tls.test"},
	}
	tests := []struct {
		name, url, want, reason string
		allow                   bool
	}{
		{"undeclared host", s.urlFor("other.test", "/"), "module 'm' did not declare host 'other.test'", "undeclared_host", true},
		{"scheme", "https://svc.test:" + fmt.Sprint(s.port) + "/", "scheme 'https' is not allowed for 'svc.test'", "scheme", true},
		{"http on an https rule", "http://tls.test/", "scheme 'http' is not allowed for 'tls.test'", "scheme", true},
		{"port", "http://svc.test:1/", "port 1 is not allowed for 'svc.test'", "port", true},
		{"default port not listed", "http://svc.test/", "port None is not allowed", "port", true},
		{"credentials", "http://user:pw@svc.test:" + fmt.Sprint(s.port) + "/", "URLs with embedded credentials are not allowed", "credentials", true},
		{"ftp", "ftp://svc.test/", "may only use http(s) URLs", "url", true},
		{"no host", "http:///x", "URL has no host", "url", true},
		{"metadata name", "http://metadata.google.internal/computeMetadata/v1/", "cloud metadata endpoints are never allowed", "metadata", true},
		{"metadata name, trailing dot", "http://metadata.google.internal./", "cloud metadata endpoints are never allowed", "metadata", true},
		{"metadata short name", "http://metadata/", "cloud metadata endpoints are never allowed", "metadata", true},
		{"instance-data", "http://instance-data/latest/", "cloud metadata endpoints are never allowed", "metadata", true},
		{"metadata v4", "http://169.254.169.254/latest/meta-data/", "cloud metadata endpoints are never allowed", "metadata", true},
		{"metadata v6", "http://[fd00:ec2::254]/", "cloud metadata endpoints are never allowed", "metadata", true},
		{"metadata mapped", "http://[::ffff:169.254.169.254]/", "cloud metadata endpoints are never allowed", "metadata", true},
		{"metadata alibaba", "http://100.100.100.200/", "cloud metadata endpoints are never allowed", "metadata", true},
		{"loopback literal, public rule", s.urlFor("127.0.0.1", "/"), "private or internal addresses are not allowed", "address", true},
		{"private literal, private rule not allowed", s.urlFor("10.1.2.3", "/"), "which the operator has not allowed (allow_private_network)", "address", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var refusal *Refusal
			p := newPort(t, Options{Rules: rules, Settings: allowed(t, tt.allow), Resolver: resolverFor(),
				Observe: func(_ Metrics, r *Refusal) { refusal = r }})
			_, err := p.Get(context.Background(), tt.url)
			hostNotAllowed(t, err, tt.want)
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("error shows the credentials: %v", err)
			}
			if got := p.Metrics().Refusals[tt.reason]; got != 1 {
				t.Errorf("refusals %v, want %s=1", p.Metrics().Refusals, tt.reason)
			}
			if refusal == nil || refusal.Reason != tt.reason || refusal.Message != err.Error() {
				t.Errorf("observed refusal %+v", refusal)
			}
		})
	}
	if s.hits.Load() != 0 {
		t.Fatalf("the server was reached %d times", s.hits.Load())
	}
}

// TestRefusedAtConnect: names resolving (or rebinding) to a non-global
// address are refused in the dialer's Control, on the address dialed, in
// every form; an allowed private rule still never reaches metadata,
// unspecified or multicast addresses.
func TestRefusedAtConnect(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	forms := []struct{ addr, class string }{
		{"127.0.0.1", "loopback"}, {"127.8.9.10", "loopback"}, {"::1", "loopback"},
		{"10.0.0.1", "private"}, {"172.16.0.1", "private"}, {"192.168.1.1", "private"}, {"fd00::2", "private"},
		{"169.254.1.1", "link-local"}, {"fe80::1", "link-local"},
		{"100.64.0.1", "cgnat"}, {"224.0.0.1", "multicast"}, {"ff02::1", "multicast"},
		{"0.0.0.0", "unspecified"}, {"::", "unspecified"},
		{"::ffff:127.0.0.1", "loopback"}, {"::ffff:10.0.0.1", "private"},
		{"64:ff9b::7f00:1", "loopback"}, {"64:ff9b::a9fe:101", "link-local"},
		{"2002:7f00:1::1", "loopback"}, {"2002:c0a8:101::1", "private"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"}, {"::7f00:1", "ipv4-compatible"},
		{"169.254.169.254", "metadata"}, {"fd00:ec2::254", "metadata"}, {"::ffff:169.254.169.254", "metadata"},
		{"64:ff9b::a9fe:a9fe", "metadata"}, {"100.100.100.200", "metadata"},
		{"192.0.2.1", "reserved"}, {"240.0.0.1", "reserved"},
	}
	for _, f := range forms {
		for _, private := range []bool{false, true} {
			if private && !refusedAlways(f.class) && !mustAddr(f.addr).Unmap().IsLoopback() {
				continue
			}
			name := f.addr + " public"
			network := sdk.NetworkPublic
			if private {
				name, network = f.addr+" private allowed", sdk.NetworkPrivate
			}
			t.Run(name, func(t *testing.T) {
				res := resolverFor("rebind.test", f.addr)
				p := newPort(t, Options{Rules: []sdk.HostRule{httpRule("rebind.test", network, s.port)},
					Settings: allowed(t, true), Resolver: res})
				_, err := p.Get(context.Background(), s.urlFor("rebind.test", "/"))
				if private && !refusedAlways(f.class) {
					// Allowed: the dial goes ahead, to loopback only (the
					// other classes are TestRefusedClass's: no packet leaves
					// this machine).
					var hna *sdk.HostNotAllowedError
					if errors.As(err, &hna) {
						t.Fatalf("allowed private rule refused: %v", err)
					}
					return
				}
				hostNotAllowed(t, err, "may not connect to ")
				if !strings.Contains(err.Error(), f.class) || !strings.Contains(err.Error(), "'rebind.test'") {
					t.Errorf("error %q should name the class %s and the host", err, f.class)
				}
				if got := p.Metrics().Refusals["address:"+f.class]; got != 1 {
					t.Errorf("refusals %v", p.Metrics().Refusals)
				}
				if res.calls != 1 {
					t.Errorf("resolver called %d times", res.calls)
				}
			})
		}
	}
	// Only the allowed private rule's 127.0.0.1 and ::ffff:127.0.0.1 dials
	// reach the server.
	if s.hits.Load() != 2 {
		t.Fatalf("the server was reached %d times", s.hits.Load())
	}
}

func refusedAlways(class string) bool {
	return class == "metadata" || class == "unspecified" || class == "multicast"
}

// TestMixedAnswers: a name with a loopback and a private answer is refused
// on both.
func TestMixedAnswers(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	p := newPort(t, Options{Rules: []sdk.HostRule{httpRule("two.test", "", s.port)},
		Resolver: resolverFor("two.test", "10.9.9.9", "two.test", "127.0.0.1")})
	_, err := p.Get(context.Background(), s.urlFor("two.test", "/"))
	hostNotAllowed(t, err, "reaches public addresses only")
	if s.hits.Load() != 0 {
		t.Fatal("reached")
	}
}

func TestPrivateRuleNeedsTheOperator(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "in") })
	for _, allow := range []bool{false, true} {
		p := newPort(t, Options{Rules: []sdk.HostRule{httpRule("nas.lan", sdk.NetworkPrivate, s.port)},
			Settings: allowed(t, allow), Resolver: resolverFor("nas.lan", "127.0.0.1")})
		resp, err := p.Get(context.Background(), s.urlFor("nas.lan", "/"))
		if !allow {
			hostNotAllowed(t, err, "names a private network, which the operator has not allowed (allow_private_network)")
			continue
		}
		if err != nil || string(resp.Body) != "in" {
			t.Fatalf("allowed: %v", err)
		}
	}
	if s.hits.Load() != 1 {
		t.Fatalf("hits %d", s.hits.Load())
	}
}

func TestWithAllowanceSetting(t *testing.T) {
	public := sdk.Spec{Name: "m", Permissions: sdk.Permissions{HTTPHosts: []sdk.HostRule{{Host: "a.test"}}}}
	if got := WithAllowanceSetting(public); got.Settings != nil {
		t.Fatalf("public-only module got settings %+v", got.Settings)
	}
	own := &sdk.SettingsDefinition{Label: "M", Fields: []sdk.SettingField{
		{Name: "token", Kind: sdk.SettingString, Secret: true},
		{Name: AllowPrivateNetworkSetting, Kind: sdk.SettingBool, Default: true}, // the module's own: replaced
	}}
	spec := sdk.Spec{Name: "m", Settings: own, Permissions: sdk.Permissions{HTTPHosts: []sdk.HostRule{{Host: "nas.lan", Network: sdk.NetworkPrivate}}}}
	got := WithAllowanceSetting(spec)
	if len(own.Fields) != 2 || own.Fields[1].Default != true {
		t.Fatal("the spec's definition was modified")
	}
	if err := got.Settings.Validate("m"); err != nil {
		t.Fatal(err)
	}
	f, ok := got.Settings.Field(AllowPrivateNetworkSetting)
	if !ok || f.Kind != sdk.SettingBool || f.Default != false || !f.Exposed() || len(got.Settings.Fields) != 2 {
		t.Fatalf("fields %+v", got.Settings.Fields)
	}
	s, err := got.Settings.Prepare("m", map[string]string{"token": "x"})
	if err != nil || PrivateNetworkAllowed(s) {
		t.Fatalf("default must be off: %v %v", err, PrivateNetworkAllowed(s))
	}
}

func TestLoadTimeResolution(t *testing.T) {
	def := sdk.SettingsDefinition{Fields: []sdk.SettingField{{Name: "base", Kind: sdk.SettingString, Default: ""}}}
	prep := func(v string) sdk.Settings {
		s, err := def.Prepare("m", map[string]string{"base": v})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tt := range []struct{ name, value, want string }{
		{"unknown setting", "", "module 'm' http host ${nope} names an unknown setting"},
		{"empty", "", "http host setting is empty"},
		{"metadata", "http://169.254.169.254/", "module 'm' may not target '169.254.169.254'"},
		{"metadata name", "metadata.google.internal", "module 'm' may not target 'metadata.google.internal'"},
	} {
		host := "${base}"
		if tt.name == "unknown setting" {
			host = "${nope}"
		}
		_, err := New(Options{Module: "m", Rules: []sdk.HostRule{{Host: host}}, Settings: prep(tt.value)})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	// A resolved ${setting} rule takes the URL's scheme and port.
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "set") })
	p := newPort(t, Options{Rules: []sdk.HostRule{{Host: "${base}", Network: sdk.NetworkPrivate}},
		Settings: mergeSettings(t, prep(s.urlFor("api.test", "")), true), Resolver: resolverFor("api.test", "127.0.0.1")})
	resp, err := p.Get(context.Background(), s.urlFor("api.test", "/v1"))
	if err != nil || string(resp.Body) != "set" {
		t.Fatalf("setting rule: %v", err)
	}
	// discord-cdn expands to the CDN's public https rules.
	p = newPort(t, Options{Rules: []sdk.HostRule{{Host: sdk.DiscordCDNToken}}, Resolver: resolverFor("cdn.discordapp.com", "127.0.0.1")})
	_, err = p.Get(context.Background(), "https://cdn.discordapp.com/attachments/1/2/a.png")
	hostNotAllowed(t, err, "may not connect to 127.0.0.1 for 'cdn.discordapp.com': loopback address")
	_, err = p.Get(context.Background(), "http://media.discordapp.net/x")
	hostNotAllowed(t, err, "scheme 'http' is not allowed for 'media.discordapp.net'")
}

// mergeSettings adds the allowance to prepared settings.
func mergeSettings(t *testing.T, s sdk.Settings, allow bool) sdk.Settings {
	t.Helper()
	values := map[string]any{AllowPrivateNetworkSetting: allow}
	for _, n := range s.Names() {
		v, _ := s.Lookup(n)
		values[n] = v
	}
	return sdk.NewSettings(values)
}

// twoServers: a.test and b.test (two origins), both reachable through
// allowed private rules.
func redirectPort(t *testing.T, ports ...int) *Port {
	t.Helper()
	return newPort(t, Options{
		Rules:    []sdk.HostRule{httpRule("a.test", sdk.NetworkPrivate, ports...), httpRule("b.test", sdk.NetworkPrivate, ports...), httpRule("pub.test", sdk.NetworkPublic, ports...), httpRule("127.0.0.1", sdk.NetworkPublic, ports...)},
		Settings: allowed(t, true),
		Resolver: resolverFor("a.test", "127.0.0.1", "b.test", "127.0.0.1", "pub.test", "127.0.0.1"),
	})
}

type seen struct {
	mu   sync.Mutex
	reqs []string
}

func (s *seen) add(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, fmt.Sprintf("%s %s %s auth=%q cookie=%q proxy=%q body=%q", r.Host[:6], r.Method, r.URL.Path,
		r.Header.Get("Authorization"), r.Header.Get("Cookie"), r.Header.Get("Proxy-Authorization"), body))
}

func TestRedirects(t *testing.T) {
	var log seen
	var target *server
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		q := r.URL.Query()
		switch {
		case strings.HasPrefix(r.URL.Path, "/to/"):
			code := 0
			fmt.Sscan(q.Get("code"), &code)
			loc := strings.TrimPrefix(r.URL.Path, "/to/")
			loc = strings.Replace(loc, "PORT", fmt.Sprint(target.port), 1)
			w.Header().Set("Location", "http://"+loc)
			w.WriteHeader(code)
		case strings.HasPrefix(r.URL.Path, "/chain/"):
			var n int
			fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/chain/"), &n)
			if n == 0 {
				fmt.Fprint(w, "end")
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/chain/%d", n-1), http.StatusFound)
		case r.URL.Path == "/noloc":
			w.WriteHeader(http.StatusFound)
		default:
			fmt.Fprint(w, "landed")
		}
	})
	target = s
	creds := []sdk.RequestOption{sdk.WithHeader("Authorization", "Bearer SECRET"), sdk.WithHeader("Cookie", "c=SECRET"), sdk.WithHeader("Proxy-Authorization", "Basic SECRET")}
	tests := []struct {
		name, method, path string
		wantErr            string
		wantLog            []string
	}{
		{"same origin keeps credentials", "GET", "/to/a.test:PORT/end?code=302", "", []string{
			`a.test GET /to/a.test:PORT/end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body=""`,
			`a.test GET /end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body=""`}},
		{"cross origin strips credentials", "GET", "/to/b.test:PORT/end?code=302", "", []string{
			`a.test GET /to/b.test:PORT/end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body=""`,
			`b.test GET /end auth="" cookie="" proxy="" body=""`}},
		{"303 POST becomes GET", "POST", "/to/a.test:PORT/end?code=303", "", []string{
			`a.test POST /to/a.test:PORT/end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body="{\"k\":1}"`,
			`a.test GET /end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body=""`}},
		{"301 POST becomes GET", "POST", "/to/a.test:PORT/end?code=301", "", []string{
			`a.test POST /to/a.test:PORT/end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body="{\"k\":1}"`,
			`a.test GET /end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body=""`}},
		{"302 POST becomes GET", "POST", "/to/a.test:PORT/end?code=302", "", []string{
			`a.test POST /to/a.test:PORT/end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body="{\"k\":1}"`,
			`a.test GET /end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body=""`}},
		{"307 POST stays POST", "POST", "/to/a.test:PORT/end?code=307", "", []string{
			`a.test POST /to/a.test:PORT/end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body="{\"k\":1}"`,
			`a.test POST /end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body="{\"k\":1}"`}},
		{"308 POST stays POST", "POST", "/to/a.test:PORT/end?code=308", "", []string{
			`a.test POST /to/a.test:PORT/end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body="{\"k\":1}"`,
			`a.test POST /end auth="Bearer SECRET" cookie="c=SECRET" proxy="Basic SECRET" body="{\"k\":1}"`}},
		{"five redirects are followed", "GET", "/chain/5", "", nil},
		{"six are too many", "GET", "/chain/6", "too many redirects from a.test", nil},
		{"missing Location", "GET", "/noloc", "redirect without a Location header from 'a.test'", nil},
		{"to an undeclared host", "GET", "/to/c.test:PORT/x?code=302", "module 'm' did not declare host 'c.test'", nil},
		{"to a metadata address", "GET", "/to/169.254.169.254/latest?code=302", "cloud metadata endpoints are never allowed", nil},
		{"to a private literal of a public rule", "GET", "/to/127.0.0.1:PORT/x?code=302", "private or internal addresses are not allowed", nil},
		{"to a public name resolving to loopback", "GET", "/to/pub.test:PORT/x?code=307", "may not connect to 127.0.0.1 for 'pub.test': loopback address", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log.mu.Lock()
			log.reqs = nil
			log.mu.Unlock()
			p := redirectPort(t, s.port)
			u := s.urlFor("a.test", tt.path)
			var resp *sdk.HTTPResponse
			var err error
			if tt.method == "POST" {
				resp, err = p.PostJSON(context.Background(), u, map[string]int{"k": 1}, creds...)
			} else {
				resp, err = p.Get(context.Background(), u, creds...)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "SECRET") {
					t.Fatalf("error shows a credential: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v", err)
			}
			if resp.Status != 200 {
				t.Fatalf("status %d", resp.Status)
			}
			if tt.wantLog != nil {
				log.mu.Lock()
				defer log.mu.Unlock()
				if strings.Join(log.reqs, "\n") != strings.Join(tt.wantLog, "\n") {
					t.Fatalf("server saw\n%s\nwant\n%s", strings.Join(log.reqs, "\n"), strings.Join(tt.wantLog, "\n"))
				}
			}
		})
	}
}

// TestCrossPortIsCrossOrigin: the same host on another port is another
// origin: credentials are dropped, and stay dropped on the way back.
func TestCrossPortIsCrossOrigin(t *testing.T) {
	var log seen
	var back *server
	other := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		http.Redirect(w, r, back.urlFor("a.test", "/end"), http.StatusFound)
	})
	back = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		if r.URL.Path == "/start" {
			http.Redirect(w, r, other.urlFor("a.test", "/mid"), http.StatusFound)
		}
	})
	p := redirectPort(t, back.port, other.port)
	if _, err := p.Get(context.Background(), back.urlFor("a.test", "/start"), sdk.WithHeader("Authorization", "Bearer SECRET")); err != nil {
		t.Fatal(err)
	}
	want := `a.test GET /start auth="Bearer SECRET" cookie="" proxy="" body=""
a.test GET /mid auth="" cookie="" proxy="" body=""
a.test GET /end auth="" cookie="" proxy="" body=""`
	if got := strings.Join(log.reqs, "\n"); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestBodyCaps(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 64<<10)
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 64 { // 64 MiB of zeros, about 64 KiB compressed
		zw.Write(zeros)
	}
	zw.Close()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/declared":
			w.Header().Set("Content-Length", "9000000")
			w.Write(big)
		case "/stream": // chunked, no length: 9 MiB
			for range 9 * 16 {
				if _, err := w.Write(big); err != nil {
					return
				}
			}
		case "/bomb":
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", fmt.Sprint(bomb.Len()))
			w.Write(bomb.Bytes())
		case "/small":
			w.Write(big[:100])
		}
	})
	p := newPort(t, Options{Rules: []sdk.HostRule{httpRule("a.test", sdk.NetworkPrivate, s.port)}, Settings: allowed(t, true),
		Resolver: resolverFor("a.test", "127.0.0.1")})
	tests := []struct {
		path     string
		opts     []sdk.RequestOption
		want     string
		declared int64
	}{
		{"/declared", nil, "response declares 9000000 bytes; limit is 8388608", 9000000},
		{"/stream", nil, "response exceeded 8388608 bytes", 0},
		{"/stream", []sdk.RequestOption{sdk.WithMaxBytes(1000)}, "response exceeded 1000 bytes", 0},
		{"/stream", []sdk.RequestOption{sdk.WithMaxBytes(1 << 30)}, "response exceeded 8388608 bytes", 0}, // the ceiling
		{"/bomb", nil, "response exceeded 8388608 bytes", 0},
		{"/small", []sdk.RequestOption{sdk.WithMaxBytes(99)}, "response declares 100 bytes; limit is 99", 100},
	}
	for _, tt := range tests {
		before := p.Metrics().Bytes
		_, err := p.Get(context.Background(), s.urlFor("a.test", tt.path), tt.opts...)
		var tl *sdk.ResponseTooLargeError
		if !errors.As(err, &tl) || err.Error() != tt.want || tl.Declared != tt.declared {
			t.Errorf("%s: %v, want %q", tt.path, err, tt.want)
			continue
		}
		if read := p.Metrics().Bytes - before; read > tl.Limit+1 {
			t.Errorf("%s: read %d bytes past a limit of %d", tt.path, read, tl.Limit)
		}
	}
	if got := p.Metrics().Refusals["too_large"]; got != int64(len(tests)) {
		t.Errorf("too_large refusals %d", got)
	}
	resp, err := p.Get(context.Background(), s.urlFor("a.test", "/small"), sdk.WithMaxBytes(100))
	if err != nil || len(resp.Body) != 100 {
		t.Fatalf("at the limit: %v", err)
	}
}

// TestTimeouts: a slow server against each timeout. Nothing here measures
// time: each case's other timeouts are far longer than the one under test,
// so the phase the error names is the proof.
func TestTimeouts(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/headers":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/body":
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	// A TCP listener that accepts and never speaks TLS: the handshake hangs.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	silentPort := silent.Addr().(*net.TCPAddr).Port
	short, long := 300*time.Millisecond, 5*time.Minute
	rules := []sdk.HostRule{httpRule("a.test", sdk.NetworkPrivate, s.port), {Host: "tls.test", Ports: []int{silentPort}, Network: sdk.NetworkPrivate}}
	tests := []struct {
		name            string
		url             string
		connect, header time.Duration
		whole           time.Duration
		want            string
		deadline        bool
	}{
		{"connect (TLS handshake)", fmt.Sprintf("https://tls.test:%d/", silentPort), short, long, long, "connect timed out (TLS handshake)", false},
		{"response headers", s.urlFor("a.test", "/headers"), long, short, long, "timed out waiting for response headers", false},
		{"whole request, in the headers", s.urlFor("a.test", "/headers"), long, long, short, "timed out after 300ms", true},
		{"whole request, in the body", s.urlFor("a.test", "/body"), long, long, short, "timed out after 300ms", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPort(t, Options{Rules: rules, Settings: allowed(t, true), ConnectTimeout: tt.connect, HeaderTimeout: tt.header,
				Resolver: resolverFor("a.test", "127.0.0.1", "tls.test", "127.0.0.1")})
			done := make(chan error, 1)
			go func() {
				_, err := p.Get(context.Background(), tt.url+"?token=SECRET", sdk.WithTimeout(tt.whole), sdk.WithHeader("Authorization", "SECRET"))
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the request did not time out")
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if errors.Is(err, context.DeadlineExceeded) != tt.deadline {
				t.Errorf("errors.Is(DeadlineExceeded) = %v", !tt.deadline)
			}
			if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "(rule '") {
				t.Errorf("error %q must name the rule and never the query or headers", err)
			}
		})
	}
}

// TestNoCredentialInErrors: every failure path, with a secret in the query,
// the path and the headers.
func TestNoCredentialInErrors(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimSuffix(r.URL.Path, "/SECRET") {
		case "/big":
			w.Header().Set("Content-Length", "100")
			w.Write(make([]byte, 100))
		case "/noloc":
			w.WriteHeader(http.StatusFound)
		case "/loop":
			http.Redirect(w, r, r.URL.String(), http.StatusFound)
		case "/badloc":
			w.Header().Set("Location", "http://a.test:SECRET/")
			w.WriteHeader(http.StatusFound)
		case "/reset":
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		}
	})
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	p := newPort(t, Options{
		Rules: []sdk.HostRule{httpRule("a.test", sdk.NetworkPrivate, s.port, closedPort), httpRule("pub.test", "", s.port),
			{Host: "gone.test", Schemes: []string{"http"}, Ports: []int{s.port}}},
		Settings: allowed(t, true), Resolver: resolverFor("a.test", "127.0.0.1", "pub.test", "127.0.0.1"),
	})
	urls := []string{
		s.urlFor("a.test", "/big"), s.urlFor("a.test", "/noloc"), s.urlFor("a.test", "/loop"), s.urlFor("a.test", "/badloc"),
		s.urlFor("a.test", "/reset"), fmt.Sprintf("http://a.test:%d/x", closedPort), s.urlFor("pub.test", "/x"),
		s.urlFor("gone.test", "/x"), s.urlFor("undeclared.test", "/x"), "http://user:SECRET@a.test/",
		"http://a.test:1/x", "ftp://a.test/SECRET",
	}
	for _, u := range urls {
		target := u
		if !strings.Contains(u, "SECRET") {
			target = u + "/SECRET?token=SECRET&key=SECRET"
		}
		_, err := p.Get(context.Background(), target, sdk.WithMaxBytes(10), sdk.WithHeader("Authorization", "Bearer SECRET"),
			sdk.WithHeader("Cookie", "s=SECRET"))
		if err == nil {
			t.Errorf("%s: no error", u)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") || strings.Contains(fmt.Sprintf("%+v", err), "SECRET") {
			t.Errorf("%s: error shows a secret: %v", u, err)
		}
		if !strings.Contains(err.Error(), "a.test") && !strings.Contains(err.Error(), ".test") && !strings.Contains(err.Error(), "bytes") &&
			!strings.Contains(err.Error(), "credentials") && !strings.Contains(err.Error(), "http(s)") {
			t.Errorf("%s: error %q names no host", u, err)
		}
	}
}

// TestNoEnvironmentProxy: HTTP_PROXY is never used.
func TestNoEnvironmentProxy(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "proxied") }))
	t.Cleanup(proxy.Close)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "direct") })
	p := newPort(t, Options{Rules: []sdk.HostRule{httpRule("a.test", sdk.NetworkPrivate, s.port)}, Settings: allowed(t, true),
		Resolver: resolverFor("a.test", "127.0.0.1")})
	resp, err := p.Get(context.Background(), s.urlFor("a.test", "/"))
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Body) != "direct" {
		t.Fatalf("body %q: the request went through the environment's proxy", resp.Body)
	}
}

func TestDownload(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "file")
	})
	p := newPort(t, Options{Rules: []sdk.HostRule{httpRule("a.test", sdk.NetworkPrivate, s.port)}, Settings: allowed(t, true),
		Resolver: resolverFor("a.test", "127.0.0.1")})
	rc, err := p.Download(context.Background(), s.urlFor("a.test", "/f"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	if string(b) != "file" {
		t.Fatalf("%q", b)
	}
	if _, err := p.Download(context.Background(), s.urlFor("a.test", "/missing")); err == nil || err.Error() != "download returned HTTP 404" {
		t.Fatalf("%v", err)
	}
}

func TestRefusedClass(t *testing.T) {
	public := rule{}
	private := rule{declaredPrivate: true}
	private.Private = true
	notAllowed := rule{declaredPrivate: true}
	for _, tt := range []struct {
		r    rule
		addr string
		want string
	}{
		{public, "8.8.8.8", ""}, {public, "2606:4700::1111", ""}, {public, "64:ff9b::808:808", ""},
		{public, "127.0.0.1", "loopback"}, {notAllowed, "10.0.0.1", "private"},
		{private, "10.0.0.1", ""}, {private, "127.0.0.1", ""}, {private, "8.8.8.8", ""},
		{private, "169.254.169.254", "metadata"}, {private, "0.0.0.0", "unspecified"}, {private, "224.0.0.1", "multicast"},
	} {
		if got := refusedClass(tt.r, mustAddr(tt.addr)); got != tt.want {
			t.Errorf("refusedClass(private=%v, %s) = %q, want %q", tt.r.Private, tt.addr, got, tt.want)
		}
	}
}
