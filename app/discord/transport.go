package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Kimi's own rate limiting, under discordgo (an http.RoundTripper in the
// session's client). Discord's buckets are learnt from X-RateLimit-Bucket
// per route (method + path template) and counted per major parameter
// (channel, guild, webhook id+token); the global limit is learnt from
// X-RateLimit-Global and global 429s. Every wait honours the request's ctx
// (discordgo's WithContext sets it), which discordgo's own limiter does not
// (a time.Sleep under its bucket mutex): so the X-RateLimit-* headers are
// stripped from what discordgo sees and its limiter never waits.
//
// discordgo's helpers also hold the path's Bucket mutex (a sync.Mutex, not
// ctx-aware) for the whole request, so a request waiting here would make a
// second one on the same path queue behind it, deaf to its own ctx. The
// actions therefore send through restJSON (actions_rest.go): each call has a
// private locked Bucket handed to RequestWithLockedBucket, never entered in
// the session's Ratelimiter (whose map never forgets a key), so no lock is
// shared and every wait is the request's own, here, under its ctx.

// RateLimitEvent is one rate limit Kimi met (a 429, or a wait for an
// exhausted bucket).
type RateLimitEvent struct {
	Route      string // "POST /channels/{channel}/messages"
	Bucket     string // X-RateLimit-Bucket, "" when unknown
	RetryAfter time.Duration
	Global     bool
	At         time.Time
}

// defaultRequestTimeout bounds a request whose ctx has no deadline of its
// own: discordgo's Open asks GET /gateway with no ctx, and the session's
// http.Client has no Timeout, so an endpoint that accepts the request and
// never answers held Open (under the session's lock, and Close waiting for
// it) for ever. It covers the whole request: rate-limit waits, the sends
// and the reading of the body. A ctx with its own deadline keeps it, even a
// longer one.
const defaultRequestTimeout = 30 * time.Second

// maxAttempts bounds the sends of one request: the first and the retries
// after 429s (a 429 was not processed, so a retried POST cannot double).
const maxAttempts = 4

// UncertainError is returned when a request that changes something (POST,
// PATCH, PUT, DELETE) was sent and then failed: Discord answered a 5xx, or
// the connection broke (or the ctx ended) after the whole request was
// written and before an answer came. It may or may not have been
// processed, so it is never retried. Callers that must not repeat a send
// (scheduled tasks) check IsUncertain. A failure before the request was
// written (a refused dial, a ctx ended during a rate-limit wait) is not
// uncertain: nothing reached Discord.
type UncertainError struct {
	Method string
	Route  string
	Status int   // Discord's 5xx; 0 when no answer came
	Err    error // the network or ctx error when no answer came
}

// Error describes the uncertain outcome.
func (e *UncertainError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("discord: %s failed after the request was sent: the outcome is uncertain (not retried): %v", e.Route, e.Err)
	}
	return fmt.Sprintf("discord: %s answered %d: the outcome is uncertain (not retried)", e.Route, e.Status)
}

// Unwrap returns the network or ctx error (nil after a 5xx).
func (e *UncertainError) Unwrap() error { return e.Err }

// IsUncertain reports whether err says a send's outcome is uncertain (a 5xx
// or a broken connection after a changing request was sent): it may have
// been processed.
func IsUncertain(err error) bool {
	var u *UncertainError
	if errors.As(err, &u) {
		return true
	}
	var rest *discordgo.RESTError
	if errors.As(err, &rest) && rest.Response != nil && rest.Response.StatusCode >= 500 && rest.Request != nil {
		return rest.Request.Method != http.MethodGet && rest.Request.Method != http.MethodHead
	}
	return false
}

// limitNote hears the last 429 a request met (restBody's ctx carries one):
// discordgo's RateLimitError keeps the wait but drops Discord's "global".
type limitNote struct {
	mu     sync.Mutex
	retry  time.Duration
	global bool
}

type limitNoteKey struct{}

func (n *limitNote) set(retry time.Duration, global bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.retry, n.global = retry, global
}

