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
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	kimi "github.com/kimiapp/kimi"
	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/internal/ratelog"
	"github.com/kimiapp/kimi/app/internal/signal"
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
	// Guilds is the configuration-document service the guild pages read
	// and write (app/serve.go passes the *guildcfg.Service). Nil: the guild
	// pages answer 503 (a server over an unmigrated database).
	Guilds GuildConfig
	// Host is the module host the /modules pages read and act on, and the
	// overview's module health (app/serve.go passes the *host.Host). Nil:
	// the module pages answer 503 and the overview lists Modules.
	Host ModuleHost
	// Startup is serve's progress: /readyz answers 503 naming the parts
	// still starting, and once shutdown began. Nil: only the database and
	// scheduler decide readiness.
	Startup Startup
	// Scheduler is the durable job scheduler (app/serve.go passes the
	// host's); nil: /readyz says nothing of it.
	Scheduler JobScheduler
	// Discord is the bot's connection (app/serve.go passes the
	// *discord.Bot): the /discord page and the overview's Discord state.
	// Nil: /discord answers 503 and the overview says not configured.
	Discord DiscordConn
	// Demo is demo mode's guild (`kimi serve --demo`): the /demo page reads and posts into it
	// and every page is labelled as a demo. Nil: not demo mode, /demo answers 404.
	Demo DemoChat
	// Proposals is the proposals service (app/serve.go passes the
	// *proposals.Service): /proposals, the navigation's pending badge and
	// the proposal notifications of /settings (stored with app/settings).
	// Nil: the proposal pages answer 503 and /settings says notifications
	// are not available.
	Proposals ProposalReview
	// Results is the scheduled-results outbox (app/serve.go passes the
	// *results.Service): the /results pages. Nil: they answer 503.
	Results ResultsAdmin
	// Tasks is the scheduled tasks' admin facade (app/serve.go passes the
	// *tasks.Admin): the /tasks pages. Nil: they answer 503.
	Tasks TasksAdmin
	// Assistant is the model provider's owner (app/serve.go passes the
	// *assistant.Service): the /assistant page. Nil: it answers 503.
	Assistant AssistantProvider
	// ToolStats is the assistant's record of tool calls (app/parts.go
	// passes its *assistant.Conversations): each tool's calls and error
	// rate over 30 days on /modules/{name}. Nil: the page shows neither.
	ToolStats ToolStats
	// Retention is the assistant's transcript retention job (app/parts.go
	// passes its *assistant.Retention): the next run and what it deletes
	// on /assistant. Nil: the card says the job is not running.
	Retention AssistantRetention
	// Conversations is the assistant's conversation log (app/parts.go
	// passes its *assistant.Conversations): /assistant/conversations and
	// each conversation's page. Nil: they answer 503.
	Conversations ConversationLog
	// Usage is the assistant's usage records (app/parts.go passes its
	// *assistant.Conversations): /assistant/usage and the assistant's
	// counters on /metrics. Nil: the page answers 503 and /metrics has
	// no assistant counters.
	Usage AssistantUsage
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and
	// X-Forwarded-Proto are believed; see trustedProxies.clientIP for the
	// rule. Empty (the default): the direct peer is the client and both
	// headers are ignored, so a spoofed header cannot dodge the sign-in
	// budget or forge an audit address.
	TrustedProxies []netip.Prefix
	// AllowedHosts are the Host header values the server answers to
	// ("kimi.example.org", "127.0.0.1:8080"; compared case-insensitively, a
	// value without a port also matches it with :80 or :443). Any other Host
	// is refused with 421 before routing, so a DNS-rebinding page cannot
	// reach the sign-in form through a victim's browser; the /healthz and
	// /readyz probes are exempt. Empty: every Host is accepted (tests;
	// app/serve.go always sets it).
	AllowedHosts []string
	// Static overrides the embedded web/static files (tests); nil = embedded.
	Static fs.FS
	// LoginBurst and LoginEvery tune the per-client limit on sign-in and
	// set-up attempts: a burst of LoginBurst, then one more every LoginEvery.
	// Defaults: 10 and 30s.
	LoginBurst int
	LoginEvery time.Duration
	// UserBurst and UserEvery tune the per-username limit on sign-in and
	// password-change attempts, from all addresses together. Defaults: 20
	// and 30s.
	UserBurst int
	UserEvery time.Duration
}

