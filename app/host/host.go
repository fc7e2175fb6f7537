// Package host runs the compiled-in modules (reference/kimi-agent-host.md
// §1.3–§1.9): it reads the selection (the kimi_modules table, or
// KIMI_MODULES), preflights it before any module code runs, prepares each
// module's settings, creates every module, runs all migrations, starts them
// in dependency order and closes them newest-first — containing every
// callback it makes into a module, so one failing module never takes the
// appliance down. It also owns the ports that are not subsystems of their
// own: services, health, trust, guild settings, tools, interactions, a
// the HTTP port (on app/egress), the durable scheduler's module bindings (on
// app/scheduler), the scheduled results' bindings (on app/results), and the
// "Discord is not connected" actions.
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kimiapp/kimi/app/egress"
	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/internal/signal"
	"github.com/kimiapp/kimi/app/modstore"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Lifecycle bounds (reference §1.4, §11).
const (
	DefaultStartTimeout    = 60 * time.Second
	DefaultCloseTimeout    = 15 * time.Second
	DefaultCancelGrace     = 5 * time.Second
	DefaultCallbackTimeout = 30 * time.Second
)

// GuildConfig is what the host needs of the guild configuration;
// *guildcfg.Service implements it.
type GuildConfig interface {
	Active(guildID uint64) bool
	ModuleSettings(guildID uint64, module string) (sdk.GuildSettingsSnapshot, bool)
	ModuleEnabled(guildID uint64, module string) bool
	GuildIDs() []uint64
	Resolve(guildID, userID uint64, roles []uint64) sdk.TrustTier
	IsOwner(userID uint64) bool
	Subscribe(fn func(guildcfg.Change)) (cancel func())
	List(ctx context.Context) ([]guildcfg.GuildSummary, error)
}

var _ GuildConfig = (*guildcfg.Service)(nil)

