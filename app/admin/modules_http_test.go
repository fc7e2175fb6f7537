package admin

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/modules/hello"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// probeName is the small test module of the module pages: deployment
// settings of every shape (bounded int, choice, secret, environment-only)
// and a health port the tests report through.
const probeName = "probe"

// probe is the probe module's instance: it keeps its runtime so a test
// can report health as the module would.
type probe struct {
	mu sync.Mutex
	rt *sdk.Runtime
	// ran receives the key of each run of its "tick" jobs; slow the key of
	// a "slow" job once it runs (it then holds its lease until the module
	// closes). Both are optional (nil: not reported).
	ran, slow chan string
}

func (p *probe) Migrations() []sdk.Migration { return nil }
func (p *probe) Start(_ context.Context, rt *sdk.Runtime) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rt = rt
	report := func(ch chan string, key string) {
		if ch != nil {
			select {
			case ch <- key:
			default:
			}
		}
	}
	if err := rt.Scheduler.Register("tick", func(_ context.Context, run sdk.JobRun) error {
		report(p.ran, run.Key)
		return nil
	}); err != nil {
		return err
	}
	if err := rt.Scheduler.Register("fail", func(context.Context, sdk.JobRun) error { return errors.New("probe: upstream said no") }); err != nil {
		return err
	}
	return rt.Scheduler.Register("slow", func(ctx context.Context, run sdk.JobRun) error {
		report(p.slow, run.Key)
		<-ctx.Done()
		return ctx.Err()
	})
}

// runtime is the running probe's runtime.
func (p *probe) runtime(t testing.TB) *sdk.Runtime {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rt == nil {
		t.Fatal("probe is not running")
	}
	return p.rt
}
func (p *probe) Close(context.Context) error { return nil }

// report sends a health report through the module's own port.
func (p *probe) report(t testing.TB, state sdk.HealthState, detail string) {
	t.Helper()
	p.mu.Lock()
	rt := p.rt
	p.mu.Unlock()
	if rt == nil {
		t.Fatal("probe is not running")
	}
	rt.Health.Report(state, detail, map[string]float64{"queue_depth": 3})
}

func probeSpec(p *probe) sdk.Spec {
	return sdk.Spec{
		Name: probeName, Version: "0.3.1", APIVersion: sdk.APIVersion,
		Settings: &sdk.SettingsDefinition{Label: "Probe", Fields: []sdk.SettingField{
			{Name: "limit", Label: "Limit", Kind: sdk.SettingInt, Default: 5, Min: 1, HasMin: true, Max: 10, HasMax: true, Help: "How many."},
			{Name: "mode", Kind: sdk.SettingString, Default: "quiet", Choices: []string{"quiet", "loud"}},
			{Name: "token", Kind: sdk.SettingString, Default: "", Secret: true},
			{Name: "region", Kind: sdk.SettingString, Default: "eu", EnvironmentOnly: true},
		}},
		Create: func(sdk.LoadContext) (sdk.Module, error) { return p, nil },
	}
}

// withModules gives the server a real module host over the harness's
// store and guild configuration: hello, kudos and the probe, with hello
// and the probe selected (stored, or through KIMI_MODULES when fromEnv).
func withModules(p *probe, fromEnv bool) func(*Options) {
	if p == nil {
		p = &probe{}
	}
	return func(o *Options) {
		ctx := context.Background()
		hopts := host.Options{
			Specs: []sdk.Spec{hello.Spec(), kudos.Spec(), probeSpec(p)}, Store: o.Store,
			Guilds: o.Guilds.(*guildcfg.Service), Logger: o.Logger,
		}
		if fromEnv {
			hopts.Selection, hopts.SelectionSet = []string{hello.Name, probeName}, true
		}
		mh, err := host.New(ctx, hopts)
		if err != nil {
			panic(err)
		}
		if fromEnv {
			err = mh.Start(ctx)
		} else {
			err = mh.SetEnabled(ctx, hello.Name, true, "test")
			if err == nil {
				err = mh.SetEnabled(ctx, probeName, true, "test")
			}
		}
		if err != nil {
			panic(err)
		}
		o.Host = mh
		if o.Scheduler == nil {
			o.Scheduler = mh.Scheduler() // as serve.go passes it
		}
	}
}

