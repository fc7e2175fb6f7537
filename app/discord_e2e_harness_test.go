package app

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// The end-to-end tests start the composed appliance — `kimi serve --demo`
// in-process, the same composition serve uses — against its built-in fake
// Discord (cli.onDemoFake hands the fake to the test before the bot
// connects), with the test's guilds seeded in the fake and their documents
// in the database before the start.

// e2eWait bounds every wait (generous: the machine is shared).
const e2eWait = 60 * time.Second

// Fixed ids of the test guilds (the demo guild's are snowflakes of the run).
const (
	e2eGuild      = "410000000000000001" // active
	e2eOther      = "410000000000000002" // inactive
	e2eChannel    = "420000000000000001" // #general of e2eGuild
	e2eSlowChan   = "420000000000000002" // #slow of e2eGuild (rate-limit waits)
	e2eOtherChan  = "420000000000000003" // #general of e2eOther
	e2eStaffRole  = "430000000000000001"
	e2eAnn        = "440000000000000001" // member
	e2eBob        = "440000000000000002" // staff (e2eStaffRole)
	e2eAdminPass  = "an-e2e-admin-password"
	e2eAdminLogin = config.DefaultAdminUsername
)

// e2eSeed adds the test guilds to the fake: e2eGuild (active once its
// document is written) with ann and bob, e2eOther (never activated).
func e2eSeed(f *fakediscord.Server) {
	f.AddGuild(fakediscord.GuildSpec{ID: e2eGuild, Name: "e2e guild"})
	f.AddGuild(fakediscord.GuildSpec{ID: e2eOther, Name: "other guild"})
	f.AddChannel(fakediscord.ChannelSpec{ID: e2eChannel, GuildID: e2eGuild, Name: "general"})
	f.AddChannel(fakediscord.ChannelSpec{ID: e2eSlowChan, GuildID: e2eGuild, Name: "slow"})
	f.AddChannel(fakediscord.ChannelSpec{ID: e2eOtherChan, GuildID: e2eOther, Name: "general"})
	f.AddRole(e2eGuild, discordgo.Role{ID: e2eStaffRole, Name: "staff"})
	f.AddUser(discordgo.User{ID: e2eAnn, Username: "ann", GlobalName: "Ann"})
	f.AddUser(discordgo.User{ID: e2eBob, Username: "bob", GlobalName: "Bob"})
	f.AddMember(e2eGuild, e2eAnn)
	f.AddMember(e2eGuild, e2eBob, e2eStaffRole)
	f.AddMember(e2eOther, e2eAnn)
}

// e2eGuildDoc is e2eGuild's server setup: active, bob's role is staff.
const e2eGuildDoc = "---\nbot_active: true\nstaff_role_ids: [" + e2eStaffRole + "]\n---\n"

type e2eOptions struct {
	specs   []sdk.Spec
	modules string                      // KIMI_MODULES
	docs    map[guildcfg.Target]string  // written before the start
	seed    func(f *fakediscord.Server) // nil: e2eSeed
	dataDir string                      // "": a fresh one, seeded; else a stopped run's (a restart)
	env     map[string]string           // more of serve's environment
	stall   time.Duration               // the model client's stall timeout (0: the default)
	// configuredProvider: the assistant uses the provider saved on
	// /assistant (the real llm.Chain), not the demo model.
	configuredProvider bool
	clock              assistant.Clock // the assistant's turns' clock (nil: the wall clock)
}

// e2eApp is a running appliance and its fake Discord.
type e2eApp struct {
	t      *testing.T
	url    string
	fake   *fakediscord.Server
	demo   fakediscord.DemoGuild
	model  *llmfake.Server // the demo model (SetSteps scripts it)
	stderr *syncBuffer     // serve's log
	stdout *syncBuffer
	// dataDir is the run's KIMI_DATA_DIR; stop cancels serve and waits for
	// its exit (at the test's end if not before).
	dataDir string
	stop    func()
}

