package discord

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/internal/signal"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Options configures New.
type Options struct {
	// Store holds the token (a secret setting), the intents and the
	// command-sync state.
	Store *store.Store
	// Guilds is the guild configuration (activation, trust).
	Guilds GuildConfig
	// Bus receives the normalized discord.* events.
	Bus Publisher
	// Logger is the root logger (the bot logs with component=discord).
	Logger *slog.Logger
	// Token, when set, is the deployment's token (app/serve passes
	// config's KIMI_DISCORD_TOKEN(_FILE), already resolved) and overrides
	// the stored one; TokenSource names it ("KIMI_DISCORD_TOKEN", ...).
	// Without it the bot reads the two variables itself through Getenv.
	Token       string
	TokenSource string
	// Getenv reads KIMI_DISCORD_TOKEN(_FILE) (nil: os.Getenv), which
	// override the stored token.
	Getenv func(string) string
	// ReadFile reads KIMI_DISCORD_TOKEN_FILE (nil: os.ReadFile).
	ReadFile func(string) ([]byte, error)
	// Transport and Dialer replace the network (fakediscord in tests and
	// demo mode); nil means the real Discord.
	Transport http.RoundTripper
	Dialer    *websocket.Dialer
	// Cache sizes Kimi's own gateway caches.
	Cache CacheSizes
}

// CapabilitySetter is the host's capability advertisement; *host.Host
// implements it. Attach picks it up from the host.
type CapabilitySetter interface {
	SetCapabilities(ctx context.Context, caps sdk.Capabilities) error
}

var _ CapabilitySetter = (*host.Host)(nil)

// CommandGate is the host's word on whether its modules' commands are
// registered; *host.Host implements it. While it says no, the syncs of
// READY, of a GUILD_CREATE and of a change are held back — the modules
// start after the first READY, so the set would lack theirs, and a bulk
// overwrite with it deletes their commands on Discord (new ids, lost
// per-command permissions, the daily create limit) — and the host calls
// CommandsChanged once they are registered.
type CommandGate interface {
	CommandsRegistered() bool
}

var _ CommandGate = (*host.Host)(nil)

// Bot is Kimi's Discord connection: Start connects in the background and
// keeps the connection (Kimi's reconnect loop, reconnect.go); Status
// reports it; Close ends it.
type Bot struct {
	opts Options
	// quickStop: see QuickStop (set before Start).
	quickStop bool
	log       *slog.Logger
	cache     *Cache
	ing       *ingest
	act       *actions
	ix        *interactions
	caps      CapabilitySetter // from Attach; nil: capabilities not advertised
	watch     signal.Watchers
	// fetches are the members looked up in the background (directory.go).
	fetches memberFetches

	backoffBase  time.Duration // backoffBase; tests shorten it
	clock        clock         // the reconnect loop's time (realClock; tests drive it)
	invalidated  atomic.Int32  // invalidNone, or what the last Invalid Session asked for
	openTimeout  time.Duration // openTimeout; tests shorten it
	guildArrival time.Duration // guildArrivalWait; tests shorten it
	hotOff       bool          // leave the hot dispatches to discordgo (hot.go; tests compare the two)
	wake         chan wakeup   // Reconnect
	disconnected chan struct{} // the current session's Disconnect
	ready        atomic.Bool   // READY or RESUMED seen on the current connection
	startOnce    sync.Once
	closeOnce    sync.Once
	cancel       context.CancelFunc
	done         chan struct{}
	stopREST     context.Context    // ends every request of the bot's sessions (Close)
	endREST      context.CancelFunc // ends stopREST

	mu          sync.Mutex
	opening     net.Conn           // the connection Open is dialing or reading (abortOpen closes it)
	sess        *discordgo.Session // connected session, nil when none
	current     *discordgo.Session // the session being opened or open
	intents     Intents            // those of the current session
	state       State
	reason      string
	fatal       *FatalClose
	retryAt     time.Time
	lastErr     string
	tokenSource string
	since       time.Time
	reconnects  int
	limits      int
	recent      []RateLimitEvent // newest last, at most recentLimits
	guilds      map[string]*GuildStatus
	botName     string
	shards      int
	startLimit  SessionStartLimit
	budget      *StartLimitStop // the loop is stopped for the session start budget
	identifies  int             // Identifies written since start
	botID       atomic.Uint64
	appID       atomic.Uint64
	ownerID     atomic.Uint64
	dropped     atomic.Int64 // gateway frames the filter replaced (frames.go)
}