func (n *limitNote) get() (time.Duration, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.retry, n.global
}

// rateLimited is a request Kimi's transport gave up on after maxAttempts
// 429s: discordgo's RateLimitError (Err) with what the transport learnt of
// the last one.
type rateLimited struct {
	retryAfter time.Duration
	global     bool
	Err        error
}

// Error returns discordgo's description.
func (e *rateLimited) Error() string { return e.Err.Error() }

// Unwrap returns discordgo's RateLimitError.
func (e *rateLimited) Unwrap() error { return e.Err }

type rlState struct {
	remaining int // -1 unknown
	reset     time.Time
}

type transport struct {
	base    http.RoundTripper
	onLimit func(RateLimitEvent)
	timeout time.Duration   // defaultRequestTimeout; tests shorten it
	stop    context.Context // nil, or ends every request when done (the bot's Close)
	now     func() time.Time

	mu      sync.Mutex
	hashes  map[string]string   // route -> X-RateLimit-Bucket
	buckets map[string]*rlState // hash (or route) + "|" + major -> state
	global  time.Time           // no request before this
}

// newTransport wraps base with Kimi's rate limiting; onLimit (may be nil)
// hears every limit met.
func newTransport(base http.RoundTripper, onLimit func(RateLimitEvent)) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base, onLimit: onLimit, now: time.Now, timeout: defaultRequestTimeout,
		hashes: map[string]string{}, buckets: map[string]*rlState{}}
}

var _ http.RoundTripper = (*transport)(nil)

// routeOf returns a path's route template (the major parameters and ids
// named as fakediscord names them) and its major parameter value.
func routeOf(method, path string) (route, major string) {
	path = strings.TrimPrefix(path, "/api")
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) > 0 && len(segs[0]) > 1 && segs[0][0] == 'v' && isDigits(segs[0][1:]) {
		segs = segs[1:]
	}
	names := map[string]string{
		"channels": "{channel}", "guilds": "{guild}", "messages": "{message}", "members": "{user}",
		"bans": "{user}", "roles": "{role}", "users": "{user}", "applications": "{app}",
		"commands": "{command}", "pins": "{message}", "invites": "{code}", "reactions": "{emoji}",
		"webhooks": "{app}", "interactions": "{interaction}", "thread-members": "{user}",
	}
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = s
		if i == 0 {
			continue
		}
		prev := segs[i-1]
		switch {
		case i >= 2 && (segs[i-2] == "webhooks" || segs[i-2] == "interactions"):
			out[i] = "{token}"
			if major != "" {
				major += "/" + s
			}
		case prev == "reactions" || prev == "invites":
			out[i] = names[prev]
		case isDigits(s):
			n, ok := names[prev]
			if !ok {
				n = "{id}"
			}
			out[i] = n
			if major == "" && (prev == "channels" || prev == "guilds" || prev == "webhooks" || prev == "interactions") {
				major = s
			}
		}
	}
	return method + " /" + strings.Join(out, "/"), major
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// key is the bucket key of a route's request; t.mu is held.
func (t *transport) key(route, major string) string {
	if h := t.hashes[route]; h != "" {
		return h + "|" + major
	}
	return route + "|" + major
}

// RoundTrip sends r under Kimi's rate limits, bounded by r's ctx, by
// defaultRequestTimeout when that ctx has no deadline, and by t.stop.
func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := t.bound(r.Context())
	r = r.WithContext(ctx)
	resp, err := t.roundTrip(ctx, r)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// bound derives a request's ctx: the default deadline when ctx has none,
// ended also when t.stop ends.
func (t *transport) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	cancels := []context.CancelFunc{}
	if _, ok := ctx.Deadline(); !ok && t.timeout > 0 {
		var c context.CancelFunc
		ctx, c = context.WithTimeout(ctx, t.timeout)
		cancels = append(cancels, c)
	}
	if t.stop != nil {
		var c context.CancelFunc
		ctx, c = context.WithCancel(ctx)
		stop := context.AfterFunc(t.stop, c)
		cancels = append(cancels, func() { stop() }, c)
	}
	return ctx, func() {
		for _, c := range cancels {
			c()
		}
	}
}

