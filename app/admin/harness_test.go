package admin

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/store"
)

const (
	testUser     = "admin"
	testPassword = "correct horse battery"
)

// testClock is a settable clock for session expiry.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// distinctMillis is a clock whose readings are each at least a
// millisecond after the last: proposals made back to back then have the
// creation order the inbox lists them in (two made in the same
// millisecond have no order but their random ids).
func distinctMillis() func() time.Time {
	var mu sync.Mutex
	var last time.Time
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if !now.After(last.Add(time.Millisecond)) {
			now = last.Add(time.Millisecond)
		}
		last = now
		return now
	}
}

// syncBuffer collects log output from concurrent handlers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is a real admin server over a migrated SQLite file in t.TempDir().
type harness struct {
	t    testing.TB
	st   *store.Store
	auth *auth.Service
	// guilds is the configuration-document service the guild pages use.
	guilds *guildcfg.Service
	srv    *Server
	ts     *httptest.Server
	clk    *testClock
	logs   *syncBuffer
	// vars are a scenario's {name} placeholders (the set-up token, …).
	vars map[string]string
	// modHost is the module host, when an option gave the server one
	// (withModules); it closes before the store.
	modHost *host.Host
	// bot is the Discord connection of /discord, over fake (a fakediscord
	// per harness: nothing leaves loopback); not started unless a test
	// starts it. An option may replace Options.Discord (nil: no bot).
	bot  *discord.Bot
	fake *fakediscord.Server
	// props is the real proposals service over the harness's store, guild
	// configuration and bot (Options.Proposals unless an option replaces
	// it); proposing needs the bot connected (see proposalGuild).
	props *proposals.Service
	// results is the real scheduled-results service over the harness's
	// store (Options.Results unless an option replaces it); its dispatcher
	// is not started, so rows stay as a test writes them.
	results   *results.Service
	resultSeq int // the last notification addResult inserted
	// tasks is the real scheduled-tasks service, runner and facade over
	// the harness's store (Options.Tasks unless an option replaces it).
	tasks *taskEnv
	// assistant is the model provider's owner over the harness's store
	// (Options.Assistant unless an option replaces it), loaded at start.
	assistant *assistant.Service
}

func newHarness(t testing.TB, mutate ...func(*Options)) *harness {
	t.Helper()
	return newHarnessStore(t, store.Options{}, mutate...)
}

// newHarnessStore is newHarness with the store opened on sopts (its Logger
// is the harness's).
func newHarnessStore(t testing.TB, sopts store.Options, mutate ...func(*Options)) *harness {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sopts.Logger = logger
	st, err := store.Open(ctx, filepath.Join(dir, "kimi.db"), sopts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	clk := &testClock{now: time.Now()}
	svc := auth.New(st, logger, auth.Options{BcryptCost: bcrypt.MinCost, Now: clk.Now})
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Modules: testModuleSpecs(), Logger: logger})
	if err != nil {
		t.Fatalf("guildcfg.New: %v", err)
	}
	opts := Options{
		Store: st, Auth: svc, Logger: logger, Guilds: guilds, Version: "v0.0.0-test", Commit: "abc1234",
		StartedAt: time.Now().Add(-90 * time.Minute), DataDir: dir, MetricsToken: "metrics-secret-token",
	}
	fake := fakediscord.New(fakediscord.Options{})
	bot, err := discord.New(discord.Options{Store: st, Guilds: guilds, Logger: logger, Transport: fake.Transport(), Dialer: fake.Dialer(),
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("discord.New: %v", err)
	}
	opts.Discord = bot
	props, err := proposals.New(proposals.Options{Store: st, Guilds: guilds, Discord: discord.NewCards(bot), Logger: logger,
		Now: distinctMillis()})
	if err != nil {
		t.Fatalf("proposals.New: %v", err)
	}
	opts.Proposals = props
	bot.RegisterCoreHandler("proposals", proposals.Buttons{S: props})
	res, err := results.New(results.Options{Store: st, Logger: logger})
	if err != nil {
		t.Fatalf("results.New: %v", err)
	}
	opts.Results = res
	taskEnv, closeTasks := newTaskEnv(t, st, res, logger)
	opts.Tasks = taskEnv.admin
	asst, err := assistant.New(assistant.Options{Store: st, Logger: logger})
	if err != nil {
		t.Fatalf("assistant.New: %v", err)
	}
	if err := asst.Reload(ctx); err != nil {
		t.Fatalf("assistant reload: %v", err)
	}
	opts.Assistant = asst
	convs := assistant.NewConversations(st, nil)
	opts.Conversations, opts.Usage = convs, convs
	for _, m := range mutate {
		m(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("admin.New: %v", err)
	}
	ts := httptest.NewServer(srv.Handler())
	h := &harness{t: t, st: st, auth: svc, guilds: guilds, srv: srv, ts: ts, clk: clk, logs: logs, vars: map[string]string{}, bot: bot, fake: fake, props: props, results: res, tasks: taskEnv, assistant: asst}
	if own, ok := opts.Assistant.(*assistant.Service); ok {
		h.assistant = own
	}
	h.modHost, _ = opts.Host.(*host.Host)
	// An option's own bot and proposals service (withDemoAppliance) close
	// as serve closes them: the bot before the fake it is connected to,
	// the service after the host.
	ownBot, _ := opts.Discord.(*discord.Bot)
	ownProps, _ := opts.Proposals.(*proposals.Service)
	if ownProps != nil {
		h.props = ownProps
	}
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
		if ownBot != nil && ownBot != bot {
			_ = ownBot.Close()
		}
		if cl, ok := opts.Demo.(io.Closer); ok {
			_ = cl.Close()
		}
		_ = bot.Close()
		props.Close()
		closeTasks()
		_ = res.Close(context.Background())
		fake.Close()
		if h.modHost != nil {
			_ = h.modHost.Close(context.Background())
		}
		if ownProps != nil && ownProps != props {
			ownProps.Close()
		}
		asst.Close()
		if h.assistant != asst {
			h.assistant.Close()
		}
		guilds.Close()
		_ = st.Close()
	})
	return h
}

