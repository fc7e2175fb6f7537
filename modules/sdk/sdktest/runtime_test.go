package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// probe is a small module whose Start and Close are scripted by the test.
type probe struct {
	migrations []sdk.Migration
	start      func(ctx context.Context, rt *sdk.Runtime) error
	closed     int
}

func (p *probe) Migrations() []sdk.Migration { return p.migrations }
func (p *probe) Start(ctx context.Context, rt *sdk.Runtime) error {
	if p.start == nil {
		return nil
	}
	return p.start(ctx, rt)
}
func (p *probe) Close(context.Context) error { p.closed++; return nil }

func probeSpec(p *probe) sdk.Spec {
	return sdk.Spec{
		Name: "probe", Version: "1", APIVersion: 2,
		Create: func(lc sdk.LoadContext) (sdk.Module, error) {
			err := lc.Tools().Register(sdk.Tool{Name: "probe_echo", Description: "Echo.", Handler: func(_ context.Context, tc sdk.ToolContext, args json.RawMessage) (string, error) {
				return lc.Settings().String("greeting") + " " + tc.UserName, nil
			}})
			return p, err
		},
		Settings: &sdk.SettingsDefinition{Fields: []sdk.SettingField{
			{Name: "greeting", Kind: sdk.SettingString, Default: "hi"},
			{Name: "limit", Kind: sdk.SettingInt, Default: 1, Min: 1, HasMin: true},
		}},
		GuildSettings: &sdk.GuildSettingsSchema{Fields: []sdk.GuildSettingField{{Name: "channel", Kind: sdk.GuildSettingID}}},
		Permissions: sdk.Permissions{
			DiscordActions:   []sdk.DiscordAction{sdk.ActionSendMessage},
			ScheduledResults: []string{"reports"},
			RawStorage:       true,
		},
		Tools: []string{"probe_echo"},
	}
}

func TestRuntimeWiresEveryPortAndRunsTheLifecycle(t *testing.T) {
	ctx := context.Background()
	p := &probe{migrations: []sdk.Migration{{Name: "001_items", Up: createItems}}}
	var seen *sdk.Runtime
	p.start = func(_ context.Context, rt *sdk.Runtime) error { seen = rt; return nil }
	t.Setenv("PROBE_GREETING", "hello")

	r := NewRuntime(t, probeSpec(p),
		WithEnv(), WithSettings(map[string]any{"limit": 3}),
		WithCapabilities(sdk.CapScheduledResults), WithIntents(true, false),
		WithGuildSettings(100, map[string]any{"channel": "900"}),
		WithGuildSettings(200, map[string]any{"channel": "not an id"}),
		WithGuildActive(func(g uint64) bool { return g != 300 }),
	)
	r.Start(ctx)

	if seen != r.RT || r.RT.ModuleName != "probe" || r.RT.Logger == nil {
		t.Fatal("Start did not receive the runtime")
	}
	if missing := r.RT.MissingPorts(); len(missing) != 0 {
		t.Errorf("missing ports: %v", missing)
	}
	if r.RT.GuildSettings == nil || r.RT.ScheduledResults == nil || r.RT.Proposals == nil || r.RT.RawStorage == nil {
		t.Error("optional ports the spec is entitled to are nil")
	}
	if !r.RT.Capabilities.MembersIntent() || !r.RT.Capabilities.Has(sdk.CapScheduledResults) {
		t.Error("capabilities and intents not advertised")
	}
	if r.Settings.String("greeting") != "hello" || r.Settings.Int("limit") != 3 {
		t.Errorf("settings = greeting %q limit %d", r.Settings.String("greeting"), r.Settings.Int("limit"))
	}
	// The module predicate: core-active and valid guild settings.
	for guild, want := range map[uint64]bool{100: true, 200: false, 300: false, 400: true} {
		if got := r.RT.IsGuildActive(guild); got != want {
			t.Errorf("IsGuildActive(%d) = %v, want %v", guild, got, want)
		}
	}
	if _, err := r.Storage.Writer().Exec(`INSERT INTO ` + r.Storage.Table("items") + ` (name) VALUES ('x')`); err != nil {
		t.Errorf("migrations were not applied: %v", err)
	}
	reply, err := r.CallTool(ctx, "probe_echo", nil, sdk.ToolContext{UserName: "Ann"})
	if err != nil || reply != "hello Ann" {
		t.Errorf("tool = %q, %v", reply, err)
	}
	files := NewFakeToolFiles()
	files.AddAttachment(sdk.ToolAttachment{ID: "a"}, []byte("x"))
	if _, err := r.CallTool(ctx, "probe_echo", nil, sdk.ToolContext{Files: files}); err != nil {
		t.Fatal(err)
	}
	if _, err := files.ReadAttachment(ctx, "a", 1); !errors.Is(err, &sdk.FileAccessError{Code: sdk.FileExpired}) {
		t.Errorf("tool files after the call = %v, want expired", err)
	}
	if err := r.Tools.Register(sdk.Tool{Name: "late", Description: "d", Handler: echoTool}); err == nil {
		t.Error("the tool registry was not sealed after create")
	}
	if cur, _ := r.Health.Current(); cur.State != sdk.HealthHealthy {
		t.Errorf("health after a clean start = %+v", cur)
	}
	if err := r.StartErr(ctx); err == nil {
		t.Error("a second start succeeded")
	}
	if err := r.Close(ctx); err != nil || p.closed != 1 {
		t.Errorf("close = %v, closed %d", err, p.closed)
	}
	_ = r.Close(ctx)
	if p.closed != 1 {
		t.Error("Close ran twice")
	}
}