// Server is the admin UI. Create it with New; serve Handler; call Close.
type Server struct {
	opts        Options
	log         *slog.Logger
	echo        *echo.Echo
	assets      *assetSet
	pageAssets  templates.Assets // the layout's asset URLs, fixed at start-up
	limiter     *limiter         // per client address (clientKey)
	userLimiter *limiter         // per account (spendAttempt)
	writeLog    *ratelog.Limiter // refused writes: a line per cause a minute
	devices     deviceKeys       // the device-cookie key (device.go)
	proxies     trustedProxies
	hosts       map[string]bool // AllowedHosts, lower-cased; nil: any
	metrics     *metrics
	secure      bool // cookies carry Secure regardless of the request
	origin      *http.CrossOriginProtection
	publicPath  map[string]bool
	headers     []headerValue
	status      statusCache
	worldtree   worldtreeNav
	moduleForms sync.Map    // module name → its settings form's fields before a document fills them (guild_show.go)
	held        heldUploads // the files of refused task forms (tasks_held.go)
	// pending is the navigation's pending-proposal count; decisions the
	// messages of the last decisions (proposals.go).
	pending          pendingCache
	decisions        decisionResults
	unwatchProposals func()
	// resultSubs are /results' subscriptions, read once per change
	// (results.go); unwatchResults ends their watch.
	resultSubs resultsCache
	// guildCards are the guild pages' cards as stored documents render
	// them (guild_cards.go).
	guildCards guildCards
	// proposalLists are the inbox's renders per filter (proposals_kept.go).
	proposalLists proposalLists
	// proposalDetails are the proposal pages' regions (proposals_kept.go).
	proposalDetails proposalDetails
	// usageBody is /assistant/usage's rendered body, kept while the
	// report and the guilds' names are those it was rendered from.
	usageBody usageBodyCache
	// convRegions are the conversation list's recent renders.
	convRegions conversationRegions
	// transcripts is Show transcripts as last read or saved (one of the
	// show constants; assistant_conversations.go).
	transcripts    atomic.Int32
	transcriptsMu  sync.Mutex // a read of the store or a save of it
	resultsChanged signal.Watchers
	unwatchResults func()

	overload *ratelog.Limiter // the overload 503s' WARN summary (overloadAnswered)

	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}

	// streams is closed by CloseStreams: every open event stream ends.
	streams     chan struct{}
	streamsOnce sync.Once
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
	if opts.UserBurst <= 0 {
		opts.UserBurst = 20
	}
	if opts.UserEvery <= 0 {
		opts.UserEvery = 30 * time.Second
	}
	s := &Server{
		opts:        opts,
		log:         opts.Logger,
		limiter:     newLimiter(opts.LoginEvery, opts.LoginBurst, maxBuckets),
		writeLog:    ratelog.New(time.Minute, nil),
		overload:    ratelog.New(overloadEvery, nil),
		userLimiter: newLimiter(opts.UserEvery, opts.UserBurst, maxBuckets),
		proxies:     trustedProxies(opts.TrustedProxies),
		origin:      http.NewCrossOriginProtection(),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
		streams:     make(chan struct{}),
	}
	if len(opts.AllowedHosts) > 0 {
		s.hosts = map[string]bool{}
		for _, h := range opts.AllowedHosts {
			if h == "" || strings.ContainsAny(h, "/ ") {
				return nil, fmt.Errorf("admin: new: allowed host %q is not a host[:port]", h)
			}
			s.hosts[strings.ToLower(h)] = true
		}
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
	if opts.Host != nil || opts.Demo != nil || opts.Proposals != nil || opts.Results != nil || opts.Conversations != nil { // the module pages', /demo's, /proposals', /results' and the conversations' live regions
		s.pageAssets.Live = assets.url("live.js")
	}
	s.metrics = newMetrics(opts.Store, discordMetrics(opts.Discord))
	if opts.Usage != nil {
		s.metrics.reg.MustRegister(assistantCollector{opts.Usage})
	}
	if opts.Host != nil {
		s.metrics.reg.MustRegister(moduleGoroutines{opts.Host})
	}
	s.echo = s.buildEcho()
	s.watchProposals()
	s.watchResults()
	go s.housekeeping()
	return s, nil
}

// Handler returns the whole admin HTTP handler: pages, probes, metrics and
// static files.
func (s *Server) Handler() http.Handler { return s.echo }

// CloseStreams ends every open event stream (GET /modules/events) and
// makes new ones end at once. http.Server.Shutdown waits for active
// requests, and a stream never finishes by itself: register this with
// srv.RegisterOnShutdown. It is safe to call more than once.
func (s *Server) CloseStreams() {
	s.streamsOnce.Do(func() { close(s.streams) })
}

// Close ends the event streams and stops the background goroutine. It is
// safe to call more than once.
func (s *Server) Close() {
	s.CloseStreams()
	s.held.stop()
	s.closeOnce.Do(func() {
		if s.unwatchProposals != nil {
			s.unwatchProposals()
		}
		if s.unwatchResults != nil {
			s.unwatchResults()
		}
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
			s.userLimiter.gc(now, 15*time.Minute)
			if purge++; purge%60 == 1 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if n, err := s.opts.Auth.PurgeExpired(ctx); err != nil {
					s.log.Warn("purge expired sessions", "err", err)
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
