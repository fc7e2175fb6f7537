package fakediscord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
	"github.com/kimiapp/kimi/app/internal/signal"
)

// Options configure a fake. The zero value is usable: every field has a default.
type Options struct {
	// Token is the bot token; REST and Identify accept only "Bot "+Token (REST) or either form
	// (Identify), as Discord does. Default "test-token".
	Token string
	// AppID and BotID are the application's and its bot user's ids. Defaults 900000000000000001
	// and 900000000000000002.
	AppID, BotID string
	// BotName is the bot user's name. Default "kimi".
	BotName string
	// OwnerID is the application owner's user id (applications/@me). Default 900000000000000003.
	OwnerID string
	// AllowedIntents are the privileged intents enabled for the application in the developer
	// portal; an Identify asking for another privileged intent is closed with 4014. Default: all
	// three (members, presences, message content).
	AllowedIntents *discordgo.Intent
	// HeartbeatInterval is sent in Hello. Default 41.25 s.
	HeartbeatInterval time.Duration
	// RouteLimit and RouteWindow are every route bucket's default limit (requests per window,
	// per major parameter: channel, guild or webhook). Defaults 50 per second; SetRateLimit
	// changes one route.
	RouteLimit  int
	RouteWindow time.Duration
	// GlobalLimit is the global limit in requests per second across every route (0: none).
	GlobalLimit int
	// CompressMin, for a session whose Identify asked for payload compression (compress: true,
	// discordgo's default), is the size from which a dispatch frame is zlib-compressed: smaller
	// ones go as text, as Discord compresses only some payloads, the large ones. 0 compresses
	// every frame (each with a fresh compressor, about 1 ms apiece: a composed benchmark sets it
	// so the fake's compression is not what it measures).
	CompressMin int
	// MaxRecorded bounds the request recorder (the oldest are dropped); 0 keeps every request,
	// as tests want. A long-running fake (demo mode) sets it.
	MaxRecorded int
	// InteractionDeadline, when set, is how long after an interaction its first callback is
	// accepted (Discord's is DiscordInteractionDeadline, 3 s): later, the callback answers 404
	// 10062 as Discord does. 0 (the default) accepts a callback at any time, so a slow machine
	// cannot fail a test; a test of the deadline sets it and moves Now.
	InteractionDeadline time.Duration
	// Now is the fake's clock (rate-limit windows, snowflakes, timestamps). Default time.Now.
	Now func() time.Time
}

// Server is one fake Discord. Its methods are safe for concurrent use.
type Server struct {
	opts Options
	ln   net.Listener
	srv  *http.Server
	url  string
	mux  *http.ServeMux

	mu       sync.Mutex
	lastID   uint64
	bot      *discordgo.User
	app      *discordgo.Application
	users    map[string]*discordgo.User
	guilds   map[string]*guild
	gorder   []string
	channels map[string]*channel
	invites  map[string]*discordgo.Invite
	global   []*discordgo.ApplicationCommand
	inters   map[string]*Interaction // by id
	byToken  map[string]*Interaction // by token
	requests []Request
	faults   []*Fault
	buckets  map[string]*bucket
	limits   map[string]routeLimit
	gwin     globalWindow
	gw       gatewayState
	side     sideState // dm.go, threads.go
	watch    signal.Watchers
	// onCreate is OnMessageCreate's hook (nil: none).
	onCreate func(*discordgo.Message)
}

// Request is one REST request the fake received, as recorded.
type Request struct {
	// Method and Path are as sent (Path with its /api/vN prefix); Route is the route without the
	// version prefix, e.g. "POST /channels/{channel}/messages" ("" for an unknown route).
	Method, Path, Route string
	// Version is the API version of the path ("9" or "10").
	Version string
	Query   url.Values
	Header  http.Header
	Body    []byte
	// Status is the status the fake answered with.
	Status int
}

