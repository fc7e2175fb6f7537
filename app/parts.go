package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/admin"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/buildinfo"
	"github.com/kimiapp/kimi/app/config"
	demochat "github.com/kimiapp/kimi/app/demo"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/internal/lifecycle"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// The parts' budgets. Starting: a part that bounds itself has none (the
// store's migrations and pre-migration backup; the module host, which
// bounds the wait for Discord and each module's start). Closing: each
// budget plus the runner's grace for a part that overruns it
// (lifecycle.AbandonGrace) add up to shutdownTimeout at most, demo mode's
// fake Discord included (TestCloseBudgetsFitTheShutdownBound), so the
// store's checkpoint always gets its own.
const (
	httpStartBudget    = 5 * time.Second
	botStartBudget     = 10 * time.Second
	resultsStartBudget = 5 * time.Second
	tasksStartBudget   = 30 * time.Second

	tasksCloseBudget   = 1500 * time.Millisecond
	resultsCloseBudget = 1500 * time.Millisecond
	modulesCloseBudget = 4500 * time.Millisecond // the scheduler, every module, the event bus
	smallCloseBudget   = 250 * time.Millisecond
	botCloseBudget     = 1500 * time.Millisecond // discordgo's close handshake takes about 1 s, after the turns
	turnsCloseBudget   = 400 * time.Millisecond  // the assistant's running turns and the clean-up of interrupted ones, within the bot's budget
	httpCloseBudget    = 1500 * time.Millisecond // in-flight admin requests
	storeCloseBudget   = 1500 * time.Millisecond // the final checkpoint
)

// appliance is what newAppliance built: the parts after the store, in
// start order, and the admin's listener (for serve's ready line).
type appliance struct {
	parts []lifecycle.Part
	http  *httpPart
}