func startE2E(t *testing.T, o e2eOptions) *e2eApp {
	t.Helper()
	dataDir := o.dataDir
	if dataDir == "" {
		dataDir = filepath.Join(t.TempDir(), "data")
		seedDatabase(t, dataDir, o.specs, o.docs)
	}
	env := map[string]string{
		"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0", "KIMI_DEMO": "true",
		"KIMI_ADMIN_PASSWORD": e2eAdminPass, "KIMI_MODULES": o.modules, "KIMI_LOG_LEVEL": "debug",
	}
	maps.Copy(env, o.env)
	c, stdout, stderr := testCLI(env, "")
	c.specs = o.specs
	c.assistantStall = o.stall
	c.demoConfiguredProvider = o.configuredProvider
	c.assistantClock = o.clock
	a := &e2eApp{t: t, stderr: stderr, stdout: stdout, dataDir: dataDir}
	seed := o.seed
	if seed == nil {
		seed = e2eSeed
	}
	got := make(chan struct{})
	c.onDemoFake = func(f *fakediscord.Server, d fakediscord.DemoGuild) {
		a.fake, a.demo = f, d
		seed(f)
		close(got)
	}
	c.onDemoModel = func(m *llmfake.Server) { a.model = m }
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() { code <- c.main(ctx, []string{"serve"}) }()
	var once sync.Once
	a.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case rc := <-code:
				if rc != ExitOK {
					t.Errorf("serve exited with %d", rc)
				}
			case <-time.After(e2eWait):
				t.Error("serve did not stop after cancel")
			}
			if t.Failed() {
				logServe(t, stderr.String())
			}
		})
	}
	t.Cleanup(a.stop)
	readyRE := regexp.MustCompile(`msg=ready component=kimi addr=(\S+) url=(\S+)`)
	for deadline := time.Now().Add(e2eWait); ; time.Sleep(5 * time.Millisecond) {
		if m := readyRE.FindStringSubmatch(stderr.String()); m != nil {
			a.url = m[2]
			break
		}
		select {
		case rc := <-code:
			code <- rc
			t.Fatalf("serve exited with %d before ready:\n%s", rc, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready:\n%s", stderr)
		}
	}
	<-got // before ready: serve called the hook before the bot started
	return a
}