// Options configures New.
type Options struct {
	// Specs are the compiled-in modules (modules/all for the stock build).
	Specs []sdk.Spec
	// Store holds the selection, saved settings and the audit log.
	Store *store.Store
	// Guilds is the guild configuration (activation, settings, trust).
	Guilds GuildConfig
	// Logger is the root logger: the host logs with component=host, each
	// module with module=<name>.
	Logger *slog.Logger
	// Getenv reads module settings from the environment (nil: none).
	Getenv func(string) string
	// Selection, when SelectionSet, overrides the stored selection
	// (KIMI_MODULES).
	Selection    []string
	SelectionSet bool
	// HasFileReader says the host can read tool files (tools.files.v1).
	HasFileReader bool
	// Bounds; zero values take the Default* constants.
	StartTimeout, CloseTimeout, CancelGrace, CallbackTimeout time.Duration
	// MigrateTimeout bounds one module's pending migrations together
	// (zero: StartTimeout, so 60 s by default): on expiry the running step
	// is rolled back, the writer released, and the module fails.
	MigrateTimeout time.Duration
	// HistorySize bounds each module's health history (0: DefaultHistorySize).
	HistorySize int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Scheduler is the durable job scheduler (nil: the host makes one on
	// Store, starts it and closes it in Close).
	Scheduler JobScheduler
	// SchedulerLease is the lease of the scheduler the host makes (0: 60 s).
	SchedulerLease time.Duration
	// Discord is the Discord connection (nil: not connected; every
	// declared Discord action fails with ErrDiscordNotConnected).
	Discord Discord
	// Capabilities, when set, replaces Advertised(): the capabilities the
	// wiring honours (with a Discord connection, e.g.
	// discord.guild_commands.v1).
	Capabilities *sdk.Capabilities
	// Proposals is the configuration proposals service (nil: none, and
	// Runtime.Proposals stays nil); each module gets its own bound port.
	Proposals Proposals
	// Results is the scheduled-results outbox (nil: none, and
	// Runtime.ScheduledResults stays nil). A module that declares
	// Permissions.ScheduledResults gets its own binding while the host
	// advertises scheduled_results.v1; the binding closes with the module.
	Results Results

	// storage and events replace the real subsystems in tests.
	storage storageFactory
	events  eventsFactory
	caps    *sdk.Capabilities
}

// Proposals gives each module its bound proposals port;
// *proposals.Service implements it.
type Proposals interface {
	Port(module string) sdk.Proposals
}

// JobScheduler binds each module instance to the durable scheduler;
// *scheduler.Scheduler implements it.
type JobScheduler interface {
	Bind(module string, hooks scheduler.Hooks) *scheduler.Binding
	Jobs(ctx context.Context, module string) ([]scheduler.Job, error)
}

var _ JobScheduler = (*scheduler.Scheduler)(nil)

// State is a module's lifecycle state.
type State string

// Module states.
const (
	StateNotSelected State = "not selected"
	StateDisabled    State = "disabled"
	StateFailed      State = "failed"
	StateRunning     State = "running"
	StateStopped     State = "stopped"
)

// ErrUnknownModule is returned for a module name that is not compiled in.
var ErrUnknownModule = errors.New("host: unknown module")

// ErrClosed is returned by Restart and SetEnabled after Close: a closed
// host starts nothing again.
var ErrClosed = errors.New("host: closed")

// isClosed reports whether Close has begun.
func (h *Host) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// Advertised is the capability set a bare host honours: none of the
// Discord capabilities (they come from the Discord connection's intents),
// no proposals (proposals.v2) and no scheduled results
// (scheduled_results.v1) — a host honours those only with Options.Proposals
// and Options.Results wired, so the wiring that has the services adds them
// (app: withServices) — and no tool files.
func Advertised() sdk.Capabilities { return sdk.NewCapabilities(nil, false, false) }

// Host runs the modules. Create it with New, then Start; Close it before
// the store closes.
type Host struct {
	opts    Options
	log     *slog.Logger
	root    *slog.Logger
	store   *store.Store
	guilds  GuildConfig
	specs   map[string]sdk.Spec
	ordered []string // spec names in the order given
	caps    sdk.Capabilities
	getenv  func(string) string
	now     func() time.Time

	storage storageFactory
	events  eventsFactory
	bus     *events.Bus
	mstore  *modstore.Manager

	health   *healthBook
	services *serviceBook
	tools    *toolBook
	router   *router
	sched    JobScheduler
	ownSched *scheduler.Scheduler // made by New, closed by Close
	discord  Discord              // nil when not connected

	unsubscribe func()
	watch       signal.Watchers // Watch's subscribers

	op sync.Mutex // serializes boot, restart, set-enabled and close

	mu        sync.Mutex
	entries   map[string]*entry
	started   []*instance // start order
	selection []string
	problems  []string
	closed    bool
}

// entry is a compiled-in module's standing.
type entry struct {
	spec        sdk.Spec
	selected    bool
	state       State
	reason      string
	fieldErrors []FieldError
	inst        *instance
	origins     map[string]string
}

// New builds the host; no module code runs until Start. Invalid or
// duplicate compiled-in specs are not an error here: preflight refuses
// them by name.
func New(ctx context.Context, opts Options) (*Host, error) {
	h := &Host{
		opts: opts, store: opts.Store, guilds: opts.Guilds, specs: map[string]sdk.Spec{},
		getenv: opts.Getenv, now: opts.Now, entries: map[string]*entry{}, discord: opts.Discord,
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h.root = opts.Logger
	h.log = opts.Logger.With("component", "host")
	if h.getenv == nil {
		h.getenv = func(string) string { return "" }
	}
	if h.now == nil {
		h.now = time.Now
	}
	for _, d := range []*time.Duration{&h.opts.StartTimeout, &h.opts.CloseTimeout, &h.opts.CancelGrace, &h.opts.CallbackTimeout, &h.opts.MigrateTimeout} {
		if *d < 0 {
			return nil, fmt.Errorf("host: negative timeout %s", *d)
		}
	}
	if h.opts.StartTimeout == 0 {
		h.opts.StartTimeout = DefaultStartTimeout
	}
	if h.opts.CloseTimeout == 0 {
		h.opts.CloseTimeout = DefaultCloseTimeout
	}
	if h.opts.CancelGrace == 0 {
		h.opts.CancelGrace = DefaultCancelGrace
	}
	if h.opts.CallbackTimeout == 0 {
		h.opts.CallbackTimeout = DefaultCallbackTimeout
	}
	if h.opts.MigrateTimeout == 0 {
		h.opts.MigrateTimeout = h.opts.StartTimeout
	}
	h.caps = Advertised()
	if opts.Capabilities != nil {
		h.caps = *opts.Capabilities
	}
	if opts.caps != nil {
		h.caps = *opts.caps
	}
	for _, s := range opts.Specs {
		if _, dup := h.specs[s.Name]; dup {
			h.problems = append(h.problems, "Duplicate installed Kimi module entry point "+hostkit.Repr(s.Name))
			continue
		}
		c := egress.WithAllowanceSetting(s.Clone()) // allow_private_network for private rules
		h.specs[s.Name] = c
		h.ordered = append(h.ordered, s.Name)
		h.entries[s.Name] = &entry{spec: c, state: StateNotSelected}
	}
	h.health = newHealthBook(h.now, opts.HistorySize, h.moduleLogger)
	h.health.changed = h.watch.Notify
	h.services = newServiceBook()
	h.tools = newToolBook()
	h.router = newRouter()
	h.sched = opts.Scheduler
	if h.sched == nil {
		if opts.Store == nil {
			return nil, errors.New("host: a store is required")
		}
		s, err := scheduler.New(scheduler.Options{Store: opts.Store, Logger: opts.Logger.With("component", "scheduler"), Now: opts.Now,
			Lease: opts.SchedulerLease, CancelGrace: h.opts.CancelGrace})
		if err != nil {
			return nil, fmt.Errorf("host: scheduler: %w", err)
		}
		s.Start()
		h.sched, h.ownSched = s, s
	}

	h.storage, h.events = opts.storage, opts.events
	if h.storage == nil {
		if opts.Store == nil {
			return nil, errors.New("host: a store is required")
		}
		m, err := modstore.New(opts.Store, modstore.Options{Logger: opts.Logger.With("component", "modstore"), MaxMigrateStep: h.opts.MigrateTimeout})
		if err != nil {
			return nil, fmt.Errorf("host: module storage: %w", err)
		}
		h.mstore, h.storage = m, modstoreFactory{m}
	}
	if h.events == nil {
		h.bus = events.New(events.Options{Logger: opts.Logger.With("component", "events"), OnHandlerFailure: h.onHandlerFailure})
		h.events = busFactory{h.bus}
	}
	if h.guilds != nil {
		h.unsubscribe = h.guilds.Subscribe(h.onGuildChange)
	}
	return h, nil
}

func (h *Host) moduleLogger(name string) *slog.Logger { return h.root.With("module", name) }

// Start reads the selection and starts the selected modules. Only a
// failure to read the selection is an error: modules that fail are marked
// failed with their reason and the rest start.
func (h *Host) Start(ctx context.Context) error {
	h.op.Lock()
	defer h.op.Unlock()
	if h.isClosed() {
		return fmt.Errorf("host: start: %w", ErrClosed)
	}
	return h.boot(ctx)
}

func (h *Host) selectionNow(ctx context.Context) ([]string, error) {
	if h.opts.SelectionSet {
		return slices.Clone(h.opts.Selection), nil
	}
	return h.storedSelection(ctx)
}

// boot plans the whole selection and launches every module in it; op held,
// nothing running.
func (h *Host) boot(ctx context.Context) error {
	sel, err := h.selectionNow(ctx)
	if err != nil {
		return err
	}
	p := preflight(h.specs, sel, h.caps, h.opts.HasFileReader)
	h.mu.Lock()
	h.selection = sel
	h.problems = slices.DeleteFunc(h.problems, func(s string) bool { return !isBuildProblem(s) })
	h.problems = append(h.problems, p.problems...)
	for _, e := range h.entries {
		e.selected = slices.Contains(sel, e.spec.Name)
		e.state, e.reason, e.fieldErrors = StateNotSelected, "", nil
		if e.selected {
			e.state = StateStopped
		}
	}
	h.mu.Unlock()
	h.watch.Notify()
	for _, prob := range p.problems {
		h.log.Error("module selection refused", "problem", prob)
	}
	if h.opts.SelectionSet {
		h.log.Info("module selection from KIMI_MODULES", "modules", sel)
	}
	for _, n := range p.order {
		if r, ok := p.failed[n]; ok {
			h.mark(n, StateFailed, r)
		} else if r, ok := p.disabled[n]; ok {
			h.mark(n, StateDisabled, r)
		}
	}
	h.launch(ctx, p.order)
	return nil
}

func isBuildProblem(s string) bool {
	return len(s) > 10 && s[:10] == "Duplicate "
}

// mark sets a module's state and reason, logging refusals.
func (h *Host) mark(name string, state State, reason string) {
	h.mu.Lock()
	e := h.entries[name]
	e.state, e.reason = state, reason
	version := e.spec.Version
	h.mu.Unlock()
	h.watch.Notify()
	switch state {
	case StateDisabled:
		h.moduleLogger(name).Warn(fmt.Sprintf("Kimi module disabled: %s %s (%s)", name, version, reason))
	case StateFailed:
		h.moduleLogger(name).Error(fmt.Sprintf("Kimi module failed: %s %s (%s)", name, version, reason))
	}
}

func (h *Host) stateOf(name string) (State, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[name]
	if e == nil {
		return StateNotSelected, ""
	}
	return e.state, e.reason
}

// blockedBy returns the reason a module cannot go on because of a
// dependency ("" when every dependency is running or about to).
func (h *Host) blockedBy(name string, pending map[string]bool) string {
	for _, d := range h.specs[name].Dependencies {
		if pending[d] {
			continue
		}
		switch st, _ := h.stateOf(d); st {
		case StateRunning:
		case StateDisabled:
			return "dependency disabled: " + d
		default:
			return "dependency failed: " + d
		}
	}
	return ""
}

// launch runs settings → create → migrate all → start for the modules of
// order that are not refused (order is dependency order).
func (h *Host) launch(ctx context.Context, order []string) {
	pending := map[string]bool{}
	for _, n := range order {
		if st, _ := h.stateOf(n); st == StateStopped {
			pending[n] = true
		}
	}
	drop := func(inst *instance, state State, reason string) {
		delete(pending, inst.name)
		h.tools.remove(inst)
		h.mark(inst.name, state, reason)
	}
	var created []*instance
	for _, n := range order {
		if !pending[n] {
			continue
		}
		if r := h.blockedBy(n, pending); r != "" {
			delete(pending, n)
			h.mark(n, StateDisabled, r)
			continue
		}
		inst, err := h.create(ctx, n)
		if err != nil {
			delete(pending, n)
			var se *SettingsError
			if errors.As(err, &se) {
				h.mu.Lock()
				h.entries[n].fieldErrors = se.Fields
				h.mu.Unlock()
			}
			h.mark(n, StateFailed, err.Error())
			continue
		}
		created = append(created, inst)
	}
	var migrated []*instance
	for _, inst := range created {
		if r := h.blockedBy(inst.name, pending); r != "" {
			drop(inst, StateDisabled, r)
			continue
		}
		if err := h.migrate(ctx, inst); err != nil {
			drop(inst, StateFailed, err.Error())
			continue
		}
		migrated = append(migrated, inst)
	}
	for _, inst := range migrated {
		if r := h.blockedBy(inst.name, pending); r != "" {
			drop(inst, StateDisabled, r)
			continue
		}
		delete(pending, inst.name)
		if err := h.start(ctx, inst); err != nil {
			h.mark(inst.name, StateFailed, err.Error())
			continue
		}
		h.mark(inst.name, StateRunning, "")
	}
}

// create prepares settings and calls the spec's Create, contained and
// bounded; tools registered by a failed create are removed.
func (h *Host) create(ctx context.Context, name string) (*instance, error) {
	spec := h.specs[name]
	raw, origins, err := h.rawSettings(ctx, spec)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.entries[name].origins = origins
	h.mu.Unlock()
	settings, err := prepareSettings(spec, raw)
	if err != nil {
		return nil, err
	}
	inst := h.newInstance(spec, settings)
	h.tools.removeModule(name) // a previous incarnation's tools
	reg := &loadRegistry{book: h.tools, inst: inst}
	lc := &loadContext{inst: inst, reg: reg, h: h}
	var mod sdk.Module
	err, how := runBounded(ctx, h.opts.StartTimeout, h.opts.CancelGrace, func(context.Context) error {
		m, err := spec.Create(lc)
		mod = m
		return err
	})
	reg.seal()
	if err == nil && how == finished && mod == nil {
		err = fmt.Errorf("create() returned no module")
	}
	if err != nil || how != finished {
		h.tools.remove(inst)
		inst.cancel()
		detail := lifecycleDetail("create", h.opts.StartTimeout, err, how)
		h.logFailure(inst, "create", err)
		return nil, errors.New("create() failed: " + detail)
	}
	inst.mod = mod
	inst.log.Info(fmt.Sprintf("Kimi module composed: %s %s", name, spec.Version))
	return inst, nil
}

func (h *Host) logFailure(inst *instance, what string, err error) {
	var pe *PanicError
	if errors.As(err, &pe) {
		inst.log.Error(what+" panicked", "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		return
	}
	if err != nil {
		inst.log.Error(what+" failed", "err", err)
	}
}

// migrate runs the module's migrations (module code: contained).
func (h *Host) migrate(ctx context.Context, inst *instance) error {
	var migs []sdk.Migration
	if err := call(ctx, func(context.Context) error { migs = inst.mod.Migrations(); return nil }); err != nil {
		h.logFailure(inst, "migrations", err)
		return fmt.Errorf("migrate failed: %w", err)
	}
	if err := hostkit.ValidateMigrations(inst.name, migs); err != nil {
		return fmt.Errorf("migrate failed: %w", err)
	}
	// Bounded like start(): the storage rolls the running step back and
	// releases the writer when the ctx ends, so Migrate returns promptly.
	var applied []string
	err, how := runBounded(ctx, h.opts.MigrateTimeout, h.opts.CancelGrace, func(ctx context.Context) error {
		var err error
		applied, err = h.storage.Migrate(ctx, inst.name, inst.spec.Permissions, migs)
		return err
	})
	if how != finished {
		detail := lifecycleDetail("migrate", h.opts.MigrateTimeout, err, how)
		inst.log.Error("migrate stopped; the running step was rolled back", "detail", detail, "err", err)
		return fmt.Errorf("migrate failed: %s", detail)
	}
	if err != nil {
		h.logFailure(inst, "migrate", err)
		return fmt.Errorf("migrate failed: %w", err)
	}
	if len(applied) > 0 {
		inst.log.Info("module migrations applied", "applied", applied)
	}
	return nil
}

// start builds the runtime and calls Start, bounded (60 s, then
// cancellation and a grace period). A failed start is closed and revoked.
func (h *Host) start(ctx context.Context, inst *instance) error {
	spec := inst.spec
	httpPort, err := h.newHTTPPort(inst)
	if err != nil {
		inst.cancel()
		return fmt.Errorf("cannot start: %w", err)
	}
	inst.http = httpPort
	port, err := h.storage.Open(ctx, inst.name, spec.Permissions)
	if err != nil {
		inst.cancel()
		return fmt.Errorf("cannot start: storage: %w", err)
	}
	inst.storage = port
	inst.jobs = h.sched.Bind(inst.name, scheduler.Hooks{
		Invoke: func(ctx context.Context, key string, fn func(context.Context) error) error {
			err := h.callback(ctx, inst, "job", key, fn)
			if err != nil && !inst.running() {
				// the module is closing: the run was cut short, not failed
				return fmt.Errorf("%w: %w", scheduler.ErrInterrupted, err)
			}
			return err
		},
		Health: func(source string, state sdk.HealthState, detail string) {
			h.health.constrain(inst.name, source, state, detail)
		},
		Live: func() error {
			if inst.revoked() {
				return inst.revokedErr("scheduler")
			}
			return nil
		},
	})
	inst.events = h.events.Module(inst.ctx, inst.name, spec.Permissions, inst.guildActive)
	rt := &sdk.Runtime{
		ModuleName:    inst.name,
		IsGuildActive: inst.guildActive,
		Capabilities:  h.caps,
		Logger:        inst.log,
		Events:        &revocableEvents{inst: inst, p: inst.events},
		Scheduler:     inst.jobs,
		Storage:       &revocableStorage{inst: inst, p: port},
		Health:        &reporter{inst: inst, book: h.health},
		Discord:       &discordActions{inst: inst, d: h.discord},
		Interactions:  &interactions{inst: inst, r: h.router},
		HTTP:          httpPort,
		Services:      &services{inst: inst, book: h.services},
	}
	if h.guilds != nil {
		rt.Trust = &trust{inst: inst, g: h.guilds, d: h.discord}
		if spec.GuildSettings != nil {
			rt.GuildSettings = &guildSettings{inst: inst, g: h.guilds}
		}
	}
	if h.opts.Proposals != nil {
		rt.Proposals = &revocableProposals{inst: inst, p: h.opts.Proposals.Port(inst.name)}
	}
	if spec.Permissions.RawStorage {
		rt.RawStorage = port.Raw()
	}
	if rp := h.bindResults(inst, h.caps); rp != nil {
		inst.results = rp
		rt.ScheduledResults = rp
	}
	if missing := rt.MissingPorts(); len(missing) > 0 {
		h.revoke(inst)
		return fmt.Errorf("Kimi module %s cannot start: core provided no %s port", hostkit.Repr(inst.name), joinComma(missing))
	}
	h.health.report(inst.name, sdk.HealthStarting, "", nil)
	inst.starting.Store(true)
	err, how := runBounded(inst.ctx, h.opts.StartTimeout, h.opts.CancelGrace, func(ctx context.Context) error { return inst.mod.Start(ctx, rt) })
	if err == nil && how == finished {
		inst.runningFlag.Store(true) // before starting ends: resultsOpen never sees a gap
	}
	inst.starting.Store(false)
	if err != nil || how != finished {
		detail := lifecycleDetail("start", h.opts.StartTimeout, err, how)
		h.logFailure(inst, "start", err)
		h.health.report(inst.name, sdk.HealthFailed, detail, nil)
		h.closeModule(inst)
		return errors.New(detail)
	}
	inst.runningFlag.Store(true)
	inst.jobs.Activate() // handlers are registered: the module's jobs may run
	h.mu.Lock()
	h.started = append(h.started, inst)
	h.entries[inst.name].inst = inst
	h.mu.Unlock()
	h.health.settleStarted(inst.name)
	if missing := h.services.missing(inst.name, spec.Provides); len(missing) > 0 {
		h.health.constrain(inst.name, "services", sdk.HealthDegraded, joinServices(missing))
	}
	h.checkGuildSettings(ctx, inst)
	inst.log.Info(fmt.Sprintf("Kimi module started: %s %s", inst.name, spec.Version))
	return nil
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// closeModule closes one module: its lifetime ctx is cancelled, Close runs
// bounded (15 s, then a grace period), and every port view is revoked.
func (h *Host) closeModule(inst *instance) {
	inst.runningFlag.Store(false)
	inst.cancel()
	err, how := runBounded(context.Background(), h.opts.CloseTimeout, h.opts.CancelGrace, inst.mod.Close)
	switch how {
	case timedOut, abandoned:
		msg := fmt.Sprintf("Kimi module %s close() exceeded %s", inst.name, seconds(h.opts.CloseTimeout))
		if how == abandoned {
			msg += " and ignored cancellation"
		}
		inst.log.Error(msg + "; continuing shutdown")
	default:
		h.logFailure(inst, "close", err)
	}
	h.revoke(inst)
}

// revoke ends every port view of inst.
func (h *Host) revoke(inst *instance) {
	inst.closedFlag.Store(true)
	inst.runningFlag.Store(false)
	inst.cancel()
	h.router.dropModule(inst)
	h.commandsChanged() // its commands leave Discord at the next (debounced) sync
	if inst.events != nil {
		inst.events.Close(h.opts.CancelGrace)
	}
	if inst.jobs != nil {
		inst.jobs.Close()
	}
	if inst.results != nil {
		inst.results.close() // its handlers are unregistered; its rows stay
	}
	h.services.retireModule(inst.name)
	if inst.storage != nil {
		if err := inst.storage.Close(); err != nil {
			inst.log.Warn("closing the storage port failed", "err", err)
		}
	}
	if inst.http != nil {
		inst.http.close()
	}
	h.health.forget(inst.name)
	h.mu.Lock()
	h.started = slices.DeleteFunc(h.started, func(i *instance) bool { return i == inst })
	if e := h.entries[inst.name]; e != nil && e.inst == inst {
		e.inst = nil
	}
	h.mu.Unlock()
}

// closeAll closes every started module newest-first; op held.
func (h *Host) closeAll() {
	h.mu.Lock()
	started := slices.Clone(h.started)
	h.mu.Unlock()
	for _, inst := range slices.Backward(started) {
		h.closeModule(inst)
		h.mark(inst.name, StateStopped, "")
	}
}

// Close closes every module newest-first, then the event bus and module
// storage. Call it before the store closes.
func (h *Host) Close(ctx context.Context) error {
	h.op.Lock()
	defer h.op.Unlock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	if h.unsubscribe != nil {
		h.unsubscribe()
	}
	// Running jobs are cancelled (with the grace period) and their leases
	// released before the modules close; the jobs stay.
	if h.ownSched != nil {
		if err := h.ownSched.Close(ctx); err != nil {
			h.log.Warn("closing the scheduler failed", "err", err)
		}
	}
	h.closeAll()
	if h.bus != nil {
		h.bus.Close(h.opts.CancelGrace)
	}
	if h.mstore != nil {
		if err := h.mstore.Close(); err != nil {
			return fmt.Errorf("host: close module storage: %w", err)
		}
	}
	return nil
}

// Restart closes and starts again one module and the modules that depend
// on it (name ""; every module, re-reading the selection), in-process,
// with an audit row.
func (h *Host) Restart(ctx context.Context, name, actor string) error {
	if name != "" {
		if _, ok := h.specs[name]; !ok {
			return fmt.Errorf("host: restart: %w: %s", ErrUnknownModule, name)
		}
	}
	h.op.Lock()
	defer h.op.Unlock()
	if h.isClosed() {
		return fmt.Errorf("host: restart: %w", ErrClosed)
	}
	if h.store != nil {
		target := name
		if target == "" {
			target = "all"
		}
		if err := h.store.Audit(ctx, store.AuditEntry{Actor: actor, Action: ActionModuleRestart, Target: target}); err != nil {
			return fmt.Errorf("host: restart: %w", err)
		}
	}
	if name == "" {
		h.closeAll()
		return h.boot(ctx)
	}
	set := h.dependents(name)
	h.closeSet(set)
	sel, err := h.selectionNow(ctx)
	if err != nil {
		return err
	}
	h.relaunch(ctx, set, preflight(h.specs, sel, h.caps, h.opts.HasFileReader))
	return nil
}

// closeSet closes the running modules in set, newest first.
func (h *Host) closeSet(set map[string]bool) {
	h.mu.Lock()
	var closing []*instance
	for _, inst := range h.started {
		if set[inst.name] {
			closing = append(closing, inst)
		}
	}
	h.mu.Unlock()
	for _, inst := range slices.Backward(closing) {
		h.closeModule(inst)
	}
}

// relaunch marks the modules of set as plan p judges them (failed,
// disabled, or stopped and ready) and launches them in p's order. Their
// modules must be closed already (closeSet).
func (h *Host) relaunch(ctx context.Context, set map[string]bool, p *plan) {
	var order []string
	for _, n := range p.order {
		if !set[n] {
			continue
		}
		order = append(order, n)
		h.mu.Lock()
		h.entries[n].fieldErrors = nil
		h.mu.Unlock()
		switch {
		case p.failed[n] != "":
			h.mark(n, StateFailed, p.failed[n])
		case p.disabled[n] != "":
			h.mark(n, StateDisabled, p.disabled[n])
		default:
			h.mark(n, StateStopped, "")
		}
	}
	h.launch(ctx, order)
}

// dependents returns name and every module that depends on it, directly or not.
func (h *Host) dependents(name string) map[string]bool {
	set := map[string]bool{name: true}
	for changed := true; changed; {
		changed = false
		for n, s := range h.specs {
			if set[n] {
				continue
			}
			for _, d := range s.Dependencies {
				if set[d] {
					set[n], changed = true, true
					break
				}
			}
		}
	}
	return set
}

// SetEnabled stores a module's place in the selection with an audit row.
// Unless KIMI_MODULES overrides the selection, the modules are then
// restarted on the new selection; with the override the change waits
// until KIMI_MODULES is removed.
func (h *Host) SetEnabled(ctx context.Context, name string, enabled bool, actor string) error {
	if _, ok := h.specs[name]; !ok {
		return fmt.Errorf("host: set enabled: %w: %s", ErrUnknownModule, name)
	}
	h.op.Lock()
	defer h.op.Unlock()
	if h.isClosed() {
		return fmt.Errorf("host: set enabled: %w", ErrClosed)
	}
	if err := h.writeSelection(ctx, name, enabled, actor); err != nil {
		return err
	}
	if h.opts.SelectionSet {
		return nil
	}
	h.closeAll()
	return h.boot(ctx)
}

// onHandlerFailure is the event bus's report of a failed handler: logged
// with the module's logger and reflected in its health.
func (h *Host) onHandlerFailure(module, topic string, err error) {
	h.moduleLogger(module).Error("event handler failed", "topic", topic, "err", err)
	h.health.constrain(module, "callback:event", sdk.HealthDegraded, "event handler for "+topic+" failed: "+boundedDetail(err, 200))
}

// callback runs a host→module callback contained: a ctx cancelled at the
// module's Close (and after the callback timeout), recover, and the
// outcome reflected in the module's health under the callback's kind.
func (h *Host) callback(ctx context.Context, inst *instance, kind, what string, fn func(context.Context) error) error {
	if !inst.running() {
		return inst.revokedErr(kind)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(inst.ctx, cancel)
	defer stop()
	err, how := runBounded(cctx, h.opts.CallbackTimeout, h.opts.CancelGrace, fn)
	source := "callback:" + kind
	if err == nil && how == finished {
		h.health.constrain(inst.name, source, sdk.HealthHealthy, "")
		return nil
	}
	var detail string
	switch how {
	case timedOut, abandoned:
		detail = fmt.Sprintf("%s %s exceeded %s", kind, what, seconds(h.opts.CallbackTimeout))
		if how == abandoned {
			detail += " and ignored cancellation"
		}
		if err == nil {
			err = errors.New(detail)
		}
	case cancelled:
		detail = fmt.Sprintf("%s %s was cancelled", kind, what)
		if err == nil {
			err = context.Cause(cctx)
		}
	default:
		detail = fmt.Sprintf("%s %s failed: %s", kind, what, boundedDetail(err, 200))
	}
	h.logFailure(inst, kind+" "+what, err)
	if how == timedOut || how == abandoned {
		inst.log.Error(detail)
	}
	h.health.constrain(inst.name, source, sdk.HealthDegraded, detail)
	return fmt.Errorf("host: %s: %w", detail, err)
}

// onGuildChange fans a guild-configuration change out to the OnChange
// callbacks of each affected running module, contained and with the
// module's lifetime, then re-checks its invalid-guild health. Each module
// gets its changes on a queue of its own (in order), so a module whose
// callbacks hang delays only itself; one change's callbacks over all its
// guilds share one CallbackTimeout bound, the guilds left when it expires
// are skipped and reported in the module's health.
func (h *Host) onGuildChange(c guildcfg.Change) {
	h.mu.Lock()
	running := slices.Clone(h.started)
	h.mu.Unlock()
	for _, inst := range running {
		if inst.spec.GuildSettings == nil || !inst.running() {
			continue
		}
		var guilds []uint64
		switch {
		case c.Resync:
			guilds = h.guilds.GuildIDs()
		case c.Module == inst.name:
			guilds = []uint64{c.GuildID}
		case c.Module == "" && c.Target.Kind == guildcfg.KindGuild:
			// a server-setup change may flip the module's guild predicate
		default:
			continue
		}
		inst.enqueueChange(func() { h.deliverChange(inst, guilds) })
	}
}

// deliverChange runs inst's OnChange callbacks for guilds under one bound.
func (h *Host) deliverChange(inst *instance, guilds []uint64) {
	if !inst.running() {
		return
	}
	batch, cancel := context.WithTimeout(inst.ctx, h.opts.CallbackTimeout)
	defer cancel()
	skipped := 0
	for i, g := range guilds {
		if batch.Err() != nil {
			skipped = len(guilds) - i
			break
		}
		for _, fn := range inst.onChangeFuncs() {
			_ = h.callback(batch, inst, "guild_settings", "change in "+uintString(g), func(ctx context.Context) error {
				fn(ctx, g)
				return nil
			})
		}
	}
	if skipped > 0 && inst.running() {
		detail := fmt.Sprintf("guild settings change exceeded %s; %d guilds not notified", seconds(h.opts.CallbackTimeout), skipped)
		inst.log.Error(detail)
		h.health.constrain(inst.name, "guild_settings:batch", sdk.HealthDegraded, detail)
	} else if len(guilds) > 0 {
		// A later change that reached all its guilds clears the report
		// (one that names no guild, a server-setup change, does not).
		h.health.constrain(inst.name, "guild_settings:batch", sdk.HealthHealthy, "")
	}
	h.checkGuildSettings(inst.ctx, inst)
}

// checkGuildSettings reports (or clears) "invalid guild settings in …".
func (h *Host) checkGuildSettings(ctx context.Context, inst *instance) {
	if h.guilds == nil || inst.spec.GuildSettings == nil {
		return
	}
	list, err := h.guilds.List(ctx)
	if err != nil {
		inst.log.Warn("reading guild settings failed", "err", err)
		return
	}
	var bad []uint64
	for _, g := range list {
		if slices.Contains(g.InvalidModules, inst.name) {
			bad = append(bad, g.GuildID)
		}
	}
	if len(bad) == 0 {
		h.health.constrain(inst.name, "guild_settings", sdk.HealthHealthy, "")
		return
	}
	h.health.constrain(inst.name, "guild_settings", sdk.HealthDegraded, invalidGuildsDetail(bad))
}

func uintString(v uint64) string { return strconv.FormatUint(v, 10) }

// instance is one incarnation of a module, from create to close. Every
// port view holds it and refuses to act once it is revoked.
type instance struct {
	h        *Host
	name     string
	spec     sdk.Spec
	log      *slog.Logger
	settings sdk.Settings
	ctx      context.Context
	cancel   context.CancelFunc
	mod      sdk.Module
	storage  storagePort
	events   eventsPort
	http     *revocableHTTP
	jobs     *scheduler.Binding
	results  *revocableResults // nil unless the module has the port

	closedFlag  atomic.Bool
	runningFlag atomic.Bool
	starting    atomic.Bool

	cbMu     sync.Mutex
	cbNext   int
	onChange map[int]func(context.Context, uint64)

	changeMu      sync.Mutex
	changeQueue   []func()
	changeRunning bool
}

// maxQueuedChanges bounds a module's queue of guild changes: past it the
// backlog collapses into one delivery for every guild (like guildcfg's
// Resync), so a slow module costs bounded memory.
const maxQueuedChanges = 64

// enqueueChange runs fn after the module's earlier guild changes, on a
// goroutine of the module's own (started when the queue fills, ended when
// it empties).
func (i *instance) enqueueChange(fn func()) {
	i.changeMu.Lock()
	defer i.changeMu.Unlock()
	i.changeQueue = append(i.changeQueue, fn)
	if len(i.changeQueue) > maxQueuedChanges {
		h := i.h
		i.changeQueue = append(i.changeQueue[:0], func() { h.deliverChange(i, h.guilds.GuildIDs()) })
	}
	if i.changeRunning {
		return
	}
	i.changeRunning = true
	go func() {
		for {
			i.changeMu.Lock()
			if len(i.changeQueue) == 0 || i.revoked() {
				i.changeQueue, i.changeRunning = nil, false
				i.changeMu.Unlock()
				return
			}
			next := i.changeQueue[0]
			i.changeQueue = i.changeQueue[1:]
			i.changeMu.Unlock()
			next()
		}
	}()
}

func (h *Host) newInstance(spec sdk.Spec, settings sdk.Settings) *instance {
	ctx, cancel := context.WithCancel(context.Background())
	return &instance{h: h, name: spec.Name, spec: spec, log: h.moduleLogger(spec.Name), settings: settings,
		ctx: ctx, cancel: cancel, onChange: map[int]func(context.Context, uint64){}}
}

func (i *instance) revoked() bool { return i.closedFlag.Load() }

// running is true from a successful Start until Close begins.
func (i *instance) running() bool { return i.runningFlag.Load() && !i.closedFlag.Load() }

func (i *instance) revokedErr(port string) error { return &errRevoked{module: i.name, port: port} }

// guildActive is the module's guild predicate: the guild is active and,
// for a module with guild settings, its settings there are valid.
func (i *instance) guildActive(guildID uint64) bool {
	g := i.h.guilds
	if g == nil || i.revoked() {
		return false
	}
	if i.spec.GuildSettings != nil {
		return g.ModuleEnabled(guildID, i.name)
	}
	return g.Active(guildID)
}

func (i *instance) addOnChange(fn func(context.Context, uint64)) sdk.Registration {
	i.cbMu.Lock()
	defer i.cbMu.Unlock()
	if i.revoked() || fn == nil {
		return registration(func() {})
	}
	id := i.cbNext
	i.cbNext++
	i.onChange[id] = fn
	return once(func() {
		i.cbMu.Lock()
		delete(i.onChange, id)
		i.cbMu.Unlock()
	})
}

func (i *instance) onChangeFuncs() []func(context.Context, uint64) {
	i.cbMu.Lock()
	defer i.cbMu.Unlock()
	out := make([]func(context.Context, uint64), 0, len(i.onChange))
	for k := 0; k < i.cbNext; k++ {
		if fn, ok := i.onChange[k]; ok {
			out = append(out, fn)
		}
	}
	return out
}

// loadContext is what Create receives.
type loadContext struct {
	inst *instance
	reg  *loadRegistry
	h    *Host
}

var _ sdk.LoadContext = (*loadContext)(nil)

func (c *loadContext) ModuleName() string                     { return c.inst.name }
func (c *loadContext) Capabilities() sdk.Capabilities         { return c.h.capabilities() }
func (c *loadContext) Settings() sdk.Settings                 { return c.inst.settings }
func (c *loadContext) Tools() sdk.ToolRegistry                { return c.reg }
func (c *loadContext) Logger() *slog.Logger                   { return c.inst.log }
func (c *loadContext) RegisterToolLabels(l map[string]string) { c.h.tools.labels(c.inst, l) }
func (c *loadContext) DeclareSurfaceTools(surface string, names []string) {
	c.h.tools.declareSurface(c.inst.name, surface, names)
}

// Scheduler returns the durable scheduler the host made (nil when
// Options.Scheduler was given): the admin's job controls and runner state.
func (h *Host) Scheduler() *scheduler.Scheduler { return h.ownSched }

// ctxBackground is the context of reads the read model makes on its own.
func (h *Host) ctxBackground() context.Context { return context.Background() }