var (
	_ host.Discord         = (*Bot)(nil)
	_ host.CommandsReadier = (*Bot)(nil)
	_ sessionSource        = (*Bot)(nil)
)

// loggerOnce bridges discordgo's package-global Logger to slog once per
// process, with the first bot's logger (component=discordgo): discordgo
// has no per-session logger.
var loggerOnce sync.Once

func bridgeLogger(log *slog.Logger) {
	loggerOnce.Do(func() {
		l := log.With("component", "discordgo")
		discordgo.Logger = func(msgL, _ int, format string, a ...any) {
			level := slog.LevelDebug
			switch msgL {
			case discordgo.LogError:
				level = slog.LevelError
			case discordgo.LogWarning:
				level = slog.LevelWarn
			case discordgo.LogInformational:
				level = slog.LevelInfo
			}
			l.Log(context.Background(), level, fmt.Sprintf(format, a...))
		}
	})
}

// New returns an unconnected bot.
func New(opts Options) (*Bot, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	b := &Bot{opts: opts, log: opts.Logger.With("component", "discord"),
		backoffBase: backoffBase, clock: realClock{}, openTimeout: openTimeout, guildArrival: guildArrivalWait, wake: make(chan wakeup, 1), disconnected: make(chan struct{}, 1),
		done: make(chan struct{}), state: StateNotConfigured, guilds: map[string]*GuildStatus{}}
	b.stopREST, b.endREST = context.WithCancel(context.Background())
	bridgeLogger(opts.Logger)
	b.cache = NewCache(opts.Cache)
	b.ing = newIngest(b.log, opts.Bus, opts.Guilds, b.cache, b)
	b.act = newActions(b.log, b, opts.Guilds, b.cache)
	b.ix = newInteractions(b.log, b, opts.Guilds, opts.Store)
	return b, nil
}

// Attach sets the module host interactions are dispatched to; call it
// before Start. A host that advertises capabilities (*host.Host) gets the
// Discord capabilities from ApplyCapabilities.
func (b *Bot) Attach(h Host) {
	b.ix.attach(h)
	if cs, ok := h.(CapabilitySetter); ok {
		b.caps = cs
	}
}

// Start connects in the background and keeps the connection until Close.
// Without a token the state is not configured until Reconnect (after a
// token is saved). Call it after the host started its modules, so the
// first READY's command sync includes their commands.
func (b *Bot) Start(ctx context.Context) {
	b.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		b.cancel = cancel
		go b.run(ctx)
	})
}

// Close ends the connection and the reconnect loop and stops pending
// command syncs. It is safe to call more than once, and without Start.
func (b *Bot) Close() error {
	b.closeOnce.Do(func() {
		started := false
		b.startOnce.Do(func() {}) // a Start after Close does nothing
		if b.cancel != nil {
			started = true
			b.cancel()
		}
		b.endREST() // a request in flight (Open's GET /gateway has no ctx) ends now
		if started {
			<-b.done
		}
		b.ix.close()
		b.setStopped("the bot was closed", nil)
	})
	return nil
}

func (b *Bot) session() (*discordgo.Session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sess == nil {
		return nil, ErrNotConnected
	}
	return b.sess, nil
}

func (b *Bot) self() (botID, appID uint64) { return b.botID.Load(), b.appID.Load() }

// Identity is the bot user's id and its display name (the global name,
// else the username; "Kimi" before READY): the assistant's system prompt
// names it.
func (b *Bot) Identity() (uint64, string) {
	id := b.botID.Load()
	name := "Kimi"
	if s, err := b.session(); err == nil && s.State != nil {
		s.State.RLock()
		if u := s.State.User; u != nil {
			name = cmp.Or(u.GlobalName, u.Username, name)
		}
		s.State.RUnlock()
	}
	return id, name
}