// cancelBody ends a request's derived ctx once its body is closed (net/http
// reads the body under that ctx: it must outlive RoundTrip).
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
	once   sync.Once
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.cancel)
	return err
}

func (t *transport) roundTrip(ctx context.Context, r *http.Request) (*http.Response, error) {
	route, major := routeOf(r.Method, r.URL.Path)
	body, err := replayableBody(r)
	if err != nil {
		return nil, err
	}
	interaction := strings.HasPrefix(route, "POST /interactions/")
	for attempt := 1; ; attempt++ {
		if err := t.wait(ctx, route, major, interaction); err != nil {
			return nil, err
		}
		req := r
		if attempt > 1 || body != nil {
			req = r.Clone(ctx)
			if body != nil {
				req.Body = io.NopCloser(bytes.NewReader(body))
				req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			}
		}
		changing := r.Method != http.MethodGet && r.Method != http.MethodHead
		var sent *writeTrace
		if changing {
			req, sent = traceWrites(req)
		}
		resp, err := t.base.RoundTrip(req)
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("discord: %s: %w", route, ctx.Err())
			}
			if changing && sent.written() {
				return nil, &UncertainError{Method: r.Method, Route: route, Err: err}
			}
			return nil, err
		}
		retry, global := t.learn(route, major, resp)
		if resp.StatusCode == http.StatusTooManyRequests {
			t.emit(RateLimitEvent{Route: route, Bucket: resp.Header.Get("X-RateLimit-Bucket"), RetryAfter: retry, Global: global, At: t.now()})
			if n, ok := ctx.Value(limitNoteKey{}).(*limitNote); ok {
				n.set(retry, global)
			}
			if attempt < maxAttempts {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
				_ = resp.Body.Close()
				continue
			}
		}
		if resp.StatusCode >= 500 && changing {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			_ = resp.Body.Close()
			return nil, &UncertainError{Method: r.Method, Route: route, Status: resp.StatusCode}
		}
		stripRateLimitHeaders(resp.Header)
		return resp, nil
	}
}

// writeTrace learns through httptrace whether the base transport wrote a
// whole request: net/http calls WroteRequest once the request (headers and
// body) is flushed to the connection, or with the write's error, and its
// RoundTrip returns only after the write ended.
type writeTrace struct {
	mu       sync.Mutex
	traced   bool // WroteRequest was called
	wrote    bool // ... with no error: the whole request went out
	bodyRead bool // the base read the body to its end
}

// traceWrites returns req with a trace recording its writes (any trace
// already in the ctx keeps its hooks) and its body, if any, noting when it
// was read to its end.
func traceWrites(req *http.Request) (*http.Request, *writeTrace) {
	w := &writeTrace{}
	if req.Body != nil && req.Body != http.NoBody {
		req = req.Clone(req.Context())
		req.Body = &eofBody{ReadCloser: req.Body, w: w}
	}
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.traced = true
		w.wrote = w.wrote || info.Err == nil
	}}
	return req.WithContext(httptrace.WithClientTrace(req.Context(), trace)), w
}

// written reports whether a failed request may have reached Discord: the
// trace saw it written; a base transport that reports no writes (not
// net/http's) is taken to have sent a request whose body it read to the
// end. net/http reports every write, so a refused dial or a ctx ended
// before the write is never taken for a send.
func (w *writeTrace) written() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.traced {
		return w.wrote
	}
	return w.bodyRead
}

// eofBody notes when a request body was read to its end.
type eofBody struct {
	io.ReadCloser
	w *writeTrace
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.w.mu.Lock()
		b.w.bodyRead = true
		b.w.mu.Unlock()
	}
	return n, err
}

// replayableBody reads r's body once so a retry can send it again (nil when
// there is none).
func replayableBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("discord: read request body: %w", err)
	}
	return b, nil
}