// newAppliance builds every part after the store from the migrated store,
// each constructed with the parts it needs, and returns them in start
// order (the list at its end): the demo's fakes, the guild configuration
// and the proposals (which only close), the assistant's model provider,
// the admin listening, the bot, the module host (after the bot's first
// READY), the scheduled results, the scheduled tasks. A constructor's failure releases what was
// built before it. Adding a feature is a constructor and one line in the
// list.
func newAppliance(ctx context.Context, c *cli, cfg config.Config, root *slog.Logger, st *store.Store,
	run *lifecycle.Runner, modules []admin.ModuleInfo) (_ *appliance, err error) {
	var release []func() // what a failed build releases, newest first
	defer func() {
		if err != nil {
			for i := len(release) - 1; i >= 0; i-- {
				release[i]()
			}
		}
	}()
	logger := appLogger(root)

	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{
		Modules: c.specs, Logger: root.With("component", "guildcfg"),
		Trust: guildcfg.TrustSettings{
			StaffUserIDs: cfg.StaffUserIDs, StaffRoleIDs: cfg.StaffRoleIDs,
			RegularRoleIDs: cfg.RegularRoleIDs, OwnerUserID: cfg.OwnerUserID,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("app: load the guild configuration: %w", err)
	}
	release = append(release, guilds.Close)

	var (
		fake      *fakediscord.Server
		demoGuild fakediscord.DemoGuild
		demoFirst bool
		demoModel *llmfake.Server
	)
	if cfg.Demo {
		// Demo mode: a built-in fake Discord on a loopback port with a seeded demo guild; the
		// real Discord is never contacted: the bot connects to the fake.
		fake = fakediscord.New(fakediscord.Options{MaxRecorded: 1000})
		release = append(release, func() { fake.Close() })
		demoGuild = fake.SeedDemo() // before the bot connects: READY has the demo guild
		if demoFirst, err = prepareDemo(ctx, st, guilds, demoGuild); err != nil {
			return nil, err
		}
		if c.onDemoFake != nil {
			c.onDemoFake(fake, demoGuild)
		}
		// The scripted demo model on loopback is the assistant's provider:
		// no key, never the network.
		demoModel = llmfake.New(llmfake.Demo()...)
		demoModel.SetModels(llmfake.ModelEntry{ID: DemoModelID, OwnedBy: "kimi"})
		release = append(release, demoModel.Close)
		if c.onDemoModel != nil {
			c.onDemoModel(demoModel)
		}
	}
	provider := demoModel
	if c.demoConfiguredProvider {
		provider = nil
	}
	asst, err := newAssistant(cfg, root, st, provider, c.assistantStall)
	if err != nil {
		return nil, err
	}

	// The ports that break the bot ↔ host and proposals ↔ host cycles: the
	// event bus the bot publishes on and the modules subscribe to, and the
	// directory of running modules the proposals service asks. Both are
	// built before either side.
	// The default lanes (sdk.EventWorkers, sdk.EventQueueSize), which
	// BenchmarkGatewayIngest measures.
	bus := events.New(events.Options{Logger: root.With("component", "events")})
	directory := host.NewDirectory()

	release = append(release, func() { bus.Close(0) })
	bot, err := newBot(ctx, st, guilds, bus, root, cfg, fake)
	if err == nil && c.quickStop {
		bot.QuickStop()
	}
	if err != nil {
		return nil, fmt.Errorf("app: discord: %w", err)
	}
	release = append(release, func() { _ = bot.Close() })
	props, err := proposals.New(proposals.Options{
		Store: st, Guilds: guilds, Discord: discord.NewCards(bot), OwnerUserID: cfg.OwnerUserID,
		Logger: root.With("component", "proposals"), KnownModule: directory.Running,
	})
	if err != nil {
		return nil, fmt.Errorf("app: proposals: %w", err)
	}
	release = append(release, props.Close)
	// The scheduled tasks' access rule is the outbox's producer (a custom
	// build's OnServe may still set its own).
	taskAccess, poster := newTaskAccess(st, guilds, bot)
	res, err := results.New(results.Options{Store: st, Logger: root.With("component", "results"), Lease: c.resultsLease, Producer: taskAccess})
	if err != nil {
		return nil, fmt.Errorf("app: results: %w", err)
	}
	release = append(release, func() { _ = res.Close(context.Background()) })
	// Only wired services' capabilities are advertised (with the intents').
	extra := []string{sdk.CapProposals, sdk.CapScheduledResults}
	caps := withCapabilities(host.Advertised(), extra...)
	modHost, err := host.New(ctx, host.Options{
		Specs: c.specs, Store: st, Guilds: guilds, Logger: root, Getenv: c.env.Getenv,
		Selection: cfg.Modules, SelectionSet: cfg.ModulesSet, SchedulerLease: cfg.SchedulerLease,
		StartTimeout: cfg.ModuleStartTimeout, Goroutines: host.GoroutineOptions{Limit: cfg.ModuleGoroutineLimit},
		Discord: bot, Bus: bus, Directory: directory, Proposals: props, Results: res, Capabilities: &caps,
		AwaitDiscord: awaitDiscord(bot, cfg.DiscordReadyWait), Now: c.hostNow,
		EgressRoutes: c.egressRoutes, EgressTLS: testRootsTLS(c.egressRoots),
	})
	if err != nil {
		return nil, fmt.Errorf("app: module host: %w", err)
	}
	// Closing the host unstarted closes its scheduler, storage and the bus.
	release = append(release, func() { _ = modHost.Close(context.Background()) })
	if demoFirst {
		if err := prepareDemoModules(ctx, modHost, demoGuild); err != nil {
			return nil, err
		}
	}
	// The bot dispatches interactions to the host and advertises the
	// capabilities of its intents through it: attached once, before it starts.
	bot.Attach(withServices{Host: modHost, extra: extra})
	bot.RegisterCoreHandler("proposals", proposals.Buttons{S: props})
	if c.onParts != nil {
		c.onParts(EmbeddedParts{Store: st, Guilds: guilds, Host: modHost, Proposals: props, Discord: bot})
	}
	// The assistant's turns: mentions, replies and /ask reach them through
	// the bot's port, attached once, before the bot starts.
	// The usage roll-up's day is the turn's clock's.
	var convNow func() time.Time
	if c.assistantClock != nil {
		convNow = c.assistantClock.Now
	}
	convs := assistant.NewConversations(st, convNow)
	turns, err := assistant.NewAssistant(assistant.AssistantOptions{
		Store: convs, Provider: asst, Calls: asst, Tools: modHost, Guilds: guilds,
		Settings: st, Identity: bot.Identity, Logger: root.With("component", "assistant"), Clock: c.assistantClock,
	})
	if err != nil {
		return nil, fmt.Errorf("app: assistant: %w", err)
	}
	bot.AttachAssistant(discord.ResponderPort{Assistant: turns, Policies: guilds, Name: asst.AssistantName, Usage: turns})
	// /forget: a member deletes their own conversations (core command and buttons).
	forget := assistant.NewForget(st, root.With("component", "assistant"), nil)
	bot.RegisterCoreCommand(hostkit.CommandForget, assistant.ForgetNamespace, forget)
	bot.RegisterCoreHandler(assistant.ForgetNamespace, forget)
	// The ⏳ a crash left on interrupted turns' triggers and their status
	// messages, removed once the bot is ready.
	cleanup := &interruptedCleanup{bot: bot, await: awaitDiscord(bot, cfg.DiscordReadyWait), logger: logger}

	// The transcript retention: a core job on the modules' durable scheduler.
	retention, err := assistant.NewRetention(assistant.RetentionOptions{Store: st, Jobs: modHost.Scheduler(),
		Logger: root.With("component", "assistant-retention"), Now: c.hostNow})
	if err != nil {
		return nil, fmt.Errorf("app: assistant retention: %w", err)
	}

	taskParts, err := newTasks(st, res, guilds, poster, taskAccess, modHost.Scheduler(), root.With("component", "tasks"), c.hostNow)
	if err != nil {
		return nil, err
	}

	authSvc := auth.New(st, root.With("component", "auth"), auth.Options{})
	needSetup, err := bootstrapAdmin(ctx, authSvc, cfg, logger)
	if err != nil {
		return nil, err
	}
	var demo admin.DemoChat
	if fake != nil {
		demo = demochat.NewChat(fake, demoGuild)
		logger.Warn("running in demo mode against a built-in fake Discord with a demo guild, never the real Discord; try /demo", "data_dir", cfg.DataDir)
	}
	web, err := newHTTPPart(cfg, root, needSetup, authSvc, func(baseURL string, hosts []string) (*admin.Server, error) {
		bi := buildinfo.Get()
		return admin.New(admin.Options{
			Store: st, Auth: authSvc, Logger: root.With("component", "admin"),
			Version: bi.Version, Commit: bi.Commit, StartedAt: c.started, DataDir: cfg.DataDir,
			BaseURL: baseURL, MetricsToken: cfg.MetricsToken.Reveal(), Modules: modules, Guilds: guilds, Host: modHost,
			Scheduler: jobScheduler(modHost), Startup: run,
			TrustedProxies: cfg.TrustedProxies, AllowedHosts: hosts, Demo: demo, Discord: bot, Proposals: props,
			Results: res, Tasks: taskParts.admin, Assistant: asst, ToolStats: convs, Retention: retention, Conversations: convs, Usage: convs,
		})
	})
	if err != nil {
		return nil, err
	}
	release = append(release, func() { _ = web.ln.Close(); web.admin.Close() })

	// The custom build's hook rides with the outbox: OnServe runs just
	// before the dispatcher starts, and its ctx ends before the outbox
	// closes.
	serveCtx, endServe := context.WithCancel(context.WithoutCancel(ctx))
	resultsPart := lifecycle.Part{Name: "results", StartBudget: resultsStartBudget, CloseBudget: resultsCloseBudget,
		Start: func(context.Context) error {
			if c.onServe != nil {
				c.onServe(serveCtx, ServeParts{Store: st, Results: res, Logger: root})
			}
			res.Start()
			return nil
		},
		Close: func(ctx context.Context) error { endServe(); return res.Close(ctx) },
	}

	parts := []lifecycle.Part{
		// Close only: the subscribers' delivery goroutines (the module
		// host subscribes; the admin only reads and writes).
		{Name: "configuration", CloseBudget: smallCloseBudget, Close: func(context.Context) error { guilds.Close(); return nil }},
		// Close only: the proposals' card notifications, after the modules
		// (which propose) closed.
		{Name: "proposals", CloseBudget: smallCloseBudget, Close: func(context.Context) error { props.Close(); return nil }},
		// The model provider, built from the saved settings before the admin
		// serves them (rebuilt by the admin on every save). A store failure
		// leaves the appliance serving without it, as a failed module does.
		{Name: "assistant", Optional: true, Start: func(ctx context.Context) error {
			// Turns a crash cut short are marked interrupted before any
			// new one starts.
			if gone, err := turns.Recover(ctx); err != nil {
				logger.Warn("could not mark the interrupted assistant turns", "err", err)
			} else if len(gone) > 0 {
				logger.Info("marked assistant turns interrupted by the last stop", "turns", len(gone))
				cleanup.set(gone)
			}
			return asst.Reload(ctx)
		}},
		web.part(),
		{Name: "discord", StartBudget: botStartBudget, CloseBudget: botCloseBudget,
			Start: func(ctx context.Context) error {
				// The capabilities of the stored intents, before the modules start.
				if err := bot.ApplyCapabilities(ctx); err != nil {
					return fmt.Errorf("app: discord: %w", err)
				}
				bot.Start(ctx)
				cleanup.start(ctx)
				return nil
			},
			Close: func(ctx context.Context) error {
				// The running turns and the clean-up of interrupted ones
				// end first, together, each within turnsCloseBudget (they
				// answer through the bot).
				tctx, cancel := context.WithTimeout(ctx, turnsCloseBudget)
				defer cancel()
				var wg sync.WaitGroup
				wg.Go(func() { cleanup.stop(tctx) })
				if err := turns.Close(tctx); err != nil {
					logger.Warn("assistant turns still running at shutdown", "err", err)
				}
				wg.Wait()
				return bot.Close()
			}},
		{Name: "modules", CloseBudget: modulesCloseBudget, // each module's start is bounded by the host
			Start: func(ctx context.Context) error {
				if err := modHost.Start(ctx); err != nil {
					return fmt.Errorf("app: module host: %w", err)
				}
				// The original warns at start about pending proposals without a card.
				if _, err := props.ReportUncarded(ctx); err != nil {
					logger.Warn("could not list the pending proposals", "err", err)
				}
				return nil
			},
			Close: modHost.Close},
		resultsPart,
		// A runner that cannot start leaves the appliance serving, as a
		// failed module does: the tasks then do not run, and the log says why.
		{Name: "tasks", Optional: true, StartBudget: tasksStartBudget, CloseBudget: tasksCloseBudget,
			Start: taskParts.runner.Start, Close: taskParts.runner.Close},
		// Start only: the scheduler's close, with the modules, cancels a run
		// under way (its batch rolls back) and keeps the next run's row. A
		// retention job that cannot start leaves the transcripts in place
		// (the log says why).
		{Name: "assistant retention", Optional: true, Start: retention.Start},
	}
	if fake != nil {
		// Closed after the bot that talks to it.
		// Closed after the bot and the admin that talk to them. The
		// assistant holds only idle connections, which end with the process.
		parts = append([]lifecycle.Part{{Name: "demo fakes", CloseBudget: smallCloseBudget,
			Close: func(context.Context) error { fake.Close(); demoModel.Close(); return nil }}}, parts...)
	}
	return &appliance{parts: parts, http: web}, nil
}

// DemoModelID is the model demo mode's scripted model lists and serves.
const DemoModelID = "kimi-demo"

// newAssistant is the model provider's owner: the saved settings with the
// environment's overrides (KIMI_LLM_*), or demo mode's scripted model.
func newAssistant(cfg config.Config, root *slog.Logger, st *store.Store, demo *llmfake.Server, stall time.Duration) (*assistant.Service, error) {
	source := func(key, value string) string {
		if value == "" {
			return ""
		}
		return cfg.Origins[key]
	}
	o := assistant.Options{
		Store: st, Logger: root.With("component", "assistant"), UserAgent: "Kimi/" + buildinfo.Get().Version, StallTimeout: stall,
		Env: settings.AssistantEnv{BaseURL: cfg.LLMBaseURL, Model: cfg.LLMModel, APIKey: cfg.LLMAPIKey.Reveal()},
		Sources: assistant.EnvSources{BaseURL: source(config.KeyLLMBaseURL, cfg.LLMBaseURL),
			Model: source(config.KeyLLMModel, cfg.LLMModel), APIKey: source(config.KeyLLMAPIKey, cfg.LLMAPIKey.Reveal())},
	}
	if demo != nil {
		o.Demo = &assistant.Demo{BaseURL: demo.URL(), Model: DemoModelID}
	}
	a, err := assistant.New(o)
	if err != nil {
		return nil, fmt.Errorf("app: assistant: %w", err)
	}
	return a, nil
}

// awaitDiscord is the module host's wait for the bot: its first READY,
// for at most wait; without a token nothing is waited for.
func awaitDiscord(bot *discord.Bot, wait time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		if err := bot.AwaitReady(ctx); err != nil && !errors.Is(err, discord.ErrNoToken) {
			return err
		}
		return nil
	}
}