func (h *harness) createAdmin() {
	h.t.Helper()
	if err := h.auth.CreateAdmin(context.Background(), testUser, testPassword, "test"); err != nil {
		h.t.Fatalf("CreateAdmin: %v", err)
	}
}

// client is one browser: its own cookie jar, no automatic redirects.
type client struct {
	h    *harness
	http *http.Client
	csrf string // last _csrf seen on a page
}

type response struct {
	*http.Response
	body string
}

func (h *harness) newClient() *client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return &client{h: h, http: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

var csrfRE = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (c *client) do(req *http.Request) *response {
	c.h.t.Helper()
	res, err := c.http.Do(req)
	if err != nil {
		c.h.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.h.t.Fatal(err)
	}
	if m := csrfRE.FindStringSubmatch(string(b)); m != nil {
		c.csrf = m[1]
	}
	return &response{Response: res, body: string(b)}
}

func (c *client) get(path string, headers ...string) *response {
	c.h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.h.ts.URL+path, nil)
	if err != nil {
		c.h.t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return c.do(req)
}

// post submits a form. The last seen CSRF token is added unless the form
// sets _csrf itself (use "-" to send none).
func (c *client) post(path string, form url.Values, headers ...string) *response {
	c.h.t.Helper()
	return c.send(http.MethodPost, path, form, headers...)
}

// send submits a form with method, adding the CSRF token as post does.
func (c *client) send(method, path string, form url.Values, headers ...string) *response {
	c.h.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	switch form.Get("_csrf") {
	case "":
		form.Set("_csrf", c.csrf)
	case "-":
		form.Del("_csrf")
	}
	req, err := http.NewRequest(method, c.h.ts.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return c.do(req)
}

// login signs in through the form and fails the test unless it worked.
func (c *client) login(user, password string) {
	c.h.t.Helper()
	c.get("/login")
	res := c.post("/login", url.Values{"username": {user}, "password": {password}})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		c.h.t.Fatalf("login: status %d location %q body %.300s", res.StatusCode, res.Header.Get("Location"), res.body)
	}
	if page := c.get("/"); page.StatusCode != http.StatusOK {
		c.h.t.Fatalf("after login GET / = %d", page.StatusCode)
	}
}

func (c *client) cookie(name string) string {
	u, _ := url.Parse(c.h.ts.URL)
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

func (c *client) setCookie(name, value string) {
	u, _ := url.Parse(c.h.ts.URL)
	c.http.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: "/"}})
}

func (h *harness) auditCount(action string) int {
	h.t.Helper()
	entries, _, err := h.st.ListAudit(context.Background(), store.AuditFilter{Action: action, Limit: store.AuditPageMax})
	if err != nil {
		h.t.Fatal(err)
	}
	return len(entries)
}

func (h *harness) sessionCount() int {
	h.t.Helper()
	var n int
	if err := h.st.Reader().QueryRow(`SELECT COUNT(*) FROM kimi_sessions`).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

func wantStatus(t testing.TB, res *response, want int) {
	t.Helper()
	if res.StatusCode != want {
		t.Fatalf("%s %s = %d, want %d; body: %.400s", res.Request.Method, res.Request.URL.Path, res.StatusCode, want, res.body)
	}
}

func wantBody(t testing.TB, res *response, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(res.body, p) {
			t.Errorf("%s %s: body lacks %q", res.Request.Method, res.Request.URL.Path, p)
		}
	}
}