// OnMessageCreate sets a hook (nil removes it) called once for every message a REST POST
// /channels/{channel}/messages created (a guild channel's, a thread's or a DM's), with a copy of
// the message, after the fake stored it (and dispatched MESSAGE_CREATE) and before it answers the
// request: the client's answer waits for the hook to return. It is called outside the fake's
// lock, concurrently for concurrent requests, so it may be slow (a test build records what the
// fake received to disk there, or delays the answer); it must not block forever. A request that
// created nothing (refused, or a fault answered before handling) does not call it; a fault
// answered after handling (Fault.AfterHandling) does, before its error answer.
func (s *Server) OnMessageCreate(fn func(*discordgo.Message)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onCreate = fn
}

// New starts a fake on a loopback port; Close stops it.
func New(opts Options) *Server {
	if opts.Token == "" {
		opts.Token = "test-token"
	}
	if opts.AppID == "" {
		opts.AppID = "900000000000000001"
	}
	if opts.BotID == "" {
		opts.BotID = "900000000000000002"
	}
	if opts.OwnerID == "" {
		opts.OwnerID = "900000000000000003"
	}
	if opts.BotName == "" {
		opts.BotName = "kimi"
	}
	if opts.AllowedIntents == nil {
		all := discordgo.IntentGuildMembers | discordgo.IntentGuildPresences | discordgo.IntentMessageContent
		opts.AllowedIntents = &all
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 41250 * time.Millisecond
	}
	if opts.RouteLimit <= 0 {
		opts.RouteLimit = 50
	}
	if opts.RouteWindow <= 0 {
		opts.RouteWindow = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{
		opts:     opts,
		users:    map[string]*discordgo.User{},
		guilds:   map[string]*guild{},
		channels: map[string]*channel{},
		invites:  map[string]*discordgo.Invite{},
		inters:   map[string]*Interaction{},
		byToken:  map[string]*Interaction{},
		buckets:  map[string]*bucket{},
		limits:   map[string]routeLimit{},
	}
	s.bot = &discordgo.User{ID: opts.BotID, Username: opts.BotName, Bot: true, Discriminator: "0"}
	s.users[s.bot.ID] = s.bot
	owner := &discordgo.User{ID: opts.OwnerID, Username: "owner", Discriminator: "0"}
	s.users[owner.ID] = owner
	s.app = &discordgo.Application{ID: opts.AppID, Name: opts.BotName, Owner: owner, BotPublic: false,
		Flags: appFlags(*opts.AllowedIntents)}
	s.gw.sessions = map[string]*gwSession{}
	s.mux = http.NewServeMux()
	s.routes()
	s.mux.HandleFunc("/gw", s.serveGateway)
	s.mux.HandleFunc("/gw/", s.serveGateway)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("fakediscord: listen on a loopback port: " + err.Error()) // as httptest.NewServer does
	}
	s.ln, s.url = ln, "http://"+ln.Addr().String()
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s
}

// Application flags for the privileged intents enabled in the developer portal (the "limited"
// flags of an application in fewer than 100 guilds).
const (
	FlagGatewayPresenceLimited       = 1 << 13
	FlagGatewayGuildMembersLimited   = 1 << 15
	FlagGatewayMessageContentLimited = 1 << 19
)

func appFlags(allowed discordgo.Intent) int {
	f := 0
	if allowed&discordgo.IntentGuildPresences != 0 {
		f |= FlagGatewayPresenceLimited
	}
	if allowed&discordgo.IntentGuildMembers != 0 {
		f |= FlagGatewayGuildMembersLimited
	}
	if allowed&discordgo.IntentMessageContent != 0 {
		f |= FlagGatewayMessageContentLimited
	}
	return f
}

// Close stops the server and drops every gateway connection.
func (s *Server) Close() {
	s.mu.Lock()
	conns := s.allConns()
	s.mu.Unlock()
	for _, c := range conns {
		c.kill()
	}
	s.watch.Close()
	_ = s.srv.Close() // the listener and every HTTP connection (websockets were hijacked: killed above)
}