// ownerConfig is the deployment's configured bot owner; *guildcfg.Service
// implements it.
type ownerConfig interface {
	ConfiguredOwner() uint64
}

// Owner is the bot's owner as the assistant's gates and limits know it:
// the deployment's configured owner (KIMI_OWNER_USER_ID) when set, else
// the application's owner (OwnerID; 0 before it is read).
func (b *Bot) Owner() uint64 {
	if c, ok := b.opts.Guilds.(ownerConfig); ok {
		if id := c.ConfiguredOwner(); id != 0 {
			return id
		}
	}
	return b.OwnerID()
}

// OwnerID is the application owner's user id (a team's owner for a team
// application), read from applications/@me at connect; 0 before.
// guildcfg.IsOwner can take it from here.
func (b *Bot) OwnerID() uint64 { return b.ownerID.Load() }

// Actions returns module's Discord actions (host.Discord).
func (b *Bot) Actions(module string) sdk.DiscordActions { return b.act.forModule(module) }

// Tier resolves a member's trust tier (host.Discord).
func (b *Bot) Tier(ctx context.Context, guildID, userID uint64) (sdk.TrustTier, error) {
	return b.act.tier(ctx, guildID, userID)
}

// CommandsChanged re-syncs the commands, debounced (host.Discord).
func (b *Bot) CommandsChanged() { b.ix.commandsChanged() }

// CommandsReady syncs the commands now, without the debounce: the host's
// start registered them all (host's CommandsReadier).
func (b *Bot) CommandsReady() { b.ix.commandsReady() }

// SyncGuildCommands pushes one guild's commands now (host.Discord).
func (b *Bot) SyncGuildCommands(ctx context.Context, guildID uint64) error {
	return b.ix.syncGuild(ctx, guildID)
}

// Settings reads the stored Discord settings (zero without a store).
func (b *Bot) settings(ctx context.Context) (settings.Discord, error) {
	if b.opts.Store == nil {
		return settings.Discord{}, nil
	}
	return settings.LoadDiscord(ctx, b.opts.Store)
}

// currentToken is the token to connect with: the environment's override,
// else the stored one; source names where it came from.
func (b *Bot) currentToken(ctx context.Context) (token, source string, err error) {
	if b.opts.Token != "" {
		src := b.opts.TokenSource
		if src == "" {
			src = EnvToken
		}
		return settings.NormalizeDiscordToken(b.opts.Token), src, nil
	}
	getenv := b.opts.Getenv
	if getenv == nil {
		getenv = osGetenv
	}
	tok, src, err := EnvTokenValue(getenv, b.opts.ReadFile)
	if err != nil || tok != "" {
		return tok, src, err
	}
	st, err := b.settings(ctx)
	if err != nil {
		return "", "", err
	}
	if st.Token == "" {
		return "", TokenFromNowhere, nil
	}
	return st.Token, TokenFromStore, nil
}

// TokenSource is where the token comes from now (EnvToken, EnvTokenFile,
// TokenFromStore or "" for none).
func (b *Bot) TokenSource(ctx context.Context) (string, error) {
	_, src, err := b.currentToken(ctx)
	return src, err
}

// loadIntents reads the operator's intents.
func (b *Bot) loadIntents(ctx context.Context) (Intents, error) {
	st, err := b.settings(ctx)
	if err != nil {
		return Intents{}, err
	}
	in := Intents{Members: st.Members, MessageContent: st.MessageContent}
	if b.opts.Store != nil {
		if beh, err := settings.LoadAssistantBehaviour(ctx, b.opts.Store); err != nil {
			b.log.Warn("could not read the assistant's DM setting; DMs stay off", "err", err)
		} else {
			in.DirectMessages = beh.WantsDMs()
		}
	}
	return in, nil
}

