package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestServices: declared provide/consume only, one live provider, handles
// dead after the provider closes (even once provided again), and a
// declared service never provided degrades the provider.
func TestServices(t *testing.T) {
	provider := &testModule{start: func(ctx context.Context, rt *sdk.Runtime) error {
		if _, err := rt.Services.Provide("board", 1, "impl"); err != nil {
			return err
		}
		if _, err := rt.Services.Provide("board", 1, "again"); err == nil || err.Error() != "service board@1 is already provided by 'p'" {
			return fmt.Errorf("second provide: %v", err)
		}
		if _, err := rt.Services.Provide("other", 1, "x"); err == nil || err.Error() != "module 'p' did not declare that it provides other@1" {
			return fmt.Errorf("undeclared provide: %v", err)
		}
		return nil
	}}
	consumer := &testModule{}
	r := newRig(t, []sdk.Spec{
		spec("p", provider, func(s *sdk.Spec) {
			s.Provides = []sdk.ServiceDeclaration{{Name: "board", Version: 1}, {Name: "never", Version: 2}}
		}),
		spec("c", consumer, deps("p"), func(s *sdk.Spec) {
			s.Consumes = []sdk.ServiceRequirement{{Name: "board", Version: 1, Provider: "p"}}
		}),
	})
	r.start(t)
	if st := r.status(t, "p"); st.State != StateRunning || st.Health.State != sdk.HealthDegraded || st.Health.Detail != "declared but did not provide never@2" {
		t.Fatalf("p = %s %q, health %+v", st.State, st.Reason, st.Health)
	}
	rt := consumer.runtime()
	if _, err := rt.Services.Get("other", 1); err == nil || err.Error() != "module 'c' did not declare that it consumes other@1" {
		t.Errorf("undeclared get = %v", err)
	}
	h, err := rt.Services.Get("board", 1)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := h.Value(); err != nil || v != "impl" {
		t.Fatalf("Value = %v, %v", v, err)
	}
	// Restarting p restarts its dependent c too; hold on to the old handle.
	if err := r.h.Restart(context.Background(), "p", "tester"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Value(); err == nil || err.Error() != "service board@1 closed with module 'p'" {
		t.Errorf("old handle after provider restart = %v", err)
	}
	if consumer.closed != 1 || r.status(t, "c").State != StateRunning {
		t.Errorf("consumer closed %d times, state %s", consumer.closed, r.status(t, "c").State)
	}
}

// TestToolRegistry: tools registered in create, sealed afterwards with the
// original's message, each module registering only the names it owns,
// visible only while running and only in active guilds, labels kept.
func TestToolRegistry(t *testing.T) {
	var lateErr error
	tool := func(name string) sdk.Tool {
		return sdk.Tool{Name: name, Description: "d", Handler: func(context.Context, sdk.ToolContext, json.RawMessage) (string, error) { return name, nil }}
	}
	var lc sdk.LoadContext
	mod := &testModule{start: func(context.Context, *sdk.Runtime) error { lateErr = lc.Tools().Register(tool("late")); return nil }}
	s := spec("m", mod, func(s *sdk.Spec) { s.Tools = []string{"m_tool"} })
	s.Create = func(c sdk.LoadContext) (sdk.Module, error) {
		lc = c
		c.RegisterToolLabels(map[string]string{"m_tool": "Doing m"})
		return mod, c.Tools().Register(tool("m_tool"))
	}
	// clash owns clash_own only: m's tool is not its to take.
	clash := spec("clash", &testModule{}, func(s *sdk.Spec) { s.Tools = []string{"clash_own"} })
	clash.Create = func(c sdk.LoadContext) (sdk.Module, error) {
		if err := c.Tools().Register(tool("clash_own")); err != nil {
			return nil, err
		}
		return nil, c.Tools().Register(tool("m_tool"))
	}
	r := newRig(t, []sdk.Spec{s, clash})
	r.start(t)
	if lateErr == nil || lateErr.Error() != "tool 'late' cannot be registered after module loading; register tools from ModuleSpec.create(), not start()" {
		t.Errorf("late registration = %v", lateErr)
	}
	if st := r.status(t, "clash"); st.State != StateFailed || !strings.Contains(st.Reason, "module 'clash' did not declare tool 'm_tool'") {
		t.Errorf("clash = %s %q", st.State, st.Reason)
	}
	if got := r.h.ToolsFor(sdk.ToolContext{GuildID: 1}); len(got) != 0 {
		t.Errorf("tools in an inactive guild = %+v", got)
	}
	r.activate(t, 1)
	got := r.h.ToolsFor(sdk.ToolContext{GuildID: 1})
	if len(got) != 1 || got[0].Name != "m_tool" || got[0].Label != "Doing m" || got[0].Module != "m" {
		t.Fatalf("tools in guild 1 = %+v (clash_own must be gone with its failed create)", got)
	}
	if len(r.h.ToolsFor(sdk.ToolContext{GuildID: 0})) != 0 {
		t.Error("a guild-only tool is visible outside guilds")
	}
	if err := r.h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.h.ToolsFor(sdk.ToolContext{GuildID: 1})) != 0 {
		t.Error("tools stay visible after their module closed")
	}
	if _, err := r.h.RunTool(context.Background(), "m_tool", sdk.ToolContext{GuildID: 1}, nil); !errors.Is(err, ErrToolUnavailable) {
		t.Errorf("RunTool after close = %v", err)
	}
}