// URL is the fake's base URL (http://127.0.0.1:port).
func (s *Server) URL() string { return s.url }

// GatewayURL is the websocket URL GET /gateway answers.
func (s *Server) GatewayURL() string { return "ws" + strings.TrimPrefix(s.url, "http") + "/gw" }

// Token is the bot token the fake accepts (without the "Bot " prefix).
func (s *Server) Token() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Token
}

// AppID is the application's id.
func (s *Server) AppID() string { return s.opts.AppID }

// BotID is the bot user's id.
func (s *Server) BotID() string { return s.opts.BotID }

// Transport is an http.RoundTripper that sends every request, whatever its host (discord.com,
// cdn.discordapp.com, ...), to the fake.
func (s *Server) Transport() http.RoundTripper { return rewriteTransport{target: s.url} }

type rewriteTransport struct{ target string }

func (t rewriteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	u, err := url.Parse(t.target)
	if err != nil {
		return nil, fmt.Errorf("fakediscord: parse target: %w", err)
	}
	r2 := r.Clone(r.Context())
	r2.URL.Scheme = u.Scheme
	r2.URL.Host = u.Host
	r2.Host = u.Host
	return http.DefaultTransport.RoundTrip(r2)
}

// Dialer is a websocket dialer that connects to the fake whatever host the URL names.
func (s *Server) Dialer() *websocket.Dialer {
	addr := s.ln.Addr().String()
	return &websocket.Dialer{
		HandshakeTimeout: 10 * time.Second,
		NetDialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
}

// Attach points a discordgo session at the fake: its HTTP client's transport and its websocket
// dialer are replaced; nothing global changes.
func (s *Server) Attach(sess *discordgo.Session) {
	sess.Client = &http.Client{Transport: s.Transport(), Timeout: 20 * time.Second}
	sess.Dialer = s.Dialer()
}

// Session returns a new discordgo session attached to the fake, with the right token and
// SyncEvents on (handlers run in order, as Kimi's adapter runs them).
func (s *Server) Session() *discordgo.Session {
	sess, _ := discordgo.New("Bot " + s.Token()) // New fails only on its deprecated login form
	sess.SyncEvents = true
	s.Attach(sess)
	return sess
}

// Requests returns a copy of every REST request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsTo returns the recorded requests of one route ("POST /channels/{channel}/messages").
func (s *Server) RequestsTo(route string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Route == route {
			out = append(out, r)
		}
	}
	return out
}

// apiError is Discord's JSON error body with its HTTP status.
type apiError struct {
	status  int
	Code    int    `json:"code"`
	Message string `json:"message"`
	Errors  any    `json:"errors,omitempty"`
	retry   *retryBody
}

