package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kimiapp/kimi/app/admin"
	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/buildinfo"
	"github.com/kimiapp/kimi/app/config"
	demochat "github.com/kimiapp/kimi/app/demo"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

const serveHelp = `
Run the appliance: open (or create) the data directory, migrate the database
(writing an automatic backup first when migrations are pending on a non-empty
database), and serve the admin UI.

While no admin exists, one line is logged with a one-time set-up link:
  Open http://127.0.0.1:8080/setup?token=... to create the admin (expires in 30m)
Set KIMI_ADMIN_PASSWORD (or KIMI_ADMIN_PASSWORD_FILE) to create the admin
headlessly instead.

SIGINT or SIGTERM shut down gracefully: stop accepting connections, finish
in-flight requests (up to 15s), checkpoint and close the database, exit 0.
On start, the database's tables, indexes, triggers and views are compared
with what the migrations create; a database with an added trigger or view,
or a missing table, is refused naming each object. The server holds an
exclusive lock on the data directory while it runs, so 'kimi restore' and
'kimi migrate up' refuse to run alongside it.`

// shutdownTimeout bounds how long in-flight requests may take after a signal.
const shutdownTimeout = 15 * time.Second

// resultsCloseTimeout bounds the scheduled results' close: running
// handlers are cancelled and waited for (results.CancelGrace each, at
// once); a lease still held then expires on its own.
const resultsCloseTimeout = 2 * results.CancelGrace

// bootstrapActor is the audit actor of admins created from the environment.
const bootstrapActor = "bootstrap"

func runServe(ctx context.Context, c *cli, args []string) error {
	fs := c.newFlagSet("serve")
	flags := config.Bind(fs)
	if err := c.parseFlagsOnly(fs, "serve", args); err != nil {
		return err
	}
	cfg, err := c.loadConfig(flags)
	if err != nil {
		return err
	}
	logger := newLogger(c.stderr, cfg)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = serve(ctx, stop, c, cfg, logger)
	if err != nil && ctx.Err() != nil && !isConfigError(err) {
		// A signal during start-up is a request to stop, not a failure.
		appLogger(logger).Info("stopped during start-up", "reason", context.Cause(ctx), "err", err)
		return nil
	}
	return err
}