// ApplyCapabilities advertises the capabilities of the stored intents to
// the attached host (host.SetCapabilities: modules whose activation
// capabilities are no longer covered are soft-disabled, newly covered ones
// start). Without an attached host it does nothing.
func (b *Bot) ApplyCapabilities(ctx context.Context) error {
	if b.caps == nil {
		return nil
	}
	in, err := b.loadIntents(ctx)
	if err != nil {
		return fmt.Errorf("discord: apply capabilities: %w", err)
	}
	return b.caps.SetCapabilities(ctx, in.Capabilities())
}

// requestedIntents are the intents of the current session.
func (b *Bot) requestedIntents() Intents {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.intents
}

func (b *Bot) baseTransport() http.RoundTripper {
	if b.opts.Transport != nil {
		return b.opts.Transport
	}
	return http.DefaultTransport
}

// newSession builds a session configured as Kimi runs it, its handlers
// added before Open.
func (b *Bot) newSession(token string, in Intents) *discordgo.Session {
	s, _ := discordgo.New("Bot " + token) // New fails only on its deprecated login form
	tr := newTransport(b.baseTransport(), b.onRateLimit).(*transport)
	tr.stop = b.stopREST
	s.Client = &http.Client{Transport: tr}
	base := b.opts.Dialer
	if base == nil {
		base = &websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 45 * time.Second}
	}
	hooks := frameHooks{dropped: b.frameDropped, invalidated: b.onInvalidated, identified: b.onIdentify}
	if !b.hotOff {
		hooks.hot = b.hotSink(s)
	}
	s.Dialer = filterDialer(b.trackingDialer(base), hooks)
	s.SyncEvents = true
	s.ShouldReconnectOnError = false
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	s.LogLevel = discordgo.LogWarning
	s.Identify.Intents = in.Gateway()
	s.StateEnabled = true
	st := discordgo.NewState()
	st.TrackPresences = false
	st.TrackMembers = false // Kimi keeps its own bounded member cache
	st.TrackVoice = false
	st.TrackEmojis = false
	st.TrackStickers = false
	st.TrackThreadMembers = false
	s.State = st
	// The hot dispatches (hot.go) do not reach these handlers: takeHot
	// calls the ingest's and onAssistantMessage itself, in this order. A
	// new handler of a hot type goes there too.
	for _, h := range b.ing.handlers() {
		s.AddHandler(h)
	}
	for _, h := range b.ix.handlers() {
		s.AddHandler(h)
	}
	s.AddHandler(b.onAssistantMessage)
	s.AddHandler(b.onReady)
	s.AddHandler(b.onResumed)
	s.AddHandler(b.onDisconnect)
	s.AddHandler(b.onGuildCreate)
	s.AddHandler(b.onGuildDelete)
	s.AddHandler(b.onRateLimitEvent)
	for _, h := range b.dirEvents() {
		s.AddHandler(h)
	}
	b.mu.Lock()
	b.current, b.intents = s, in
	b.guilds = map[string]*GuildStatus{}
	b.mu.Unlock()
	return s
}

// closeSession closes sess (its Disconnect is then ignored).
func (b *Bot) closeSession(sess *discordgo.Session) {
	b.forgetSession(sess)
	_ = sess.Close()
	b.drainDisconnect()
}

// forgetSession makes sess no longer the bot's: its events and its
// Disconnect are ignored from now on.
func (b *Bot) forgetSession(sess *discordgo.Session) {
	b.mu.Lock()
	if b.current == sess {
		b.current = nil
	}
	if b.sess == sess {
		b.sess = nil
		b.cache.dir.epoch.Add(1) // the directory reads the session
	}
	b.mu.Unlock()
}

// QuickStop makes Close not wait for discordgo's gateway close, which
// sleeps a fixed second after sending its close frame: the session is
// forgotten at once (its events and Disconnect ignored) and discordgo's
// close finishes in the background. For test harnesses (kimitest), whose
// appliances stop by the dozen; call it before Start.
func (b *Bot) QuickStop() { b.quickStop = true }