// storePart is the first part: the data directory's lock, the database
// opened and migrated (an automatic backup first when migrations are
// pending on a non-empty database). Every other part is built from st.
type storePart struct {
	cfg    config.Config
	root   *slog.Logger
	logger *slog.Logger
	lock   *store.Lock
	st     *store.Store
}

func newStorePart(cfg config.Config, root, logger *slog.Logger) *storePart {
	return &storePart{cfg: cfg, root: root, logger: logger}
}

func (p *storePart) part() lifecycle.Part {
	return lifecycle.Part{Name: "store", Start: p.start, Close: p.close, CloseBudget: storeCloseBudget}
}

func (p *storePart) start(ctx context.Context) error {
	lock, err := store.AcquireLock(p.cfg.DBPath())
	if err != nil {
		return fmt.Errorf("app: lock the data directory: %w", err)
	}
	p.lock = lock
	st, err := store.Open(ctx, p.cfg.DBPath(), store.Options{Logger: p.root.With("component", "store")})
	if err != nil {
		return err
	}
	p.st = st
	rep, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	if rep.BackupPath != "" {
		p.logger.Info("pre-migration backup written", "path", rep.BackupPath, "from_version", rep.From, "to_version", rep.To)
	}
	return nil
}

func (p *storePart) close(context.Context) error {
	var err error
	if p.st != nil {
		if err = p.st.Close(); err == nil {
			p.logger.Info("database checkpointed and closed", "path", p.st.Path())
		}
	}
	if p.lock != nil {
		p.lock.Release()
	}
	return err
}