// serve runs the appliance until ctx is done. stop, called once shutdown
// begins, restores default signal handling so a second Ctrl-C kills at once.
func serve(ctx context.Context, stop func(), c *cli, cfg config.Config, logger *slog.Logger) (err error) {
	// logger is the root: each component gets its own named logger from it,
	// and serve's own lines carry component=kimi.
	root := logger
	logger = appLogger(root)
	bi := buildinfo.Get()
	logger.Info("starting", "version", bi.Version, "commit", bi.Commit, "config", cfg)
	warnLibcPin(logger)
	modules, err := moduleInfos(c.specs)
	if err != nil {
		return err
	}

	if err := ensureDataDir(cfg.DataDir, logger); err != nil {
		return err
	}
	lock, err := store.AcquireLock(cfg.DBPath())
	if err != nil {
		return fmt.Errorf("app: lock the data directory: %w", err)
	}
	defer lock.Release()

	st, err := store.Open(ctx, cfg.DBPath(), store.Options{Logger: root.With("component", "store")})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		} else {
			logger.Info("database checkpointed and closed", "path", st.Path())
		}
	}()
	rep, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	if rep.BackupPath != "" {
		logger.Info("pre-migration backup written", "path", rep.BackupPath, "from_version", rep.From, "to_version", rep.To)
	}

	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{
		Modules: c.specs, Logger: root.With("component", "guildcfg"),
		Trust: guildcfg.TrustSettings{
			StaffUserIDs: cfg.StaffUserIDs, StaffRoleIDs: cfg.StaffRoleIDs,
			RegularRoleIDs: cfg.RegularRoleIDs, OwnerUserID: cfg.OwnerUserID,
		},
	})
	if err != nil {
		return fmt.Errorf("app: load the guild configuration: %w", err)
	}
	// Stops the subscribers' delivery goroutines (the module host subscribes;
	// the admin only reads and writes).
	defer guilds.Close()
	var (
		fake      *fakediscord.Server
		demoGuild fakediscord.DemoGuild
		demoFirst bool
	)
	if cfg.Demo {
		// Demo mode: a built-in fake Discord on a loopback port with a seeded demo guild; the
		// real Discord is never contacted: the bot connects to the fake.
		fake = fakediscord.New(fakediscord.Options{MaxRecorded: 1000})
		defer fake.Close()
		demoGuild = fake.SeedDemo() // before the bot connects: READY has the demo guild
		if demoFirst, err = prepareDemo(ctx, st, guilds, demoGuild); err != nil {
			return err
		}
		if c.onDemoFake != nil {
			c.onDemoFake(fake, demoGuild)
		}
	}
	// The Discord connection, then the module host that uses it: a module
	// that fails is marked failed with its reason and the appliance keeps
	// serving; modules close (newest first) after the bot and before the
	// guild configuration and the store do.
	pub := &hostBus{}
	bot, err := newBot(ctx, st, guilds, pub, root, cfg, fake)
	if err != nil {
		return fmt.Errorf("app: discord: %w", err)
	}
	// The proposals service: modules propose through the host's ports, the
	// cards go through the bot, and their buttons come back to it.
	var modHost *host.Host
	props, err := proposals.New(proposals.Options{
		Store: st, Guilds: guilds, Discord: bot, OwnerUserID: cfg.OwnerUserID, Logger: root.With("component", "proposals"),
		KnownModule: func(name string) bool {
			m, ok := modHost.Module(name)
			return ok && m.State == host.StateRunning
		},
	})
	if err != nil {
		return fmt.Errorf("app: proposals: %w", err)
	}
	defer props.Close()
	// The scheduled-results outbox: modules subscribe through the host's
	// ports; its producer (a custom build's, through Extensions.OnServe)
	// enqueues. It starts after the modules (their handlers are registered
	// at Start: a row of an unregistered subscription would block) and
	// closes before them, so no handler runs into a closing module.
	res, err := results.New(results.Options{Store: st, Logger: root.With("component", "results"), Lease: c.resultsLease})
	if err != nil {
		return fmt.Errorf("app: results: %w", err)
	}
	// Only wired services' capabilities are advertised (with the intents').
	wired := withServices{extra: []string{sdk.CapProposals, sdk.CapScheduledResults}}
	caps := withCapabilities(host.Advertised(), wired.extra...)
	modHost, err = host.New(ctx, host.Options{
		Specs: c.specs, Store: st, Guilds: guilds, Logger: root, Getenv: c.env.Getenv,
		Selection: cfg.Modules, SelectionSet: cfg.ModulesSet, SchedulerLease: cfg.SchedulerLease,
		Discord: bot, Proposals: props, Results: res, Capabilities: &caps,
	})
	if err != nil {
		return fmt.Errorf("app: module host: %w", err)
	}
	wired.Host = modHost
	if demoFirst {
		if err := prepareDemoModules(ctx, modHost, demoGuild); err != nil {
			return err
		}
	}
	pub.bus.Store(modHost.Bus())
	bot.RegisterCoreHandler("proposals", proposals.Buttons{S: props})
	bot.Attach(wired)
	// The capabilities of the stored intents, before the modules start.
	if err := bot.ApplyCapabilities(ctx); err != nil {
		return fmt.Errorf("app: discord: %w", err)
	}
	if err := modHost.Start(ctx); err != nil {
		return fmt.Errorf("app: module host: %w", err)
	}
	defer func() {
		if cerr := modHost.Close(context.Background()); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	// The original warns at start about pending proposals without a card.
	if _, err := props.ReportUncarded(ctx); err != nil {
		logger.Warn("could not list the pending proposals", "err", err)
	}
	// After the modules started, so the first READY's command sync has
	// their commands; closed before the host.
	bot.Start(ctx)
	defer func() { _ = bot.Close() }()
	// A custom build's hook: its goroutines end (serveCtx) before the
	// outbox, the bot and the modules close.
	serveCtx, endServe := context.WithCancel(ctx)
	defer func() {
		endServe()
		closeCtx, cancel := context.WithTimeout(context.Background(), resultsCloseTimeout)
		defer cancel()
		if cerr := res.Close(closeCtx); cerr != nil {
			logger.Warn("closing the scheduled results failed", "err", cerr)
		}
	}()
	// The scheduled tasks: their runs publish into the outbox, whose
	// producer they are (a custom build's OnServe may still set its own).
	taskParts, err := newTasks(st, res, guilds, bot, modHost.Scheduler(), root.With("component", "tasks"))
	if err != nil {
		return err
	}
	res.SetProducer(taskParts.producer)
	if c.onServe != nil {
		c.onServe(serveCtx, ServeParts{Store: st, Results: res, Logger: root})
	}
	res.Start()
	// The runner after the bot and the modules; closed (its deliveries
	// waited for) before the outbox, the bot and the scheduler close. A
	// runner that cannot start leaves the appliance serving, as a failed
	// module does: the tasks then do not run, and the log says why.
	if err := taskParts.runner.Start(ctx); err != nil {
		logger.Warn("the scheduled tasks' runner did not start", "err", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), resultsCloseTimeout)
		defer cancel()
		if cerr := taskParts.runner.Close(closeCtx); cerr != nil {
			logger.Warn("closing the scheduled tasks' runner failed", "err", cerr)
		}
	}()
	authSvc := auth.New(st, root.With("component", "auth"), auth.Options{})
	needSetup, err := bootstrapAdmin(ctx, authSvc, cfg, logger)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("app: listen on %s (KIMI_ADDR): %w", cfg.Addr, err)
	}
	baseURL := cfg.ResolveBaseURL(ln.Addr().String())
	if !strings.HasPrefix(baseURL, "https://") && !isLoopback(ln.Addr()) {
		logger.Warn("the admin UI is reachable from the network over plain HTTP; put a TLS reverse proxy in front and set KIMI_BASE_URL=https://...",
			"addr", ln.Addr().String())
	}
	var demo admin.DemoChat
	if fake != nil {
		demo = demochat.NewChat(fake, demoGuild)
		logger.Warn("running in demo mode against a built-in fake Discord with a demo guild, never the real Discord; try /demo", "data_dir", cfg.DataDir)
	}
	adminSrv, err := admin.New(admin.Options{
		Store: st, Auth: authSvc, Logger: root.With("component", "admin"),
		Version: bi.Version, Commit: bi.Commit, StartedAt: c.started, DataDir: cfg.DataDir,
		BaseURL: baseURL, MetricsToken: cfg.MetricsToken.Reveal(), Modules: modules, Guilds: guilds, Host: modHost,
		Scheduler:      modHost.Scheduler(),
		TrustedProxies: cfg.TrustedProxies, AllowedHosts: allowedHosts(baseURL, ln.Addr()), Demo: demo, Discord: bot, Proposals: props,
		Results: res, Tasks: taskParts.admin,
	})
	if err != nil {
		ln.Close()
		return fmt.Errorf("app: admin: %w", err)
	}
	defer adminSrv.Close()

	srv := &http.Server{
		Handler:           adminSrv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(root.With("component", "http").Handler(), slog.LevelWarn),
		// Requests keep their own context: a signal must let them finish.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	// Shutdown waits for active requests; the admin's event streams never
	// finish by themselves, so it ends them first.
	srv.RegisterOnShutdown(adminSrv.CloseStreams)
	// The set-up link is minted before serving, so a ready server has
	// always printed it (and a token exists when /setup is first hit).
	if needSetup {
		if err := logSetupLink(ctx, authSvc, baseURL, logger); err != nil {
			ln.Close()
			return err
		}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("ready", "addr", ln.Addr().String(), "url", baseURL,
		"elapsed_ms", time.Since(c.started).Milliseconds())

	select {
	case <-ctx.Done():
		stop()
		logger.Info("shutting down", "reason", context.Cause(ctx))
		return shutdown(srv, logger)
	case err := <-served:
		return fmt.Errorf("app: serve: %w", err)
	}
}

// shutdown stops accepting connections and waits for in-flight requests, up
// to shutdownTimeout; then it closes whatever is left.
func shutdown(srv *http.Server, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("in-flight requests did not finish in time; closing them", "timeout", shutdownTimeout, "err", err)
		_ = srv.Close()
	}
	return nil
}