func settingsSpec(mod sdk.Module) sdk.Spec {
	return spec("set-mod", mod, func(s *sdk.Spec) {
		s.Settings = &sdk.SettingsDefinition{Label: "S", Fields: []sdk.SettingField{
			{Name: "limit", Kind: sdk.SettingInt, Default: 3, Min: 1, HasMin: true},
			{Name: "name", Kind: sdk.SettingString},
			{Name: "api_key", Kind: sdk.SettingString, Secret: true, Default: ""},
			{Name: "url", Kind: sdk.SettingString, EnvironmentOnly: true, Default: ""},
		}}
	})
}

// TestSettings: environment, overlaid by saved values; invalid settings
// fail the module with field errors; secrets saved with the secret flag,
// never shown back; every save audited.
func TestSettings(t *testing.T) {
	ctx := context.Background()
	var got sdk.Settings
	mod := &testModule{}
	s := settingsSpec(mod)
	create := s.Create
	s.Create = func(lc sdk.LoadContext) (sdk.Module, error) { got = lc.Settings(); return create(lc) }
	r := newRig(t, []sdk.Spec{s}, withEnv(map[string]string{"SET_MOD_LIMIT": "0", "SET_MOD_API_KEY": "env-secret"}))
	r.start(t)
	st := r.status(t, "set-mod")
	if st.State != StateFailed || len(st.FieldErrors) != 2 {
		t.Fatalf("set-mod = %s %q %+v, want failed with two field errors", st.State, st.Reason, st.FieldErrors)
	}
	fields := map[string]string{}
	for _, f := range st.FieldErrors {
		fields[f.Field] = f.Message
	}
	if !strings.Contains(fields["limit"], "'limit'") || fields["name"] != "module 'set-mod' setting 'name' is required" {
		t.Errorf("field errors = %q", fields)
	}
	// A bad save is refused whole, naming the field; nothing is stored.
	var se *SettingsError
	if err := r.h.SaveSettings(ctx, "set-mod", map[string]string{"url": "http://x", "name": "n"}, "admin"); !errors.As(err, &se) || se.Fields[0].Field != "url" {
		t.Fatalf("saving an environment-only field = %v", err)
	}
	if err := r.h.SaveSettings(ctx, "set-mod", map[string]string{"limit": "5", "name": "kimi", "api_key": "saved-secret"}, "admin"); err != nil {
		t.Fatalf("SaveSettings: %v", err)
	}
	if err := r.h.Restart(ctx, "set-mod", "admin"); err != nil {
		t.Fatal(err)
	}
	st = r.status(t, "set-mod")
	if st.State != StateRunning || got.Int("limit") != 5 || got.String("name") != "kimi" || got.String("api_key") != "saved-secret" {
		t.Fatalf("after save: %s %q, settings limit=%d name=%q", st.State, st.Reason, got.Int("limit"), got.String("name"))
	}
	for _, s := range st.Settings {
		if s.Field.Name == "api_key" && (s.Value != "" || !s.Set) {
			t.Errorf("secret rendered back: %+v", s)
		}
		if s.Field.Name == "limit" && (s.Value != "5" || s.Source != "saved") {
			t.Errorf("limit status = %+v", s)
		}
	}
	var secret int
	if err := r.st.Reader().QueryRowContext(ctx, `SELECT secret FROM kimi_settings WHERE key = 'module.set-mod.api_key'`).Scan(&secret); err != nil || secret != 1 {
		t.Errorf("secret flag = %d, %v", secret, err)
	}
	entries, _, err := r.st.ListAudit(ctx, store.AuditFilter{Action: ActionSettingsSave})
	if err != nil || len(entries) != 1 || strings.Contains(entries[0].Detail, "saved-secret") {
		t.Errorf("audit = %+v, %v", entries, err)
	}
}