func TestRuntimeBindsHTTPToTheDeclaredHosts(t *testing.T) {
	ctx := context.Background()
	spec := probeSpec(&probe{})
	spec.Settings.Fields = append(spec.Settings.Fields, sdk.SettingField{Name: "api_url", Kind: sdk.SettingString, Default: "https://api.example.com:8443", EnvironmentOnly: true})
	spec.Permissions.HTTPHosts = []sdk.HostRule{{Host: "${api_url}"}}
	r := NewRuntime(t, spec)
	r.HTTP.RouteBytes("https://", []byte("ok"))

	if _, err := r.RT.HTTP.Get(ctx, "https://api.example.com:8443/v1"); err != nil {
		t.Errorf("the setting's host and port: %v", err)
	}
	if _, err := r.RT.HTTP.Get(ctx, "https://api.example.com/v1"); err == nil {
		t.Error("the default port was allowed although the setting names 8443")
	}

	spec.Permissions.HTTPHosts = []sdk.HostRule{{Host: "${missing}"}}
	if _, err := TryNewRuntime(t, spec); err == nil || err.Error() != "module 'probe' http host ${missing} names an unknown setting" {
		t.Errorf("unknown setting = %v", err)
	}
}

func TestRuntimeWithholdsPortsTheSpecIsNotEntitledTo(t *testing.T) {
	spec := probeSpec(&probe{})
	spec.GuildSettings = nil
	spec.Permissions = sdk.Permissions{ScheduledResults: []string{"reports"}}
	r := NewRuntime(t, spec) // scheduled_results.v1 not advertised

	if r.RT.GuildSettings != nil || r.RT.ScheduledResults != nil || r.RT.RawStorage != nil {
		t.Error("ports granted without a declaration or capability")
	}
	if r.ScheduledResults == nil || r.GuildSettings == nil {
		t.Error("the fakes must exist for inspection")
	}
	if _, err := r.Discord.SendMessage(context.Background(), 1, sdk.OutgoingMessage{}); err == nil {
		t.Error("a module that declares no Discord actions could send")
	}
}

func TestRuntimeDegradesAModuleThatDoesNotProvideItsServices(t *testing.T) {
	ctx := context.Background()
	p := &probe{}
	spec := probeSpec(p)
	spec.Provides = []sdk.ServiceDeclaration{{Name: "board", Version: 1}, {Name: "feed", Version: 2}}
	p.start = func(_ context.Context, rt *sdk.Runtime) error {
		_, err := rt.Services.Provide("board", 1, "impl")
		return err
	}
	r := NewRuntime(t, spec)
	r.Start(ctx)

	c, ok := r.Health.Constraint("services")
	if !ok || c.State != sdk.HealthDegraded || c.Detail != "declared but did not provide feed@2" {
		t.Errorf("services constraint = %+v (%v)", c, ok)
	}
	if r.Health.State() != sdk.HealthDegraded {
		t.Errorf("visible state = %s", r.Health.State())
	}
	// A module's own healthy report cannot clear a core constraint.
	r.Health.ReportKey("services", sdk.HealthHealthy, "", nil)
	r.Health.Report(sdk.HealthHealthy, "", nil)
	if r.Health.State() != sdk.HealthDegraded {
		t.Error("the module cleared a core constraint")
	}
	r.Health.Constrain("services", sdk.HealthHealthy, "")
	if r.Health.State() != sdk.HealthHealthy {
		t.Errorf("state after the constraint lifted = %s", r.Health.State())
	}
}

func TestRuntimeFailedStartIsClosedAndReported(t *testing.T) {
	p := &probe{start: func(context.Context, *sdk.Runtime) error { return errors.New("no database") }}
	r := NewRuntime(t, probeSpec(p))

	err := r.StartErr(context.Background())

	if err == nil || err.Error() != "no database" || p.closed != 1 {
		t.Errorf("start = %v, closed %d", err, p.closed)
	}
	if cur, _ := r.Health.Current(); cur.State != sdk.HealthFailed || cur.Detail != "no database" {
		t.Errorf("health = %+v", cur)
	}
}

func TestRuntimeRestartOverTheSameStorage(t *testing.T) {
	runs := 0
	p := &probe{migrations: []sdk.Migration{{Name: "001_items", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
		runs++
		return createItems(ctx, mc)
	}}}}
	first := NewRuntime(t, probeSpec(p))
	shared := NewFakeServices()
	second := NewRuntime(t, probeSpec(p), WithStorage(first.Storage), WithServices(shared), WithTrust(NewFakeTrust()))

	if runs != 1 || second.Storage != first.Storage || second.Services != shared {
		t.Errorf("migration ran %d times; storage shared %v", runs, second.Storage == first.Storage)
	}
}