// MarshalJSON writes Discord's error body; a 429's carries retry_after and global.
func (e *apiError) MarshalJSON() ([]byte, error) {
	if e.retry != nil {
		return json.Marshal(struct {
			Message string `json:"message"`
			*retryBody
		}{e.Message, e.retry})
	}
	type plain apiError
	return json.Marshal((*plain)(e))
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %d %s", e.status, e.Code, e.Message) }

func unknown(code int, what string) *apiError {
	return &apiError{status: http.StatusNotFound, Code: code, Message: "Unknown " + what}
}

// Discord's JSON error codes the fake answers with.
const (
	CodeUnknownChannel      = 10003
	CodeUnknownGuild        = 10004
	CodeUnknownInvite       = 10006
	CodeUnknownMember       = 10007
	CodeUnknownMessage      = 10008
	CodeUnknownRole         = 10011
	CodeUnknownUser         = 10013
	CodeUnknownWebhook      = 10015
	CodeUnknownBan          = 10026
	CodeUnknownInteraction  = 10062
	CodeUnknownCommand      = 10063
	CodeAlreadyAcknowledged = 40060
	CodeEmptyMessage        = 50006
	CodeMissingPermissions  = 50013
	CodeBulkDeleteCount     = 50016
	CodeBulkDeleteTooOld    = 50034
	CodeInvalidFormBody     = 50035
	CodeUnauthorized        = 0
)

var errMissingPermissions = &apiError{status: http.StatusForbidden, Code: CodeMissingPermissions, Message: "Missing Permissions"}

// fieldErrors builds Discord's 50035 body: path is the field path ("content", "embeds.0.title",
// "0.name"), code Discord's error code string.
type fieldErrors map[string]any

func (f fieldErrors) add(path, code, msg string) {
	parts := strings.Split(path, ".")
	m := map[string]any(f)
	for _, p := range parts {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	errs, _ := m["_errors"].([]any)
	m["_errors"] = append(errs, map[string]string{"code": code, "message": msg})
}

func (f fieldErrors) err() *apiError {
	if len(f) == 0 {
		return nil
	}
	return &apiError{status: http.StatusBadRequest, Code: CodeInvalidFormBody, Message: "Invalid Form Body", Errors: map[string]any(f)}
}

func invalidForm(path, code, msg string) *apiError {
	f := fieldErrors{}
	f.add(path, code, msg)
	return f.err()
}

// call is one REST request being handled.
type call struct {
	r       *http.Request
	body    []byte
	files   []*discordgo.MessageAttachment
	route   string
	version string
	// created is the message the handler created (POST of a message), for
	// the OnMessageCreate hook.
	created *discordgo.Message
	// raw is the body as sent; recorded is set once the request is in
	// Requests.
	raw      []byte
	recorded bool
}

func (c *call) param(name string) string { return c.r.PathValue(name) }

// decode reads the JSON body (or a multipart body's payload_json) into v.
func (c *call) decode(v any) *apiError {
	if len(bytes.TrimSpace(c.body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		return &apiError{status: http.StatusBadRequest, Code: CodeInvalidFormBody, Message: "Invalid Form Body",
			Errors: map[string]any{"_errors": []any{map[string]string{"code": "MODEL_TYPE_CONVERT", "message": "Could not interpret the body as JSON."}}}}
	}
	return nil
}

type handler func(c *call) (int, any, *apiError)

// handle registers a REST route under /api/v9 and /api/v10.
func (s *Server) handle(method, path string, h handler) {
	route := method + " " + path
	s.mux.HandleFunc(method+" /api/{version}"+path, func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, route, h)
	})
}

const maxBody = 25 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request, route string, h handler) {
	c := &call{r: r, route: route, version: strings.TrimPrefix(r.PathValue("version"), "v")}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	c.body, c.raw = raw, raw
	status, out, aerr := s.exec(w, c, raw, h)
	if !c.recorded {
		s.mu.Lock()
		s.record(c, status)
		s.mu.Unlock()
	}
	s.notify() // recorded (Requests): refused and read-only requests too
	if aerr != nil {
		writeJSON(w, aerr.status, aerr)
		return
	}
	if status == http.StatusNoContent || out == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, out)
}

// record puts c in Requests with the status it is answered; s.mu held.
// A handled request is recorded in the same locked section as its effect,
// so whoever sees the effect finds the request too.
func (s *Server) record(c *call, status int) {
	r := c.r
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Route: c.route, Version: c.version,
		Query: r.URL.Query(), Header: r.Header.Clone(), Body: c.raw, Status: status})
	if n := s.opts.MaxRecorded; n > 0 && len(s.requests) > n {
		s.requests = append(s.requests[:0:0], s.requests[len(s.requests)-n:]...)
	}
	c.recorded = true
}