// TestSelection: nothing stored selects nothing; SetEnabled stores and
// audits and restarts on the new selection; KIMI_MODULES overrides it.
func TestSelection(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, []sdk.Spec{spec("a", &testModule{}), spec("b", &testModule{})}, func(o *Options) { o.Selection, o.SelectionSet = nil, false })
	r.start(t)
	if st := r.status(t, "a"); st.State != StateNotSelected || st.Enabled {
		t.Fatalf("default a = %s", st.State)
	}
	if err := r.h.SetEnabled(ctx, "b", true, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := r.h.SetEnabled(ctx, "a", true, "admin"); err != nil {
		t.Fatal(err)
	}
	if sel := r.h.Selection(); sel.FromEnv || !equalStrings(sel.Names, []string{"b", "a"}) {
		t.Errorf("selection = %+v", sel)
	}
	if r.status(t, "a").State != StateRunning || r.status(t, "b").State != StateRunning {
		t.Error("enabled modules are not running")
	}
	if err := r.h.SetEnabled(ctx, "nope", true, "admin"); !errors.Is(err, ErrUnknownModule) {
		t.Errorf("unknown module = %v", err)
	}
	if err := r.h.SetEnabled(ctx, "b", false, "admin"); err != nil {
		t.Fatal(err)
	}
	if st := r.status(t, "b"); st.State != StateNotSelected {
		t.Errorf("disabled b = %s", st.State)
	}
	entries, _, err := r.st.ListAudit(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action+" "+e.Target)
	}
	for _, want := range []string{"modules.enable b", "modules.enable a", "modules.disable b"} {
		if !strings.Contains(strings.Join(actions, "|"), want) {
			t.Errorf("audit %q lacks %q", actions, want)
		}
	}

	// The override wins over the stored selection (which still says a).
	h2, err := New(ctx, Options{Specs: []sdk.Spec{spec("a", &testModule{}), spec("b", &testModule{})}, Store: r.st, Guilds: r.guilds,
		Selection: []string{"b"}, SelectionSet: true, storage: &memStorage{}, events: &memBus{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close(ctx)
	if err := h2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if sel := h2.Selection(); !sel.FromEnv || !equalStrings(sel.Names, []string{"b"}) {
		t.Errorf("override selection = %+v", sel)
	}
	if err := h2.SetEnabled(ctx, "a", false, "admin"); err != nil {
		t.Fatal(err)
	}
	if st, _ := h2.Module("b"); st.State != StateRunning {
		t.Errorf("b under the override = %s", st.State)
	}
}

// TestGuildSettingsPort: OnChange fires per changed (guild, module) while
// the module runs; invalid settings are applied and reported in health.
func TestGuildSettingsPort(t *testing.T) {
	ctx := context.Background()
	changed := make(chan uint64, 8)
	mod := &testModule{start: func(ctx context.Context, rt *sdk.Runtime) error {
		rt.GuildSettings.OnChange(func(_ context.Context, g uint64) { changed <- g })
		return nil
	}}
	r := newRig(t, []sdk.Spec{spec("gs", mod, func(s *sdk.Spec) {
		s.GuildSettings = &sdk.GuildSettingsSchema{InvalidPolicy: sdk.DisableModule, Fields: []sdk.GuildSettingField{{Name: "channel_id", Kind: sdk.GuildSettingID, Required: true}}}
	})})
	r.activate(t, 7)
	r.activate(t, 8)
	r.start(t)
	rt := mod.runtime()
	if st := r.status(t, "gs"); st.Health.Detail != "invalid guild settings in 7, 8" {
		t.Errorf("health = %+v, want the two invalid guilds", st.Health)
	}
	if rt.GuildActive(7) {
		t.Error("disable_module: guild 7 active for the module with invalid settings")
	}
	r.write(t, guildcfg.GuildModuleTarget(7, "gs"), "---\nchannel_id: \"99\"\n---\n")
	select {
	case g := <-changed:
		if g != 7 {
			t.Errorf("OnChange guild = %d", g)
		}
	case <-waitLong():
		t.Fatal("OnChange did not fire")
	}
	eventually(t, "health lists only guild 8", func() bool { return r.status(t, "gs").Health.Detail == "invalid guild settings in 8" })
	if !rt.GuildActive(7) || !rt.GuildSettings.IsEnabled(ctx, 7) {
		t.Error("guild 7 not active after a valid document")
	}
	if snap, err := rt.GuildSettings.Get(ctx, 7); err != nil || snap.ID("channel_id") != 99 {
		t.Errorf("Get = %+v, %v", snap, err)
	}
}

// TestGuildSettingsCallbackHasTheModuleLifetime: an OnChange callback gets
// a live ctx with a deadline (the callback timeout) that the module's Close
// cancels, so a callback waiting on it ends when the module closes.
func TestGuildSettingsCallbackHasTheModuleLifetime(t *testing.T) {
	entered, returned := make(chan bool, 1), make(chan error, 1)
	mod := &testModule{start: func(ctx context.Context, rt *sdk.Runtime) error {
		rt.GuildSettings.OnChange(func(cbctx context.Context, _ uint64) {
			_, hasDeadline := cbctx.Deadline()
			entered <- hasDeadline && cbctx.Err() == nil
			<-cbctx.Done()
			returned <- cbctx.Err()
		})
		return nil
	}}
	r := newRig(t, []sdk.Spec{spec("life", mod, func(s *sdk.Spec) {
		s.GuildSettings = &sdk.GuildSettingsSchema{Fields: []sdk.GuildSettingField{{Name: "n", Kind: sdk.GuildSettingInt}}}
	})})
	r.activate(t, 7)
	r.start(t)
	r.write(t, guildcfg.GuildModuleTarget(7, "life"), "---\nn: 1\n---\n")
	select {
	case live := <-entered:
		if !live {
			t.Error("OnChange ctx is not live with a deadline")
		}
	case <-waitLong():
		t.Fatal("OnChange did not fire")
	}
	closed := make(chan error, 1)
	go func() { closed <- r.h.Close(context.Background()) }()
	select {
	case err := <-returned:
		if err == nil {
			t.Error("the callback's ctx ended without an error")
		}
	case <-waitLong():
		t.Fatal("Close did not cancel the OnChange callback's ctx")
	}
	<-closed
}

// TestHealthBook: keyed reports, core constraints the module cannot
// clear, worst-state aggregation, bounds, secret-looking metrics dropped,
// bounded history.
func TestHealthBook(t *testing.T) {
	b := newHealthBook(timeNow, 3, nil)
	b.report("m", sdk.HealthHealthy, "", map[string]float64{"ok": 1, "api_token": 2, "Secret_count": 3})
	b.reportKey("m", "digest", sdk.HealthDegraded, "digest late", nil)
	b.constrain("m", "services", sdk.HealthDegraded, "declared but did not provide x@1")
	h, _, _ := b.snapshot("m")
	if h.State != sdk.HealthDegraded || h.Detail != "digest late; declared but did not provide x@1" {
		t.Errorf("aggregate = %+v", h)
	}
	if _, ok := h.Metrics["api_token"]; ok || h.Metrics["ok"] != 1 || len(h.Metrics) != 1 {
		t.Errorf("metrics = %v", h.Metrics)
	}
	b.reportKey("m", "digest", sdk.HealthHealthy, "", nil) // clears the key
	b.report("m", sdk.HealthHealthy, "", nil)              // cannot clear the core constraint
	h, _, _ = b.snapshot("m")
	if h.State != sdk.HealthDegraded || h.Detail != "declared but did not provide x@1" {
		t.Errorf("after clearing = %+v", h)
	}
	b.report("m", sdk.HealthFailed, strings.Repeat("x", 600), nil)
	b.report("m", sdk.HealthFailed, "other", nil)
	h, hist, _ := b.snapshot("m")
	if len([]rune(b.mods["m"].unkeyed.Detail)) > sdk.MaxHealthDetailLength || len(hist) != 3 || hist[2].Detail != "other" {
		t.Errorf("history = %+v", hist)
	}
}