// closeOnStop is closeSession when the bot stops (QuickStop: without
// waiting for discordgo's close).
func (b *Bot) closeOnStop(sess *discordgo.Session) {
	if !b.quickStop {
		b.closeSession(sess)
		return
	}
	b.forgetSession(sess)
	go func() { _ = sess.Close() }()
}

// connected records a successful Open and, after an identify, reads the
// application (owner); gateway/bot (shards, session start limit) was read
// before the identify (startAllowed).
func (b *Bot) connected(ctx context.Context, sess *discordgo.Session) {
	defer b.watch.Notify()
	b.mu.Lock()
	resumed := !b.since.IsZero() && b.state == StateResuming
	b.sess = sess
	b.cache.dir.epoch.Add(1) // the directory reads the session: a resume sends no READY
	b.state, b.reason, b.fatal, b.retryAt, b.lastErr, b.budget = StateConnected, "", nil, time.Time{}, "", nil
	if !resumed {
		b.since = time.Now()
	}
	b.mu.Unlock()
	if resumed {
		b.log.Info("gateway session resumed")
		return
	}
	b.log.Info("connected to the gateway", "intents", int(sess.Identify.Intents))
	ictx, cancel := context.WithTimeout(ctx, infoTimeout)
	defer cancel()
	if app, err := fetchApplication(ictx, sess); err != nil {
		b.log.Warn("reading the application failed", "err", err)
	} else {
		if id, err := strconv.ParseUint(app.ID, 10, 64); err == nil {
			b.appID.Store(id)
		}
		owner := ""
		if app.Team != nil {
			owner = app.Team.OwnerID
		} else if app.Owner != nil {
			owner = app.Owner.ID
		}
		if id, err := strconv.ParseUint(owner, 10, 64); err == nil {
			b.ownerID.Store(id)
		}
	}
}

func (b *Bot) isCurrent(s *discordgo.Session) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.current == s
}