// bootstrapAdmin creates the admin from KIMI_ADMIN_PASSWORD(_FILE) when no
// admin exists. It reports whether set-up through the browser is still needed.
func bootstrapAdmin(ctx context.Context, a *auth.Service, cfg config.Config, logger *slog.Logger) (needSetup bool, err error) {
	has, err := a.HasAdmin(ctx)
	if err != nil {
		return false, err
	}
	switch {
	case has && cfg.AdminPassword != "":
		logger.Warn("an admin exists, so the admin password from the environment is ignored; remove it, and use 'kimi admin reset-password' to change a password",
			"source", cfg.Origins[config.KeyAdminPassword])
		return false, nil
	case has:
		return false, nil
	case cfg.AdminPassword == "":
		return true, nil
	}
	err = a.CreateAdmin(ctx, cfg.AdminUsername, cfg.AdminPassword.Reveal(), bootstrapActor)
	switch {
	case err == nil:
	case errors.Is(err, auth.ErrInvalidUsername):
		return false, &config.Error{Source: cfg.Origins[config.KeyAdminUsername], Msg: err.Error()}
	case auth.IsPasswordRuleError(err):
		return false, &config.Error{Source: cfg.Origins[config.KeyAdminPassword], Msg: err.Error()}
	default:
		return false, fmt.Errorf("app: create admin from the environment: %w", err)
	}
	logger.Info("admin created from the environment", "username", cfg.AdminUsername,
		"source", cfg.Origins[config.KeyAdminPassword])
	return false, nil
}