// moduleStateIs asserts a module's lifecycle state after the request.
func moduleStateIs(name string, want host.State) func(*testing.T, *harness, *client, *response) {
	return func(t *testing.T, h *harness, _ *client, _ *response) {
		t.Helper()
		if st, _ := h.modHost.Module(name); st.State != want {
			t.Errorf("%s is %q, want %q (reason %q)", name, st.State, want, st.Reason)
		}
	}
}

// probeStored asserts the probe's saved value of a setting ("" and false:
// none saved). The module reads it at its next restart.
func probeStored(field, want string, saved bool) func(*testing.T, *harness, *client, *response) {
	return func(t *testing.T, h *harness, _ *client, _ *response) {
		t.Helper()
		got, ok, err := h.st.Setting(context.Background(), "module."+probeName+"."+field)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || ok != saved {
			t.Errorf("saved %s = %q (%v), want %q (%v)", field, got, ok, want, saved)
		}
	}
}

// needsRunning is a scenario setup that fails unless names run on the real
// host and ports.
func needsRunning(names ...string) func(*testing.T, *harness) {
	return func(t *testing.T, h *harness) {
		t.Helper()
		requireRunning(t, h, names...)
	}
}

func requireRunning(t *testing.T, h *harness, names ...string) {
	t.Helper()
	for _, n := range names {
		if st, _ := h.modHost.Module(n); st.State != host.StateRunning {
			t.Fatalf("module %s is %s (%s), want running on the real ports", n, st.State, st.Reason)
		}
	}
}

func settingsForm(kv ...string) url.Values {
	v := url.Values{}
	for _, f := range []string{"limit", "mode", "token"} {
		v.Set(form.ModuleSettingName(f), "")
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(form.ModuleSettingName(kv[i]), kv[i+1])
	}
	return v
}

func confirmed(v url.Values) url.Values {
	v.Set(form.FieldConfirm, form.ConfirmYes)
	return v
}

var mods = []func(*Options){withModules(nil, false)}
var modsFromEnv = []func(*Options){withModules(nil, true)}