func (b *Bot) onReady(s *discordgo.Session, r *discordgo.Ready) {
	defer b.watch.Notify()
	if !b.isCurrent(s) {
		return
	}
	// ready is set once the guild map is READY's (below): AwaitReady reads
	// both, and must never see ready with the previous session's guilds.
	defer b.ready.Store(true)
	if r.User != nil {
		if id, err := strconv.ParseUint(r.User.ID, 10, 64); err == nil {
			b.botID.Store(id)
		}
	}
	if r.Application != nil {
		if id, err := strconv.ParseUint(r.Application.ID, 10, 64); err == nil {
			b.appID.Store(id)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.User != nil {
		b.botName = r.User.Username
	}
	b.guilds = map[string]*GuildStatus{}
	for _, g := range r.Guilds {
		b.guilds[g.ID] = &GuildStatus{ID: g.ID, Name: g.Name, Unavailable: g.Unavailable}
	}
}

func (b *Bot) onResumed(s *discordgo.Session, _ *discordgo.Resumed) {
	if b.isCurrent(s) {
		b.ready.Store(true)
	}
}

// onDisconnect hears the current session's Disconnect (discordgo emits it
// from Close, also when its read loop or heartbeat fails); the loop
// decides what follows.
func (b *Bot) onDisconnect(s *discordgo.Session, _ *discordgo.Disconnect) {
	if !b.isCurrent(s) {
		return
	}
	select {
	case b.disconnected <- struct{}{}:
	default:
	}
}

func (b *Bot) onGuildCreate(s *discordgo.Session, g *discordgo.GuildCreate) {
	defer b.watch.Notify()
	if !b.isCurrent(s) || g.Guild == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.guilds[g.ID] = &GuildStatus{ID: g.ID, Name: g.Name, Members: g.MemberCount, Unavailable: g.Unavailable}
}

func (b *Bot) onGuildDelete(s *discordgo.Session, g *discordgo.GuildDelete) {
	defer b.watch.Notify()
	if !b.isCurrent(s) || g.Guild == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if g.Unavailable {
		if gs := b.guilds[g.ID]; gs != nil {
			gs.Unavailable = true
		}
		return
	}
	delete(b.guilds, g.ID) // removed from the guild
}

// onRateLimit hears every rate limit the transport meets.
func (b *Bot) onRateLimit(ev RateLimitEvent) {
	defer b.watch.Notify()
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.limits++
	b.recent = append(b.recent, ev)
	if len(b.recent) > recentLimits {
		b.recent = slices.Delete(b.recent, 0, len(b.recent)-recentLimits)
	}
}

// onRateLimitEvent hears discordgo's own RateLimit event (emitted only
// when discordgo sleeps on a 429, which Kimi turns off; kept so a change
// there still shows).
func (b *Bot) onRateLimitEvent(_ *discordgo.Session, rl *discordgo.RateLimit) {
	ev := RateLimitEvent{Route: rl.URL, At: time.Now()}
	if rl.TooManyRequests != nil {
		ev.RetryAfter = rl.TooManyRequests.RetryAfter
	}
	b.onRateLimit(ev)
}

func (b *Bot) setState(st State, reason string, retryAt time.Time) {
	defer b.watch.Notify()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.reason, b.retryAt = st, reason, retryAt
	if st != StateStopped {
		b.fatal, b.budget = nil, nil
	}
}

func (b *Bot) setStopped(reason string, fc *FatalClose) {
	defer b.watch.Notify()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.reason, b.fatal, b.retryAt, b.sess, b.current, b.budget = StateStopped, reason, fc, time.Time{}, nil, nil, nil
	b.cache.dir.epoch.Add(1)
}

// Status returns a snapshot of the connection.
func (b *Bot) Status() Status {
	b.mu.Lock()
	st := Status{
		State: b.state, Reason: b.reason, RetryAt: b.retryAt, TokenSource: b.tokenSource, Intents: b.intents,
		Cache: b.opts.Cache, BotName: b.botName, ConnectedSince: b.since, Reconnects: b.reconnects,
		RateLimits: b.limits, Shards: b.shards, SessionStartLimit: b.startLimit, FramesDropped: b.dropped.Load(),
		Identifies: b.identifies,
	}
	if b.budget != nil {
		bs := *b.budget
		st.StartLimitStop = &bs
	}
	if b.fatal != nil {
		fc := *b.fatal
		fc.DisallowedIntents = slices.Clone(fc.DisallowedIntents)
		st.Fatal = &fc
	}
	if st.State == StateReconnecting && b.lastErr != "" {
		st.Reason = b.lastErr
	}
	for i := len(b.recent) - 1; i >= 0; i-- {
		st.RecentRateLimits = append(st.RecentRateLimits, b.recent[i])
	}
	for _, g := range b.guilds {
		st.Guilds = append(st.Guilds, *g)
	}
	sess := b.sess
	b.mu.Unlock()
	if sess != nil {
		// discordgo writes LastHeartbeatAck under the session's lock.
		// LastHeartbeatSent is written under its unexported wsMutex and
		// cannot be read without a data race, so the gateway latency
		// (HeartbeatLatency) is not read; Kimi times the heartbeat
		// itself only through the ACK's age.
		sess.RLock()
		st.LastHeartbeatAck = sess.LastHeartbeatAck
		sess.RUnlock()
	}
	if id := b.botID.Load(); id != 0 {
		st.BotID = strconv.FormatUint(id, 10)
	}
	if id := b.appID.Load(); id != 0 {
		st.AppID = strconv.FormatUint(id, 10)
	}
	if id := b.ownerID.Load(); id != 0 {
		st.OwnerID = strconv.FormatUint(id, 10)
	}
	for i := range st.Guilds {
		if id, err := strconv.ParseUint(st.Guilds[i].ID, 10, 64); err == nil && b.opts.Guilds != nil {
			st.Guilds[i].Active = b.opts.Guilds.Active(id)
		}
	}
	sortGuilds(st.Guilds)
	if st.State != StateConnected {
		st.ConnectedSince = time.Time{}
	}
	return st
}