// logSetupLink mints a fresh one-time set-up token and logs the one line that
// tells the operator where to go.
func logSetupLink(ctx context.Context, a *auth.Service, baseURL string, logger *slog.Logger) error {
	token, expires, err := a.NewSetupToken(ctx)
	if errors.Is(err, auth.ErrAdminExists) {
		return nil // created in the meantime (kimi admin create)
	}
	if err != nil {
		return err
	}
	ttl := time.Until(expires).Round(time.Minute)
	logger.Log(ctx, visibleLevel(ctx, logger),
		fmt.Sprintf("Open %s/setup?token=%s to create the admin (expires in %s)", baseURL, token, formatMinutes(ttl)))
	return nil
}

// visibleLevel is the lowest of info, warn and error that logger prints:
// the set-up link is the only way in on a first run, so it must show even
// when the operator raised KIMI_LOG_LEVEL.
func visibleLevel(ctx context.Context, logger *slog.Logger) slog.Level {
	for _, l := range []slog.Level{slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		if logger.Enabled(ctx, l) {
			return l
		}
	}
	return slog.LevelError
}

// allowedHosts are the Host header values the admin answers to: the base
// URL's host and the address as bound (port 0 resolved to the real port).
// A loopback or wildcard bind also answers to localhost and the loopback
// literals with that port — names a DNS-rebinding page cannot take over; a
// wildcard bind's own literal (0.0.0.0, [::]) is no address a browser uses,
// so reaching a wildcard bind from the network by IP or name needs
// KIMI_BASE_URL.
func allowedHosts(baseURL string, addr net.Addr) []string {
	var hosts []string
	if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
		hosts = append(hosts, u.Host)
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return append(hosts, addr.String())
	}
	port := strconv.Itoa(tcp.Port)
	if !tcp.IP.IsUnspecified() {
		hosts = append(hosts, net.JoinHostPort(tcp.IP.String(), port))
	}
	if tcp.IP.IsUnspecified() || tcp.IP.IsLoopback() {
		hosts = append(hosts, "localhost:"+port, "127.0.0.1:"+port, "[::1]:"+port)
	}
	return hosts
}

// isLoopback reports whether addr only accepts local connections.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// formatMinutes renders a whole-minute duration as "30m" or "1h30m".
func formatMinutes(d time.Duration) string {
	s := d.Round(time.Minute).String() // e.g. "30m0s", "1h30m0s"
	if len(s) > 2 && s[len(s)-2:] == "0s" {
		s = s[:len(s)-2]
	}
	if len(s) > 3 && s[len(s)-3:] == "h0m" {
		s = s[:len(s)-2]
	}
	return s
}

// ensureDataDir creates the data directory (0700) and warns when an existing
// one is open to other users: it holds password hashes and session hashes.
func ensureDataDir(dir string, logger *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("app: create data directory (KIMI_DATA_DIR) %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("app: data directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("app: data directory (KIMI_DATA_DIR) %s is not a directory", dir)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		logger.Warn("the data directory is accessible to other users; consider chmod 700", "path", dir, "mode", fmt.Sprintf("%#o", perm))
	}
	return nil
}

func warnLibcPin(logger *slog.Logger) {
	have, want, ok := store.LibcPin()
	if !ok && want != "" {
		logger.Warn("modernc.org/libc does not match the version modernc.org/sqlite requires; the database may crash", "have", have, "want", want)
	}
}

// newLogger builds the process logger from the settings.
func newLogger(w io.Writer, cfg config.Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// appLogger is the named logger of the appliance's own lines (start-up,
// readiness, shutdown): component=kimi.
func appLogger(root *slog.Logger) *slog.Logger { return root.With("component", "kimi") }

// jobScheduler is the host's durable scheduler for the admin, or nil (an
// untyped nil, not a nil pointer in the interface) when it has none.
func jobScheduler(h *host.Host) admin.JobScheduler {
	if s := h.Scheduler(); s != nil {
		return s
	}
	return nil
}
