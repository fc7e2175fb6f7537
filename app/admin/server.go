// Package admin serves the appliance's admin UI: server-rendered templ pages
// on echo/v4, first-run set-up, sign-in, CSRF and security headers, the
// health and readiness probes, Prometheus metrics and hashed static assets.
// It is the only package that imports echo; handlers parse and validate,
// call a domain service and render (reference/go-stack-notes.md §D12).
//
// Adding a page: write the templ page in web/templates from the shared
// components (Layout, PageHeader, Card, FormField, TableWrap, EmptyState,
// Pagination, Alert), one .templ per page; put each handler in a file named
// after its action (<resource>_show.go, <resource>_<thing>_save.go, …),
// register it in routes.go's buildEcho on the admin group g (never with
// public) and, for a new section,
// add a templates.Nav entry (and drop its placeholders entry). Every POST
// form carries @CSRFField(c.CSRF); every mutation writes an audit row. The
// route-walk test then checks the new route requires a session.
package admin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	kimi "github.com/kimiapp/kimi"
	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/web/templates"
)

// ModuleInfo names a loaded module for the overview.
type ModuleInfo struct {
	Name    string
	Version string
}

// Options configures the admin server.
type Options struct {
	Store     *store.Store
	Auth      *auth.Service
	Logger    *slog.Logger
	Version   string
	Commit    string
	StartedAt time.Time
	DataDir   string
	// BaseURL is the public URL (e.g. https://kimi.example.org). An https
	// URL makes cookies Secure; its origin is trusted for cross-origin checks.
	BaseURL string
	// MetricsToken, when set, lets scrapers read /metrics with
	// "Authorization: Bearer <token>"; otherwise an admin session is needed.
	MetricsToken string
	// Modules lists the loaded modules (may be empty).
	Modules []ModuleInfo
	// TrustProxy takes the client IP from X-Forwarded-For (not X-Real-IP) when
	// the direct peer is a loopback or private address (a reverse proxy on
	// the same host or network), and honours X-Forwarded-Proto. Off by
	// default: a spoofed header must not dodge the sign-in rate limit.
	TrustProxy bool
	// Static overrides the embedded web/static files (tests); nil = embedded.
	Static fs.FS
	// LoginBurst and LoginEvery tune the per-IP limit on sign-in and set-up
	// attempts: a burst of LoginBurst, then one more every LoginEvery.
	// Defaults: 10 and 30s.
	LoginBurst int
	LoginEvery time.Duration
}

// Server is the admin UI. Create it with New; serve Handler; call Close.
type Server struct {
	opts       Options
	log        *slog.Logger
	echo       *echo.Echo
	assets     *assetSet
	pageAssets templates.Assets // the layout's asset URLs, fixed at start-up
	limiter    *ipLimiter
	metrics    *metrics
	secure     bool // cookies carry Secure regardless of the request
	origin     *http.CrossOriginProtection
	publicPath map[string]bool
	headers    []headerValue
	status     statusCache
	worldtree  worldtreeNav

	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// New builds the admin server and starts its housekeeping goroutine (rate
// limiter and expired-session cleanup), which Close stops.
func New(opts Options) (*Server, error) {
	if opts.Store == nil || opts.Auth == nil {
		return nil, errors.New("admin: new: Store and Auth are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StartedAt.IsZero() {
		opts.StartedAt = time.Now()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Static == nil {
		opts.Static = kimi.StaticFS()
	}
	if opts.LoginBurst <= 0 {
		opts.LoginBurst = 10
	}
	if opts.LoginEvery <= 0 {
		opts.LoginEvery = 30 * time.Second
	}
	s := &Server{
		opts:    opts,
		log:     opts.Logger,
		limiter: newIPLimiter(opts.LoginEvery, opts.LoginBurst),
		origin:  http.NewCrossOriginProtection(),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if opts.BaseURL != "" {
		u, err := url.Parse(opts.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("admin: new: BaseURL %q must be an absolute http(s) URL", opts.BaseURL)
		}
		s.secure = u.Scheme == "https"
		if err := s.origin.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
			return nil, fmt.Errorf("admin: new: trusted origin: %w", err)
		}
	}
	s.status.st, s.status.log = opts.Store, opts.Logger
	s.headers = s.buildSecurityHeaders()
	assets, err := loadAssets(opts.Static)
	if err != nil {
		return nil, err
	}
	s.assets = assets
	s.pageAssets = templates.Assets{CSS: assets.url("app.css"), Icon: assets.url("favicon.svg")}
	s.metrics = newMetrics(opts.Store)
	s.echo = s.buildEcho()
	go s.housekeeping()
	return s, nil
}

// Handler returns the whole admin HTTP handler: pages, probes, metrics and
// static files.
func (s *Server) Handler() http.Handler { return s.echo }

// Close stops the background goroutine. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
	})
}

// housekeeping forgets idle rate-limit buckets and purges expired sessions.
func (s *Server) housekeeping() {
	defer close(s.done)
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	purge := 0
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.limiter.gc(now, 15*time.Minute)
			if purge++; purge%60 == 1 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if n, err := s.opts.Auth.PurgeExpired(ctx); err != nil {
					s.log.Warn("admin: purge expired sessions", "err", err)
				} else if n > 0 {
					s.log.Debug("purged expired sessions", "count", n)
				}
				cancel()
			}
		}
	}
}

// clientMeta extracts the audit/session metadata of a request.
func clientMeta(c echo.Context) auth.ClientMeta {
	return auth.ClientMeta{IP: c.RealIP(), UserAgent: c.Request().UserAgent()}
}

// localRedirect returns next when it is a safe local path ("/x", not
// "//host" or "/\host"), else "/".
func localRedirect(next string) string {
	if next == "" || len(next) > 2048 || !strings.HasPrefix(next, "/") ||
		strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	for _, r := range next {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return "/"
		}
	}
	return next
}
