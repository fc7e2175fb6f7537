package sdktest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Runtime is one module wired to a full set of fakes, the way the host
// wires it: preflight (sdk.Spec.Validate and required capabilities),
// settings prepared from the spec's definition, Create with a recording
// load context (sealed afterwards), migrations applied to real SQLite, and
// an *sdk.Runtime whose ports are the fakes below. Start and Close run the
// module's lifecycle; a started module is closed when the test ends.
type Runtime struct {
	Spec   sdk.Spec
	Module sdk.Module
	// RT is the runtime context handed to Module.Start.
	RT       *sdk.Runtime
	Settings sdk.Settings
	Load     *LoadRecorder
	Tools    *RecordingToolRegistry

	Events        *FakeEvents
	Scheduler     *FakeScheduler
	Storage       *Storage
	Health        *FakeHealth
	Discord       *FakeDiscordActions
	Interactions  *FakeInteractions
	HTTP          *FakeHTTP
	Services      *FakeServices
	Trust         *FakeTrust
	GuildSettings *FakeGuildSettings // RT.GuildSettings is nil unless the spec declares a schema
	Proposals     *FakeProposals
	// ScheduledResults always exists for inspection; RT.ScheduledResults is
	// nil unless the spec declares subscriptions and scheduled_results.v1 is
	// advertised, as in the host.
	ScheduledResults *FakeScheduledResults

	// Disabled is the reason the module was soft-disabled ("missing
	// activation capability a, b"), "" when it is active. A disabled module
	// is neither created nor migrated, as in the host: Module, RT, Settings
	// and the port fakes are unset, and Start fails.
	Disabled string

	t       testing.TB
	mu      sync.Mutex
	started bool
	// cancelLifetime ends the lifetime context of a started module (Close).
	cancelLifetime context.CancelFunc
}

// Option configures NewRuntime.
type Option func(*runtimeConfig)

type runtimeConfig struct {
	settings     map[string]string
	capabilities []string
	members      bool
	content      bool
	guildActive  func(uint64) bool
	storage      *Storage
	services     *FakeServices
	trust        *FakeTrust
	guildDocs    map[uint64]map[string]any
	logger       *slog.Logger
	fromEnv      bool // WithEnv: read declared settings from the environment first
	without      []string
	clock        *Clock
}

// WithSettings sets deployment settings by field name. Values are rendered
// as text and prepared through the spec's SettingsDefinition, exactly as
// environment values are, so defaults, minimums and kinds are enforced.
func WithSettings(values map[string]any) Option {
	return func(c *runtimeConfig) {
		for k, v := range values {
			c.settings[k] = settingText(v)
		}
	}
}

// WithEnv reads every declared setting the host would read from the
// environment (hostkit.SettingEnvName, e.g. REFERENCE_KUDOS_DAILY_LIMIT); set
// them with t.Setenv. Later WithSettings options override.
func WithEnv() Option {
	return func(c *runtimeConfig) { c.fromEnv = true }
}

// WithCapabilities advertises capabilities beyond the baseline.
func WithCapabilities(names ...string) Option {
	return func(c *runtimeConfig) { c.capabilities = append(c.capabilities, names...) }
}

// WithoutCapabilities stops advertising capabilities, the baseline ones
// included, so a test can run the module on a host that lacks them: a
// missing RequiresCapabilities entry fails preflight, a missing
// ActivationCapabilities entry soft-disables the module (Runtime.Disabled).
func WithoutCapabilities(names ...string) Option {
	return func(c *runtimeConfig) { c.without = append(c.without, names...) }
}

// WithIntents enables the members and message-content gateway intents.
func WithIntents(members, messageContent bool) Option {
	return func(c *runtimeConfig) { c.members, c.content = members, messageContent }
}

// WithGuildActive sets which guilds the bot is active in (default: all).
func WithGuildActive(active func(guildID uint64) bool) Option {
	return func(c *runtimeConfig) { c.guildActive = active }
}

// WithStorage reuses a Storage, for example to restart a module over the
// same database; applied migrations are not run again.
func WithStorage(s *Storage) Option { return func(c *runtimeConfig) { c.storage = s } }

// WithServices shares a service registry between runtimes, so one module
// can consume what another provides.
func WithServices(s *FakeServices) Option { return func(c *runtimeConfig) { c.services = s } }

// WithTrust sets the trust lookup.
func WithTrust(t *FakeTrust) Option { return func(c *runtimeConfig) { c.trust = t } }

// WithGuildSettings stores a guild's settings document before start.
func WithGuildSettings(guildID uint64, values map[string]any) Option {
	return func(c *runtimeConfig) { c.guildDocs[guildID] = values }
}

// WithClock makes c the runtime's Clock (sdk.Runtime.Now reads it) and
// the time of its components' expiry (ComponentOptions.ExpiresAfter), as
// the host's clock is both: the module's present moves only with c, as the
// time handed to FakeScheduler.RunDue does.
func WithClock(c *Clock) Option { return func(cfg *runtimeConfig) { cfg.clock = c } }