// wait blocks until route's bucket and the global limit allow a request,
// or ctx ends; it takes the request's place in the bucket.
func (t *transport) wait(ctx context.Context, route, major string, interaction bool) error {
	for {
		t.mu.Lock()
		now := t.now()
		var until time.Time
		global := false
		if !interaction && now.Before(t.global) {
			until, global = t.global, true
		}
		k := t.key(route, major)
		b := t.buckets[k]
		if b != nil && b.remaining == 0 && now.Before(b.reset) && b.reset.After(until) {
			until, global = b.reset, false
		}
		if until.IsZero() {
			if b != nil && b.remaining > 0 {
				b.remaining--
			}
			t.mu.Unlock()
			return nil
		}
		hash := t.hashes[route]
		t.mu.Unlock()
		d := until.Sub(now)
		t.emit(RateLimitEvent{Route: route, Bucket: hash, RetryAfter: d, Global: global, At: now})
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("discord: waiting %s for the rate limit of %s: %w", d.Round(time.Millisecond), route, ctx.Err())
		case <-timer.C:
		}
	}
}

// resetMargin is added to Discord's reset times: they are given to the
// millisecond, and a request a fraction early is refused.
const resetMargin = 5 * time.Millisecond

// learn records resp's rate-limit headers and, for a 429, its retry_after;
// it returns the 429's wait and whether it is global.
func (t *transport) learn(route, major string, resp *http.Response) (time.Duration, bool) {
	h := resp.Header
	now := t.now()
	var retry time.Duration
	global := h.Get("X-RateLimit-Global") != "" || h.Get("X-RateLimit-Scope") == "global"
	if resp.StatusCode == http.StatusTooManyRequests {
		var body struct {
			RetryAfter float64 `json:"retry_after"`
			Global     bool    `json:"global"`
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		if json.Unmarshal(raw, &body) == nil && body.RetryAfter > 0 {
			retry = secondsDuration(body.RetryAfter)
		} else if s, err := strconv.ParseFloat(h.Get("Retry-After"), 64); err == nil {
			retry = secondsDuration(s)
		}
		global = global || body.Global
		if retry <= 0 {
			retry = time.Second
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if hash := h.Get("X-RateLimit-Bucket"); hash != "" {
		if old := t.hashes[route]; old != hash {
			t.hashes[route] = hash
			if prov := t.buckets[route+"|"+major]; prov != nil && t.buckets[hash+"|"+major] == nil {
				t.buckets[hash+"|"+major] = prov
			}
		}
	}
	k := t.key(route, major)
	b := t.buckets[k]
	if b == nil {
		b = &rlState{remaining: -1}
		t.buckets[k] = b
	}
	if rem, err := strconv.Atoi(h.Get("X-RateLimit-Remaining")); err == nil {
		b.remaining = rem
	}
	if after, err := strconv.ParseFloat(h.Get("X-RateLimit-Reset-After"), 64); err == nil {
		b.reset = now.Add(secondsDuration(after) + resetMargin)
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		until := now.Add(retry + resetMargin)
		if global {
			if until.After(t.global) {
				t.global = until
			}
		} else {
			b.remaining = 0
			if until.After(b.reset) {
				b.reset = until
			}
		}
	}
	if len(t.buckets) > 4096 { // forget expired buckets now and then
		for k, s := range t.buckets {
			if now.After(s.reset) {
				delete(t.buckets, k)
			}
		}
	}
	return retry, global
}

func secondsDuration(s float64) time.Duration {
	if s <= 0 || math.IsNaN(s) {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

func (t *transport) emit(ev RateLimitEvent) {
	if t.onLimit != nil {
		t.onLimit(ev)
	}
}

// stripRateLimitHeaders hides the X-RateLimit-* headers from discordgo, so
// its path-keyed limiter (a sleep under a mutex) never waits.
func stripRateLimitHeaders(h http.Header) {
	for k := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "X-Ratelimit-") {
			delete(h, k)
		}
	}
}