// httpPart is the admin UI listening: the listener is bound when it is
// built (so a taken address fails before anything starts, and the admin
// knows its real address); Start serves, Close drains in-flight requests.
type httpPart struct {
	ln        net.Listener
	srv       *http.Server
	admin     *admin.Server
	auth      *auth.Service
	baseURL   string
	needSetup bool
	logger    *slog.Logger
	served    chan error // Serve's end other than by Close
}

func newHTTPPart(cfg config.Config, root *slog.Logger, needSetup bool, authSvc *auth.Service,
	newAdmin func(baseURL string, allowedHosts []string) (*admin.Server, error)) (*httpPart, error) {
	logger := appLogger(root)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("app: listen on %s (KIMI_ADDR): %w", cfg.Addr, err)
	}
	baseURL := cfg.ResolveBaseURL(ln.Addr().String())
	if !strings.HasPrefix(baseURL, "https://") && !isLoopback(ln.Addr()) {
		logger.Warn("the admin UI is reachable from the network over plain HTTP; put a TLS reverse proxy in front and set KIMI_BASE_URL=https://...",
			"addr", ln.Addr().String())
	}
	adminSrv, err := newAdmin(baseURL, allowedHosts(baseURL, ln.Addr()))
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("app: admin: %w", err)
	}
	srv := &http.Server{
		Handler:           adminSrv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(root.With("component", "http").Handler(), slog.LevelWarn),
		// Requests keep their own context: a signal must let them finish.
		BaseContext: func(net.Listener) context.Context { return context.Background() },
	}
	// Shutdown waits for active requests; the admin's event streams never
	// finish by themselves, so it ends them first.
	srv.RegisterOnShutdown(adminSrv.CloseStreams)
	return &httpPart{ln: ln, srv: srv, admin: adminSrv, auth: authSvc, baseURL: baseURL, needSetup: needSetup,
		logger: logger, served: make(chan error, 1)}, nil
}