// WithLogger sets the module logger (default: the test log).
func WithLogger(l *slog.Logger) Option { return func(c *runtimeConfig) { c.logger = l } }

// NewRuntime creates module spec with every port faked. Preflight, settings,
// create or migration failures fail the test; TryNewRuntime returns them.
func NewRuntime(t testing.TB, spec sdk.Spec, opts ...Option) *Runtime {
	t.Helper()
	r, err := TryNewRuntime(t, spec, opts...)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	return r
}

// TryNewRuntime is NewRuntime returning the preflight, settings, create or
// migration error instead of failing the test, so a module's refusals can
// be tested (errors.As reaches the *sdk.ModuleContractError of preflight).
// A soft-disabled module is not an error: see Runtime.Disabled.
func TryNewRuntime(t testing.TB, spec sdk.Spec, opts ...Option) (*Runtime, error) {
	cfg := runtimeConfig{settings: map[string]string{}, guildDocs: map[uint64]map[string]any{}}
	for _, opt := range opts {
		opt(&cfg)
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	advertised := slices.DeleteFunc(append(hostkit.BaselineCapabilities(), cfg.capabilities...),
		func(c string) bool { return slices.Contains(cfg.without, c) })
	caps := sdk.NewCapabilities(advertised, cfg.members, cfg.content)
	if err := hostkit.CheckCapabilities(spec, caps); err != nil {
		return nil, err
	}
	if missing := hostkit.MissingActivationCapabilities(spec, caps); len(missing) > 0 {
		return &Runtime{Spec: spec, Disabled: hostkit.ActivationDisabledReason(missing), t: t}, nil
	}
	settings, err := prepareSettings(spec, cfg.settings, cfg.fromEnv)
	if err != nil {
		return nil, err
	}
	logger := cfg.logger
	if logger == nil {
		logger = TestLogger(t).With("module", spec.Name)
	}
	registry := NewRecordingToolRegistry()
	registry.Declare(spec.Name, spec.Tools)
	lc, rec := NewLoadContext(spec.Name, LoadOptions{Capabilities: &caps, Settings: settings, Registry: registry, Logger: logger})
	module, err := spec.Create(lc)
	registry.Seal()
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", spec.Name, err)
	}
	if module == nil {
		return nil, fmt.Errorf("create %s returned no module", spec.Name)
	}
	hostRules, err := hostkit.ResolveHostRules(spec.Name, spec.Permissions.HTTPHosts, settings)
	if err != nil {
		return nil, err
	}
	storage := cfg.storage
	if storage == nil {
		storage = OpenStorage(t, spec.Name)
	}
	if err := storage.Migrate(context.Background(), module.Migrations()); err != nil {
		return nil, err
	}
	r := &Runtime{
		Spec: spec, Module: module, Settings: settings, Load: rec, Tools: registry, t: t,
		Events:       NewFakeEvents(spec.Name, spec.Permissions),
		Scheduler:    NewFakeScheduler(spec.Name),
		Storage:      storage,
		Health:       NewFakeHealth(),
		Discord:      NewFakeDiscordActions(spec.Name, spec.Permissions.DiscordActions),
		Interactions: NewFakeInteractions(spec.Name),
		HTTP:         NewFakeHTTP(),
		Services:     cfg.services,
		Trust:        cfg.trust,
		Proposals:    NewFakeProposals(spec.Name),
	}
	r.HTTP.Restrict(spec.Name, hostRules)
	r.Interactions.DeclareCommands(spec.Commands)
	if spec.Permissions.DiscordActions == nil { // declared none, not all
		r.Discord.SetDeclared()
	}
	if r.Services == nil {
		r.Services = NewFakeServices()
	}
	if r.Trust == nil {
		r.Trust = NewFakeTrust()
	}
	coreActive := cfg.guildActive
	if coreActive == nil {
		coreActive = func(uint64) bool { return true }
	}
	r.GuildSettings = NewFakeGuildSettings(spec.GuildSettings)
	r.GuildSettings.SetActive(coreActive)
	for g, doc := range cfg.guildDocs {
		r.GuildSettings.Set(g, doc)
	}
	// The module predicate: core-active, and valid settings when the module
	// has a schema (the host's is_guild_active).
	moduleActive := func(g uint64) bool {
		if !coreActive(g) {
			return false
		}
		if spec.GuildSettings == nil {
			return true
		}
		snap, _ := r.GuildSettings.Get(context.Background(), g)
		return snap.Valid
	}
	r.ScheduledResults = NewFakeScheduledResults(spec.Permissions.ScheduledResults, moduleActive)
	r.RT = &sdk.Runtime{
		ModuleName:    spec.Name,
		IsGuildActive: moduleActive,
		Capabilities:  caps,
		Logger:        logger,
		Events:        r.Events,
		Scheduler:     r.Scheduler,
		Storage:       r.Storage,
		Health:        r.Health,
		Discord:       r.Discord,
		Interactions:  r.Interactions,
		HTTP:          r.HTTP,
		Services:      r.Services.For(spec.Name, spec.Provides, spec.Consumes),
		Trust:         r.Trust,
		Proposals:     r.Proposals,
	}
	if cfg.clock != nil {
		r.RT.Clock = cfg.clock.Now
		r.Interactions.SetClock(cfg.clock.Now)
	}
	r.Interactions.SetGate(&Gate{Trust: r.Trust, Active: moduleActive})
	r.Events.SetGuildFilter(moduleActive)
	if spec.GuildSettings != nil {
		r.RT.GuildSettings = r.GuildSettings
	}
	if len(spec.Permissions.ScheduledResults) > 0 && caps.Has(sdk.CapScheduledResults) {
		r.RT.ScheduledResults = r.ScheduledResults
	}
	if spec.Permissions.RawStorage {
		r.RT.RawStorage = storage.Writer()
	}
	return r, nil
}