// seedDatabase prepares a fresh database in dataDir as an operator would
// have on /discord and /guilds: both privileged intents on (message
// content for the snapshots, members for the member cache), and the guild
// documents, with the specs the appliance will run (their settings
// schemas).
func seedDatabase(t *testing.T, dataDir string, specs []sdk.Spec, docs map[guildcfg.Target]string) {
	t.Helper()
	ctx := context.Background()
	if err := ensureDataDir(dataDir, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, filepath.Join(dataDir, config.DBFile), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := settings.SaveDiscordIntents(ctx, st, true, true, settings.Actor{Name: "e2e"}); err != nil {
		t.Fatal(err)
	}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Modules: specs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer guilds.Close()
	for target, text := range docs {
		d, err := guilds.Document(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := guilds.Write(ctx, target, text, d.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI, Name: "e2e"}); err != nil {
			t.Fatalf("write %v: %v", target, err)
		}
	}
}

// e2eClient is a signed-in browser without JavaScript: a cookie jar, no
// automatic redirects, the last CSRF token seen.
type e2eClient struct {
	a    *e2eApp
	http *http.Client
	csrf string
}

var e2eCSRF = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (a *e2eApp) signIn() *e2eClient {
	a.t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		a.t.Fatal(err)
	}
	c := &e2eClient{a: a, http: &http.Client{Jar: jar, Transport: &http.Transport{Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	c.get("/login")
	code, _, loc := c.post("/login", url.Values{"username": {e2eAdminLogin}, "password": {e2eAdminPass}})
	if code != http.StatusSeeOther || loc != "/" {
		a.t.Fatalf("sign in: %d to %q", code, loc)
	}
	return c
}

func (c *e2eClient) do(req *http.Request) (int, string, string) {
	c.a.t.Helper()
	res, err := c.http.Do(req)
	if err != nil {
		c.a.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.a.t.Fatal(err)
	}
	if m := e2eCSRF.FindStringSubmatch(string(b)); m != nil {
		c.csrf = m[1]
	}
	return res.StatusCode, string(b), res.Header.Get("Location")
}

// get returns the status and body of a page.
func (c *e2eClient) get(path string) (int, string) {
	c.a.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.a.url+path, nil)
	if err != nil {
		c.a.t.Fatal(err)
	}
	code, body, _ := c.do(req)
	return code, body
}

// post submits a form with the last CSRF token; it returns the status,
// body and Location.
func (c *e2eClient) post(path string, form url.Values) (int, string, string) {
	c.a.t.Helper()
	form.Set("_csrf", c.csrf)
	req, err := http.NewRequest(http.MethodPost, c.a.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

// waitPage polls a page until its body contains every part.
func (c *e2eClient) waitPage(what, path string, parts ...string) string {
	c.a.t.Helper()
	var body string
	e2eEventually(c.a.t, what, func() bool {
		var code int
		code, body = c.get(path)
		if code != http.StatusOK {
			return false
		}
		for _, p := range parts {
			if !strings.Contains(body, p) {
				return false
			}
		}
		return true
	})
	return body
}

// waitConnected waits until /discord shows the bot connected and in the
// test guilds, and the modules' global commands are registered.
func (a *e2eApp) waitConnected(c *e2eClient, commands ...string) {
	a.t.Helper()
	c.waitPage("the bot connected", "/discord", `data-state="connected"`, `data-testid="discord-guild-`+e2eGuild+`"`)
	e2eEventually(a.t, "the global commands "+strings.Join(commands, ", "), func() bool {
		have := map[string]bool{}
		for _, cmd := range a.fake.Commands("") {
			have[cmd.Name] = true
		}
		for _, n := range commands {
			if !have[n] {
				return false
			}
		}
		return true
	})
}

// e2eEventually polls cond up to e2eWait (a bound, not a timed assertion).
func e2eEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(e2eWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// answered waits for an interaction's first callback.
func (a *e2eApp) answered(id string) *fakediscord.InteractionState {
	a.t.Helper()
	var st *fakediscord.InteractionState
	e2eEventually(a.t, "interaction "+id+" answered", func() bool {
		st = a.fake.Interaction(id)
		return st != nil && st.Response != nil
	})
	return st
}

// e2eModule is a test module: it records the discord.message* events it
// gets and registers what start adds.
type e2eModule struct {
	start  func(rt *sdk.Runtime) error
	events chan sdk.Event

	mu sync.Mutex
	rt *sdk.Runtime
}

func (m *e2eModule) Migrations() []sdk.Migration { return nil }
func (m *e2eModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	m.mu.Lock()
	m.rt = rt
	m.mu.Unlock()
	for _, topic := range []string{sdk.TopicMessage, sdk.TopicMessageEdit, sdk.TopicMessageDelete} {
		if _, err := rt.Events.Subscribe(topic, func(_ context.Context, ev sdk.Event) error {
			m.events <- ev
			return nil
		}); err != nil {
			return err
		}
	}
	if m.start != nil {
		return m.start(rt)
	}
	return nil
}
func (m *e2eModule) Close(context.Context) error { return nil }
func (m *e2eModule) runtime() *sdk.Runtime       { m.mu.Lock(); defer m.mu.Unlock(); return m.rt }

// e2eModuleName is the test module's name.
const e2eModuleName = "e2e"

func newE2EModule() *e2eModule { return &e2eModule{events: make(chan sdk.Event, 1024)} }

func (m *e2eModule) spec() sdk.Spec {
	return sdk.Spec{Name: e2eModuleName, Version: "1.0", APIVersion: sdk.APIVersion,
		Create: func(sdk.LoadContext) (sdk.Module, error) { return m, nil },
		Permissions: sdk.Permissions{
			EventTopics:    []string{sdk.TopicMessage, sdk.TopicMessageEdit, sdk.TopicMessageDelete},
			DiscordActions: []sdk.DiscordAction{sdk.ActionSendMessage},
		},
		Commands: []string{"ping", "slow"}, // e2eInteractionsModule's
	}
}

// next returns the next event the module got, failing after e2eWait.
func (m *e2eModule) next(t *testing.T, what string) sdk.Event {
	t.Helper()
	select {
	case ev := <-m.events:
		return ev
	case <-time.After(e2eWait):
		t.Fatalf("the module got no %s", what)
	}
	return sdk.Event{}
}

// logServe reports a failed test's serve log: the whole log to a file in
// $KIMI_ARTIFACTS (default the system temp dir's kimi-artifacts) and its
// last lines in the test's output, so that the failure's own message
// stays near the end of a long run's output (CI shows its tail).
func logServe(t *testing.T, log string) {
	t.Helper()
	const tail = 20
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	dir := os.Getenv("KIMI_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "kimi-artifacts")
	}
	if p, err := keepArtifact(dir, strings.ReplaceAll(t.Name(), "/", "_")+"-serve-*.log", []byte(log)); err == nil && len(lines) > tail {
		t.Logf("serve's log (%d lines) kept in %s; its last %d:\n%s", len(lines), p, tail, strings.Join(lines[len(lines)-tail:], "\n"))
		return
	}
	t.Logf("serve's log:\n%s", log)
}

// keepArtifact writes data to a new file in dir named by pattern (its "*"
// made unique by os.CreateTemp, so two failures never share a name) and
// returns its path.
func keepArtifact(dir, pattern string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}