// exec runs the checks (version, auth, rate limits, faults) and the handler; the status is what
// the client is answered.
func (s *Server) exec(w http.ResponseWriter, c *call, raw []byte, h handler) (int, any, *apiError) {
	if c.version != "9" && c.version != "10" {
		return 404, nil, &apiError{status: 404, Code: 0, Message: "404: Not Found"}
	}
	s.mu.Lock()
	token := s.opts.Token
	s.mu.Unlock()
	if c.r.Header.Get("Authorization") != "Bot "+token && c.route != "GET /gateway" && !strings.HasPrefix(c.route, "POST /webhooks/") &&
		!strings.Contains(c.route, "/webhooks/{app}/{token}") && !strings.HasPrefix(c.route, "POST /interactions/") {
		return 401, nil, &apiError{status: 401, Code: CodeUnauthorized, Message: "401: Unauthorized"}
	}
	s.mu.Lock()
	if limited := s.rateLimit(w, c); limited != nil {
		s.mu.Unlock()
		return 429, nil, limited
	}
	f := s.takeFault(c.route)
	s.mu.Unlock()
	if f != nil && !f.AfterHandling {
		return f.answer(w)
	}
	if strings.HasPrefix(c.r.Header.Get("Content-Type"), "multipart/form-data") {
		if aerr := c.parseMultipart(raw); aerr != nil {
			return aerr.status, nil, aerr
		}
	}
	s.mu.Lock()
	status, out, aerr := h(c)
	handled := aerr == nil
	if out != nil && aerr == nil {
		// An answer may point into the model (the application, a message):
		// encode it before the lock is let go, or a concurrent change races
		// with the encoding.
		if b, err := json.Marshal(out); err == nil {
			out = json.RawMessage(b)
		}
	}
	switch {
	case f != nil:
		status, out, aerr = f.answer(w)
	case aerr != nil:
		status, out = aerr.status, nil
	}
	s.record(c, status)
	hook, created := s.onCreate, c.created
	if hook != nil && created != nil {
		created = cloneMessage(created)
	}
	s.mu.Unlock()
	if hook != nil && created != nil {
		hook(created) // stored, not yet answered
	}
	if c.r.Method != http.MethodGet && handled {
		s.notify() // ephemeral responses and modals change the model without a dispatch
	}
	return status, out, aerr
}

func (c *call) parseMultipart(raw []byte) *apiError {
	req := &http.Request{Header: c.r.Header.Clone(), Body: io.NopCloser(bytes.NewReader(raw)), Method: "POST"}
	if err := req.ParseMultipartForm(maxBody); err != nil {
		return &apiError{status: 400, Code: CodeInvalidFormBody, Message: "Invalid Form Body"}
	}
	c.body = []byte(req.FormValue("payload_json"))
	for i := 0; i < 10; i++ {
		fh := req.MultipartForm.File["files["+strconv.Itoa(i)+"]"]
		if len(fh) == 0 {
			continue
		}
		ct := fh[0].Header.Get("Content-Type")
		c.files = append(c.files, &discordgo.MessageAttachment{Filename: fh[0].Filename, Size: int(fh[0].Size), ContentType: ct})
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = 500, []byte(`{"message":"500: Internal Server Error","code":0}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// now is the fake's clock.
func (s *Server) now() time.Time { return s.opts.Now() }

// discordEpoch is 2015-01-01 in Unix milliseconds.
const discordEpoch = 1420070400000

// newID returns a fresh snowflake, increasing, stamped with the fake's clock.
func (s *Server) newID() string {
	id := uint64(s.now().UnixMilli()-discordEpoch) << 22
	if id <= s.lastID {
		id = s.lastID + 1
	}
	s.lastID = id
	return strconv.FormatUint(id, 10)
}

// snowflakeTime is the creation time a snowflake carries.
func snowflakeTime(id string) time.Time {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(int64(n>>22) + discordEpoch)
}

// clone deep-copies a model value so callers never share the fake's memory.
func clone[T any](v T) T {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out
	}
	_ = json.Unmarshal(b, &out)
	return out
}