func (p *httpPart) addr() string { return p.ln.Addr().String() }

func (p *httpPart) part() lifecycle.Part {
	started := false
	return lifecycle.Part{Name: "admin", StartBudget: httpStartBudget, CloseBudget: httpCloseBudget,
		Start: func(ctx context.Context) error {
			// The set-up link is minted before serving, so a listening
			// server has always printed it (and a token exists when /setup
			// is first hit).
			if p.needSetup {
				if err := logSetupLink(ctx, p.auth, p.baseURL, p.logger); err != nil {
					return err
				}
			}
			started = true
			go func() {
				if err := p.srv.Serve(p.ln); !errors.Is(err, http.ErrServerClosed) {
					p.served <- err
				}
			}()
			p.logger.Info("listening", "addr", p.addr(), "url", p.baseURL)
			return nil
		},
		Close: func(ctx context.Context) error {
			defer p.admin.Close()
			if !started {
				return p.ln.Close()
			}
			return shutdownHTTP(ctx, p.srv, p.logger)
		}}
}

// shutdownHTTP stops accepting connections and waits for in-flight
// requests until ctx ends; then it closes whatever is left.
func shutdownHTTP(ctx context.Context, srv *http.Server, logger *slog.Logger) error {
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("in-flight requests did not finish in time; closing them", "err", err)
		_ = srv.Close()
	}
	return nil
}

// /forget's handler answers both the core command and its buttons.
var (
	_ discord.CoreCommandHandler = (*assistant.Forget)(nil)
	_ discord.CoreHandler        = (*assistant.Forget)(nil)
)