// prepareSettings builds the module's settings from text values (and the
// environment when WithEnv was given) through the spec's definition.
func prepareSettings(spec sdk.Spec, raw map[string]string, fromEnv bool) (sdk.Settings, error) {
	if spec.Settings == nil {
		if len(raw) > 0 {
			return sdk.Settings{}, fmt.Errorf("module %s declares no settings", hostkit.Repr(spec.Name))
		}
		return sdk.NewSettings(nil), nil
	}
	merged := map[string]string{}
	if fromEnv {
		for _, f := range spec.Settings.Fields {
			if v, ok := os.LookupEnv(hostkit.SettingEnvName(spec.Name, f.Name)); ok {
				merged[f.Name] = v
			}
		}
	}
	for k, v := range raw {
		merged[k] = v
	}
	return spec.Settings.Prepare(spec.Name, merged)
}

func settingText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(t), 'g', -1, 32)
	}
	return fmt.Sprint(v)
}

// Start starts the module (Module.Start with RT) and arranges Close at the
// end of the test; a start error fails the test.
func (r *Runtime) Start(ctx context.Context) {
	r.t.Helper()
	if err := r.StartErr(ctx); err != nil {
		r.t.Fatalf("sdktest: start %s: %v", r.Spec.Name, err)
	}
}

// StartErr starts the module and returns its error, for testing start
// failures. A failed start is closed at once, as the host does.
func (r *Runtime) StartErr(ctx context.Context) error {
	if r.Disabled != "" {
		return fmt.Errorf("sdktest: %s is disabled (%s)", r.Spec.Name, r.Disabled)
	}
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return fmt.Errorf("sdktest: %s already started", r.Spec.Name)
	}
	r.started = true
	// The module's lifetime, as the host gives it: OnChange callbacks get
	// it, and Close cancels it.
	lifetime, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancelLifetime = cancel
	r.mu.Unlock()
	if r.GuildSettings != nil {
		r.GuildSettings.SetContext(lifetime)
	}
	r.Health.Report(sdk.HealthStarting, "", nil)
	if err := r.Module.Start(ctx, r.RT); err != nil {
		r.Health.Report(sdk.HealthFailed, truncateRunes(err.Error(), 200), nil)
		_ = r.Close(ctx)
		return err
	}
	// The host marks a cleanly started module healthy unless it reported
	// something itself, and degraded while a declared service is missing.
	if cur, ok := r.Health.Current(); ok && cur.State == sdk.HealthStarting {
		r.Health.Report(sdk.HealthHealthy, "", nil)
	}
	provided := r.Services.ProvidedBy(r.Spec.Name)
	var missing []string
	for _, d := range r.Spec.Provides {
		if !slices.Contains(provided, ServiceKey{d.Name, d.Version}) {
			missing = append(missing, fmt.Sprintf("%s@%d", d.Name, d.Version))
		}
	}
	if len(missing) > 0 {
		r.Health.Constrain("services", sdk.HealthDegraded, "declared but did not provide "+strings.Join(missing, ", "))
	}
	r.t.Cleanup(func() { _ = r.Close(context.Background()) })
	return nil
}

// Close closes a started module (once); it returns Module.Close's error.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.started {
		r.mu.Unlock()
		return nil
	}
	r.started = false
	cancel := r.cancelLifetime
	r.mu.Unlock()
	if cancel != nil {
		defer cancel()
	}
	return r.Module.Close(ctx)
}

// CallTool runs a tool the module registered at create, with args
// marshalled to JSON, as the caller tc. It calls the handler directly, like
// the reference kit: the host's visibility rules (guild-only, min tier)
// are the host's. A *FakeToolFiles in tc.Files expires when the handler
// returns, as the host's port does.
func (r *Runtime) CallTool(ctx context.Context, name string, args any, tc sdk.ToolContext) (string, error) {
	if files, ok := tc.Files.(*FakeToolFiles); ok {
		defer files.Expire()
	}
	return r.Tools.Call(ctx, name, args, tc)
}

// TestLogger returns a logger that writes to t.Log until the test ends.
func TestLogger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
}
