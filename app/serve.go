package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/kimiapp/kimi/app/admin"
	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/buildinfo"
	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/internal/lifecycle"
	"github.com/kimiapp/kimi/app/store"
)

const serveHelp = `
Run the appliance: open (or create) the data directory, migrate the database
(writing an automatic backup first when migrations are pending on a non-empty
database), and serve the admin UI. The admin answers before the bot
connects and before any module starts (/readyz names the parts still
starting); with a bot token the modules start after Discord's first READY,
or after KIMI_DISCORD_READY_WAIT.

While no admin exists, one line is logged with a one-time set-up link:
  Open http://127.0.0.1:8080/setup?token=... to create the admin (expires in 30m)
Set KIMI_ADMIN_PASSWORD (or KIMI_ADMIN_PASSWORD_FILE) to create the admin
headlessly instead.

SIGINT or SIGTERM shut down gracefully within 15s: the tasks, the results,
the modules (a hung one is abandoned), Discord and the admin (in-flight
requests finish) close in turn, then the database is checkpointed and
closed, exit 0.
On start, the database's tables, indexes, triggers and views are compared
with what the migrations create; a database with an added trigger or view,
or a missing table, is refused naming each object. The server holds an
exclusive lock on the data directory while it runs, so 'kimi restore' and
'kimi migrate up' refuse to run alongside it.`

// shutdownTimeout bounds the whole shutdown, from the signal to the
// database's close: the parts' close budgets (parts.go) fit inside it, so a
// module hung in Close or in an event handler is abandoned in time (one
// number, README "First run").
const shutdownTimeout = 15 * time.Second

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

// serve runs the appliance until ctx is done: the store part first (every
// other part is built from the migrated store), then the parts newParts
// lists, in order (parts.go). The admin answers from the moment its part
// has started, while the bot connects and the modules start. stop, called
// once shutdown begins, restores default signal handling so a second
// Ctrl-C kills at once.
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

	run := lifecycle.New(logger)
	shutdownCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), shutdownTimeout)
	}
	closed := false
	defer func() {
		if !closed { // a failed start: close what started, within the same bound
			cctx, cancel := shutdownCtx()
			defer cancel()
			err = errors.Join(err, run.Close(cctx))
		}
	}()
	db := newStorePart(cfg, root, logger)
	if err := run.Start(ctx, db.part()); err != nil {
		return unwrapStart(err)
	}
	a, err := newAppliance(ctx, c, cfg, root, db.st, run, modules)
	if err != nil {
		return err
	}
	started := make(chan error, 1)
	// The goroutine keeps its own channel: serve sets started to nil when
	// it stops waiting, and a send on that nil would block for ever.
	go func(done chan<- error) { done <- run.Start(ctx, a.parts...) }(started)
	select {
	case err := <-started:
		if err != nil {
			return unwrapStart(err)
		}
		logger.Info("ready", "addr", a.http.addr(), "url", a.http.baseURL,
			"elapsed_ms", time.Since(c.started).Milliseconds())
		if c.onReady != nil {
			c.onReady(a.http.baseURL)
		}
	case <-ctx.Done():
		started = nil // shutting down while parts start
	case err := <-a.http.served:
		return fmt.Errorf("app: serve: %w", err)
	}
	if started != nil {
		select {
		case <-ctx.Done():
		case err := <-a.http.served:
			return fmt.Errorf("app: serve: %w", err)
		}
	}
	stop()
	logger.Info("shutting down", "reason", context.Cause(ctx))
	cctx, cancel := shutdownCtx()
	defer cancel()
	closed = true
	if started == nil {
		// The parts still starting see ctx end; the close waits for them
		// within the same bound.
		select {
		case <-run.Idle():
		case <-cctx.Done():
		}
	}
	if err := run.Close(cctx); err != nil {
		logger.Warn("some parts did not close cleanly", "err", err)
	}
	return nil
}

// unwrapStart returns a failed part's own error for the operator (it
// names its package already: "store: schema: …"), config errors with their
// type (isConfigError).
func unwrapStart(err error) error {
	var se *lifecycle.StartError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
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
