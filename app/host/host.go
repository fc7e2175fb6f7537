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
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
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
	// Goroutines bound each module's goroutines (KIMI_MODULE_GOROUTINE_LIMIT).
	Goroutines GoroutineOptions
	// RunningLongAfter is a callback's budget: past it the module shows
	// the callback as running long (0: a tenth of CallbackTimeout).
	RunningLongAfter time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// EgressRoutes and EgressTLS, in a test binary only, point the
	// modules' declared HTTP hosts at a test's servers and trust their
	// certificates (egress.Options.TestRoutes and TLSConfig).
	EgressRoutes map[string]netip.AddrPort
	EgressTLS    *tls.Config
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
	// Bus is the event bus the modules subscribe and publish on (nil: the
	// host builds its own). serve builds it first and gives it to the bot
	// too, which publishes the discord.* events on it: neither the bot nor
	// the host waits for the other to exist. The host closes it.
	Bus *events.Bus
	// AwaitDiscord, when set, is waited for by Start before any module
	// starts (app/serve.go: the bot's first READY, bounded by
	// KIMI_DISCORD_READY_WAIT), so a module's Start can call Discord. Its
	// error is logged and the modules start anyway.
	AwaitDiscord func(ctx context.Context) error
	// Directory, when set, is kept up to date with which modules run: the
	// port through which the proposals service, built before the host,
	// asks whether a module is running.
	Directory *Directory
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
	StateStarting    State = "starting"
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

	health     *healthBook
	goroutines *goroutineWatch
	long       *longBook
	services   *serviceBook
	tools      *toolBook
	router     *router
	sched      JobScheduler
	ownSched   *scheduler.Scheduler // made by New, closed by Close
	discord    Discord              // nil when not connected

	unsubscribe func()
	watch       signal.Watchers // Watch's subscribers

	op sync.Mutex // serializes boot, restart, set-enabled and close

	// booted is set once Start's first boot ended: every module that
	// started has registered its commands (CommandsRegistered).
	booted atomic.Bool

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
	since       time.Time // when state was entered
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
	h.goroutines = newGoroutineWatch(h, opts.Goroutines)
	h.long = newLongBook()
	if h.opts.RunningLongAfter <= 0 {
		h.opts.RunningLongAfter = h.opts.CallbackTimeout / 10
	}
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
		h.bus = opts.Bus
		if h.bus == nil {
			h.bus = events.New(events.Options{Logger: opts.Logger.With("component", "events")})
		}
		h.events = busFactory{b: h.bus, report: h.onHandlerFailure}
	}
	if h.guilds != nil {
		h.unsubscribe = h.guilds.Subscribe(h.onGuildChange)
	}
	return h, nil
}

func (h *Host) moduleLogger(name string) *slog.Logger { return h.root.With("module", name) }

// Scheduler returns the durable scheduler the host made (nil when
// Options.Scheduler was given): the admin's job controls and runner state.
func (h *Host) Scheduler() *scheduler.Scheduler { return h.ownSched }

// ctxBackground is the context of reads the read model makes on its own.
func (h *Host) ctxBackground() context.Context { return context.Background() }