func TestRuntimeRefusesWhatTheHostRefuses(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*sdk.Spec)
		opts   []Option
		want   string
	}{
		{"api version", func(s *sdk.Spec) { s.APIVersion = 3 }, nil, "Kimi module 'probe' requires module API 3; core provides 2"},
		{"capability", func(s *sdk.Spec) { s.RequiresCapabilities = []string{"x.v1"} }, nil, "Kimi module 'probe' requires unavailable capability 'x.v1'"},
		{"setting below minimum", nil, []Option{WithSettings(map[string]any{"limit": 0})}, "module 'probe' setting 'limit': must be at least 1"},
		{"unknown setting", nil, []Option{WithSettings(map[string]any{"nope": 1.5})}, "module 'probe' has no setting 'nope'"},
		{"settings without definition", func(s *sdk.Spec) { s.Settings = nil }, []Option{WithSettings(map[string]any{"x": true})}, "module 'probe' declares no settings"},
		{"create error", func(s *sdk.Spec) {
			s.Create = func(sdk.LoadContext) (sdk.Module, error) { return nil, errors.New("bad wiring") }
		}, nil, "create probe: bad wiring"},
		{"create nil", func(s *sdk.Spec) { s.Create = func(sdk.LoadContext) (sdk.Module, error) { return nil, nil } }, nil, "create probe returned no module"},
		{"migration", func(s *sdk.Spec) {
			s.Create = func(sdk.LoadContext) (sdk.Module, error) {
				return &probe{migrations: []sdk.Migration{{Name: "001"}}}, nil
			}
		}, nil, "module 'probe' migration '001' has no function"},
	}
	for _, tt := range tests {
		spec := probeSpec(&probe{})
		if tt.mutate != nil {
			tt.mutate(&spec)
		}
		_, err := TryNewRuntime(t, spec, tt.opts...)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestTestLoggerWritesToTheTestLog(t *testing.T) {
	var logged []string
	rec := &recordingTB{TB: t, logs: &logged}
	logger := TestLogger(rec)
	logger.Info("hello", "k", 1)
	for _, c := range rec.cleanups {
		c()
	}
	logger.Info("after the test")

	if len(logged) != 1 || !strings.Contains(logged[0], "msg=hello k=1") {
		t.Errorf("logged = %q", logged)
	}
}

// recordingTB captures Log and Cleanup of a testing.TB.
type recordingTB struct {
	testing.TB
	logs     *[]string
	cleanups []func()
}

func (r *recordingTB) Log(args ...any) {
	for _, a := range args {
		*r.logs = append(*r.logs, a.(string))
	}
}

func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// TestRuntimeOnChangeGetsTheModuleLifetime: an OnChange callback gets the
// runtime's lifetime context, live while the module runs and cancelled by
// Close, as the host gives it.
func TestRuntimeOnChangeGetsTheModuleLifetime(t *testing.T) {
	var got context.Context
	p := &probe{start: func(ctx context.Context, rt *sdk.Runtime) error {
		rt.GuildSettings.OnChange(func(ctx context.Context, _ uint64) { got = ctx })
		return nil
	}}
	r := NewRuntime(t, probeSpec(p))
	r.Start(context.Background())
	r.GuildSettings.Set(5, map[string]any{"channel": uint64(9)})
	if got == nil || got.Err() != nil {
		t.Fatalf("OnChange ctx = %v, want the live lifetime", got)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got.Err() == nil {
		t.Error("the lifetime ctx was not cancelled by Close")
	}
}

// TestRuntimeWithClock: WithClock is the runtime's Clock, so a module's
// rt.Now moves only with the test's clock, and its components expire on it.
func TestRuntimeWithClock(t *testing.T) {
	clock := NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	r := NewRuntime(t, sdk.Spec{Name: "clocked", Version: "1.0.0", APIVersion: sdk.APIVersion,
		Create: func(sdk.LoadContext) (sdk.Module, error) { return &probe{}, nil }}, WithClock(clock))
	if got := r.RT.Now(); !got.Equal(clock.Now()) {
		t.Fatalf("rt.Now = %v, want the clock's %v", got, clock.Now())
	}
	ctx := context.Background()
	if _, err := r.RT.Interactions.RegisterComponent(sdk.ComponentButton, "vote", func(context.Context, sdk.Interaction) error { return nil },
		sdk.ComponentOptions{ExpiresAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	id, err := r.Interactions.CustomID("vote")
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(36 * time.Hour)
	if got, want := r.RT.Now(), time.Date(2030, 1, 3, 15, 4, 5, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("after Advance rt.Now = %v, want %v", got, want)
	}
	// The button expired on the clock, not on the wall clock.
	in := NewInteraction(InteractionInput{CustomID: id})
	if err := r.Interactions.Press(ctx, sdk.ComponentButton, in); err != nil {
		t.Fatal(err)
	}
	if reply, _ := in.Last(); reply.Content != ReplyControlExpired {
		t.Fatalf("a press 36 h after a 1 h button: %+v, want %q", reply, ReplyControlExpired)
	}
}