var moduleScenarios = []scenario{
	{name: "modules: anonymous is sent to sign in", method: "GET", url: "/modules", opts: mods,
		wantStatus: http.StatusSeeOther, wantLocation: "/login?next=%2Fmodules"},
	{name: "modules: anonymous module page is sent to sign in", method: "GET", url: "/modules/probe", opts: mods,
		wantStatus: http.StatusSeeOther, wantLocation: "/login?next=%2Fmodules%2Fprobe"},
	{name: "modules: anonymous event stream is sent to sign in", method: "GET", url: "/modules/events?view=list", opts: mods,
		wantStatus: http.StatusSeeOther},
	{name: "modules: the list shows every compiled-in module with state, version and toggles", method: "GET", url: "/modules",
		opts: mods, signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="module-row-hello"`, `data-testid="module-row-probe"`, `data-testid="module-row-` + kudos.Name + `"`,
			`data-state="running"`, `data-state="not selected"`, "0.3.1", `action="/modules/probe/enabled"`, ">Disable<", ">Enable<",
			`action="/modules/restart"`, `data-live="/modules/events?view=list"`, "/static/live."},
		wantNotContains: []string{"selection-from-env", `<span>Modules</span><span class="nav-soon"`}, setup: needsRunning(hello.Name, probeName)},
	{name: "modules: a module page shows manifest, chart, settings and storage note", method: "GET", url: "/modules/probe",
		opts: mods, signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{"Dependencies", "Escape hatches", "Guild settings", `data-testid="health-chart"`, "<polyline",
			"<title>", `name="setting.limit"`, "From 1 to 10.", `name="setting.token"`, `type="password"`, "not set",
			"Set in the environment only", "PROBE_REGION", moduleStorageNote}, setup: needsRunning(probeName)},
	{name: "modules: kudos' page lists its tools with tiers and its manifest, declared names included", method: "GET", url: "/modules/" + kudos.Name,
		opts: mods, signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{"give_kudos", "member and above", sdk.TopicMemberRemove, "send_message",
			`data-testid="module-table-reference_kudos_kudos"`, "0 rows",
			"<dt>Declared commands</dt>", `<code class="break">/kudos</code>`, `<code class="break">kudos_leaderboard</code>`},
		setup: func(t *testing.T, h *harness) {
			if err := h.modHost.SetEnabled(context.Background(), kudos.Name, true, "test"); err != nil {
				t.Fatal(err)
			}
			requireRunning(t, h, kudos.Name)
		}},
	{name: "modules: an unknown module is a 404", method: "GET", url: "/modules/nope", opts: mods, signedIn: true,
		wantStatus: http.StatusNotFound},
	{name: "modules: without the host the pages answer 503", method: "GET", url: "/modules", signedIn: true,
		wantStatus: http.StatusServiceUnavailable},
	{name: "modules: the event stream needs a view", method: "GET", url: "/modules/events", opts: mods, signedIn: true,
		wantStatus: http.StatusBadRequest},

	{name: "modules: disable without CSRF changes nothing", method: "POST", url: "/modules/hello/enabled", opts: mods,
		signedIn: true, noCSRF: true, form: confirmed(url.Values{form.ModuleEnabled: {"false"}}),
		wantStatus: http.StatusForbidden, wantNoAudit: true, setup: needsRunning(hello.Name), check: moduleStateIs(hello.Name, host.StateRunning)},
	{name: "modules: disable asks first", method: "POST", url: "/modules/hello/enabled", opts: mods, signedIn: true,
		form: url.Values{form.ModuleEnabled: {"false"}}, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="confirm-card"`, "Disable hello?", `name="enabled" value="false"`},
		wantNoAudit:  true, setup: needsRunning(hello.Name), check: moduleStateIs(hello.Name, host.StateRunning)},
	{name: "modules: disable confirmed is audited and restarts on the new selection", method: "POST", url: "/modules/hello/enabled",
		opts: mods, signedIn: true, form: confirmed(url.Values{form.ModuleEnabled: {"false"}}),
		wantStatus: http.StatusSeeOther, wantLocation: "/modules", wantAudit: []string{host.ActionModuleDisable},
		check: moduleStateIs(hello.Name, host.StateNotSelected)},
	{name: "modules: enable needs no confirmation and is audited", method: "POST", url: "/modules/" + kudos.Name + "/enabled",
		opts: mods, signedIn: true, form: url.Values{form.ModuleEnabled: {"true"}},
		wantStatus: http.StatusSeeOther, wantLocation: "/modules", wantAudit: []string{host.ActionModuleEnable},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			if st, _ := h.modHost.Module(kudos.Name); !st.Enabled {
				t.Errorf("kudos is not in the selection after enabling")
			}
		}},
	{name: "modules: a toggle asking for neither state is refused", method: "POST", url: "/modules/hello/enabled", opts: mods,
		signedIn: true, form: url.Values{form.ModuleEnabled: {"maybe"}}, wantStatus: http.StatusBadRequest,
		wantContains: []string{form.MsgModuleEnabled}, wantNoAudit: true},
	{name: "modules: toggling an unknown module is a 404", method: "POST", url: "/modules/nope/enabled", opts: mods,
		signedIn: true, form: url.Values{form.ModuleEnabled: {"true"}}, wantStatus: http.StatusNotFound, wantNoAudit: true},

	{name: "modules: KIMI_MODULES locks the toggles and says why", method: "GET", url: "/modules", opts: modsFromEnv,
		signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="selection-from-env"`, "hello, probe", "disabled", `title="The selection comes from KIMI_MODULES"`}},
	{name: "modules: KIMI_MODULES refuses a toggle", method: "POST", url: "/modules/hello/enabled", opts: modsFromEnv,
		signedIn: true, form: confirmed(url.Values{form.ModuleEnabled: {"false"}}), wantStatus: http.StatusConflict,
		wantContains: []string{"KIMI_MODULES"}, wantNoAudit: true, setup: needsRunning(hello.Name), check: moduleStateIs(hello.Name, host.StateRunning)},

	{name: "modules: restart all asks first", method: "POST", url: "/modules/restart", opts: mods, signedIn: true,
		wantStatus: http.StatusOK, wantContains: []string{"Restart every module?"}, wantNoAudit: true},
	{name: "modules: restart all confirmed is audited", method: "POST", url: "/modules/restart", opts: mods, signedIn: true,
		form: confirmed(url.Values{}), wantStatus: http.StatusSeeOther, wantLocation: "/modules",
		wantAudit: []string{host.ActionModuleRestart}, setup: needsRunning(probeName), check: moduleStateIs(probeName, host.StateRunning)},
	{name: "modules: restart one asks first", method: "POST", url: "/modules/probe/restart", opts: mods, signedIn: true,
		wantStatus: http.StatusOK, wantContains: []string{"Restart probe?"}, wantNoAudit: true},
	{name: "modules: restart one confirmed is audited", method: "POST", url: "/modules/probe/restart", opts: mods, signedIn: true,
		form: confirmed(url.Values{}), wantStatus: http.StatusSeeOther, wantLocation: "/modules/probe",
		wantAudit: []string{host.ActionModuleRestart}, setup: needsRunning(probeName), check: moduleStateIs(probeName, host.StateRunning)},
	{name: "modules: restart without CSRF changes nothing", method: "POST", url: "/modules/restart", opts: mods, signedIn: true,
		noCSRF: true, form: confirmed(url.Values{}), wantStatus: http.StatusForbidden, wantNoAudit: true},

	{name: "modules: a setting above its maximum is refused on its field", method: "POST", url: "/modules/probe/settings",
		opts: mods, signedIn: true, form: settingsForm("limit", "99"), wantStatus: http.StatusUnprocessableEntity,
		wantContains: []string{`data-testid="error-setting.limit"`, "at most 10", form.MsgModuleNotSaved, `value="99"`},
		wantNoAudit:  true, check: probeStored("limit", "", false)},
	{name: "modules: a setting that is not a number is refused on its field", method: "POST", url: "/modules/probe/settings",
		opts: mods, signedIn: true, form: settingsForm("limit", "lots"), wantStatus: http.StatusUnprocessableEntity,
		wantContains: []string{`data-testid="error-setting.limit"`}, wantNoAudit: true, check: probeStored("limit", "", false)},
	{name: "modules: a choice outside the list is refused on its field", method: "POST", url: "/modules/probe/settings",
		opts: mods, signedIn: true, form: settingsForm("mode", "shouty"), wantStatus: http.StatusUnprocessableEntity,
		wantContains: []string{`data-testid="error-setting.mode"`}, wantNoAudit: true},
	{name: "modules: a control character is refused by the form", method: "POST", url: "/modules/probe/settings",
		opts: mods, signedIn: true, form: settingsForm("mode", "quiet\x00"), wantStatus: http.StatusUnprocessableEntity,
		wantContains: []string{form.MsgModuleSettingText}, wantNoAudit: true},
	{name: "modules: valid settings are saved and audited", method: "POST", url: "/modules/probe/settings", opts: mods,
		signedIn: true, form: settingsForm("limit", "7", "mode", "loud"), wantStatus: http.StatusSeeOther,
		wantLocation: "/modules/probe#card-module-settings", wantAudit: []string{host.ActionSettingsSave},
		check: probeStored("limit", "7", true)},
	{name: "modules: a saved secret is never shown back", method: "POST", url: "/modules/probe/settings", opts: mods,
		signedIn: true, form: settingsForm("token", "s3cret-value"), wantStatus: http.StatusSeeOther,
		wantAudit: []string{host.ActionSettingsSave},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			// The read model shows the settings the module runs with.
			if err := h.modHost.Restart(context.Background(), probeName, "test"); err != nil {
				t.Fatal(err)
			}
			page := c.get("/modules/probe")
			wantBody(t, page, "set — leave blank to keep")
			if strings.Contains(page.body, "s3cret-value") {
				t.Error("the module page renders the saved secret")
			}
			if strings.Contains(h.logs.String(), "s3cret-value") {
				t.Error("the secret was logged")
			}
		}},
	{name: "modules: saving without CSRF changes nothing", method: "POST", url: "/modules/probe/settings", opts: mods,
		signedIn: true, noCSRF: true, form: settingsForm("limit", "7"), wantStatus: http.StatusForbidden, wantNoAudit: true,
		check: probeStored("limit", "", false)},
	{name: "modules: a module without settings has no settings form", method: "POST", url: "/modules/hello/settings", opts: mods,
		signedIn: true, form: url.Values{}, wantStatus: http.StatusNotFound, wantNoAudit: true},
}

func TestModulePages(t *testing.T) { runScenarios(t, moduleScenarios) }

// readEvent reads one server-sent event's data (its data lines joined),
// failing the test when none arrives within a generous bound.
func readEvent(t *testing.T, events <-chan string) string {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(15 * time.Second):
		t.Fatal("no event within 15s")
	}
	return ""
}

// openStream opens GET path with c's session and returns its events.
func openStream(t *testing.T, c *client, path string) (<-chan string, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.h.ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET %s = %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	events := make(chan string, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			case line == "" && data != nil:
				events <- strings.Join(data, "\n")
				data = nil
			}
		}
	}()
	return events, res
}

// TestModuleEventsDeliverHealthChanges: a client connected to the event
// stream over real HTTP receives the current fragment at once and, after
// the module reports a new health, a fragment showing it — for the list
// and the overview's card.
func TestModuleEventsDeliverHealthChanges(t *testing.T) {
	p := &probe{}
	h := newHarness(t, withModules(p, false))
	requireRunning(t, h, probeName)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	for _, view := range []string{"list", "overview"} {
		t.Run(view, func(t *testing.T) {
			events, _ := openStream(t, c, "/modules/events?view="+view)
			first := readEvent(t, events)
			if !strings.Contains(first, `data-testid="module-state-probe" data-state="running"`) {
				t.Fatalf("first fragment does not show the probe running: %.600s", first)
			}
			p.report(t, sdk.HealthDegraded, "queue is backing up ("+view+")")
			for {
				ev := readEvent(t, events)
				if strings.Contains(ev, `data-testid="module-state-probe" data-state="degraded"`) &&
					strings.Contains(ev, "queue is backing up ("+view+")") {
					break
				}
			}
			p.report(t, sdk.HealthHealthy, "")
		})
	}
}

// TestModuleEventsEndOnShutdown: http.Server.Shutdown does not wait for
// an open event stream when CloseStreams is registered (as app/serve.go
// does): the stream ends and Shutdown returns well before its deadline.
func TestModuleEventsEndOnShutdown(t *testing.T) {
	h := newHarness(t, withModules(nil, false))
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	events, _ := openStream(t, c, "/modules/events?view=overview")
	readEvent(t, events)
	h.ts.Config.RegisterOnShutdown(h.srv.CloseStreams)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.ts.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with an open event stream: %v", err)
	}
	for range events { // the stream ended: the channel closes
	}
}

// TestOverviewModuleHealth: the overview shows the modules' health at a
// glance — counts by state and the worst module first, each linked.
func TestOverviewModuleHealth(t *testing.T) {
	p := &probe{}
	h := newHarness(t, withModules(p, false))
	requireRunning(t, h, probeName)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	p.report(t, sdk.HealthFailed, "lost its queue")
	page := c.get("/")
	wantStatus(t, page, http.StatusOK)
	wantBody(t, page, `data-testid="module-count-failed"`, `data-testid="module-count-running"`, `data-testid="module-count-not selected"`,
		`href="/modules/probe"`, "lost its queue", `data-live="/modules/events?view=overview"`)
	probeAt, helloAt := strings.Index(page.body, `data-testid="glance-probe"`), strings.Index(page.body, `data-testid="glance-hello"`)
	if probeAt < 0 || helloAt < 0 || probeAt > helloAt {
		t.Errorf("the failed probe is not listed before the running hello (at %d and %d)", probeAt, helloAt)
	}
}
