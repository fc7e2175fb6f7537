package discord

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/modules/sdk"
)

func TestRouteOf(t *testing.T) {
	cases := []struct{ method, path, route, major string }{
		{"POST", "/api/v9/channels/123/messages", "POST /channels/{channel}/messages", "123"},
		{"PATCH", "/api/v10/channels/123/messages/456", "PATCH /channels/{channel}/messages/{message}", "123"},
		{"PUT", "/api/v9/guilds/1/bans/2", "PUT /guilds/{guild}/bans/{user}", "1"},
		{"GET", "/api/v9/users/@me", "GET /users/@me", ""},
		{"PUT", "/api/v9/applications/9/guilds/1/commands", "PUT /applications/{app}/guilds/{guild}/commands", "1"},
		{"POST", "/api/v9/webhooks/9/tok-en", "POST /webhooks/{app}/{token}", "9/tok-en"},
		{"POST", "/api/v9/interactions/5/tok/callback", "POST /interactions/{interaction}/{token}/callback", "5/tok"},
		{"PUT", "/api/v9/channels/1/messages/2/reactions/%F0%9F%91%8D/@me", "PUT /channels/{channel}/messages/{message}/reactions/{emoji}/@me", "1"},
	}
	for _, c := range cases {
		route, major := routeOf(c.method, c.path)
		if route != c.route || major != c.major {
			t.Errorf("routeOf(%s %s) = %q, %q; want %q, %q", c.method, c.path, route, major, c.route, c.major)
		}
	}
}

// statuses are the recorded statuses of a route.
func statuses(f *fakediscord.Server, route string) []int {
	var out []int
	for _, r := range f.RequestsTo(route) {
		out = append(out, r.Status)
	}
	return out
}

const postRoute = "POST /channels/{channel}/messages"

// TestTransportRouteLimit: an exhausted bucket is waited out before the
// request (no 429 reaches Discord's counters), the wait is heard, and the
// headers are hidden from discordgo (its limiter never waits).
func TestTransportRouteLimit(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	w.f.SetRateLimit(postRoute, 2, 300*time.Millisecond)
	mod := w.mod("kudos")
	for i := range 3 {
		if _, err := mod.SendMessage(context.Background(), w.text, sdk.OutgoingMessage{Content: "x"}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	for _, st := range statuses(w.f, postRoute) {
		if st != 200 {
			t.Fatalf("statuses = %v: Kimi sent into an exhausted bucket", statuses(w.f, postRoute))
		}
	}
	evs := w.rateLimits()
	if len(evs) == 0 || evs[0].Route != postRoute || evs[0].Bucket != fakediscord.BucketHash(postRoute) || evs[0].Global {
		t.Fatalf("limit events = %+v", evs)
	}
	// discordgo's own bucket for the path learnt nothing: it would never sleep.
	b := w.s.Ratelimiter.GetBucket(discordgo.EndpointChannelMessages(idString(w.text)))
	if wait := w.s.Ratelimiter.GetWaitTime(b, 1); wait != 0 || b.Remaining > 1 {
		t.Fatalf("discordgo's limiter saw the headers: wait %v, remaining %d", wait, b.Remaining)
	}
	// Another channel is another bucket (major parameter): no wait there.
	n := len(w.rateLimits())
	if _, err := mod.SendMessage(context.Background(), w.thread, sdk.OutgoingMessage{Content: "y"}); err != nil {
		t.Fatal(err)
	}
	if len(w.rateLimits()) != n {
		t.Fatalf("a send to another channel waited: %+v", w.rateLimits()[n:])
	}
}

func TestTransportHidesHeaders(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	req, _ := http.NewRequest("GET", "https://discord.com/api/v9/users/@me", nil)
	req.Header.Set("Authorization", "Bot "+f.Token())
	raw, err := f.Transport().RoundTrip(req.Clone(context.Background()))
	if err != nil || raw.Header.Get("X-RateLimit-Bucket") == "" {
		t.Fatalf("the fake sends no rate-limit headers: %v %v", err, raw.Header)
	}
	resp, err := newTransport(f.Transport(), nil).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for k := range resp.Header {
		if len(k) >= 12 && http.CanonicalHeaderKey(k)[:12] == "X-Ratelimit-" {
			t.Fatalf("header %s reached discordgo", k)
		}
	}
}

func TestTransportGlobalLimit(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{GlobalLimit: 3})
	mod := w.mod("kudos")
	for i := range 6 {
		ch := []uint64{w.text, w.thread}[i%2]
		if _, err := mod.SendMessage(context.Background(), ch, sdk.OutgoingMessage{Content: "x"}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	global := false
	for _, ev := range w.rateLimits() {
		global = global || ev.Global
	}
	if !global {
		t.Fatalf("no global limit heard: %+v", w.rateLimits())
	}
	if got := len(w.f.Messages(idString(w.text))) + len(w.f.Messages(idString(w.thread))); got != 6 {
		t.Fatalf("messages = %d, want 6 (each once)", got)
	}
}

func TestTransportRetries429WithinTheCtx(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	w.f.InjectFault(fakediscord.Fault{Route: postRoute, Status: 429, RetryAfter: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), actBound)
	defer cancel()
	if _, err := w.mod("kudos").SendMessage(ctx, w.text, sdk.OutgoingMessage{Content: "once"}); err != nil {
		t.Fatal(err)
	}
	if got := statuses(w.f, postRoute); len(got) != 2 || got[0] != 429 || got[1] != 200 {
		t.Fatalf("statuses = %v, want 429 then 200", got)
	}
	if n := len(w.f.Messages(idString(w.text))); n != 1 {
		t.Fatalf("messages = %d", n)
	}
	if evs := w.rateLimits(); len(evs) == 0 || evs[0].RetryAfter != 50*time.Millisecond {
		t.Fatalf("events = %+v", evs)
	}
	// Bounded: a route that keeps answering 429 gives up after maxAttempts.
	w.f.InjectFault(fakediscord.Fault{Route: postRoute, Status: 429, RetryAfter: time.Millisecond, Times: 10})
	_, err := w.mod("kudos").SendMessage(ctx, w.text, sdk.OutgoingMessage{Content: "never"})
	var rl *discordgo.RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("err = %v, want the last 429 as discordgo's RateLimitError", err)
	}
	if got := statuses(w.f, postRoute); len(got) != 2+maxAttempts {
		t.Fatalf("statuses = %v, want %d attempts", got, maxAttempts)
	}
}

func TestTransportCancelledCtxStopsWaiting(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	w.f.InjectFault(fakediscord.Fault{Route: postRoute, Status: 429, RetryAfter: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	w.s.Client.Transport.(*transport).onLimit = func(RateLimitEvent) { cancel() }
	done := make(chan error, 1)
	go func() {
		_, err := w.mod("kudos").SendMessage(ctx, w.text, sdk.OutgoingMessage{Content: "x"})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || err.Error() != "sending the message failed" {
			t.Fatalf("err = %v, want the safe message wrapping context.Canceled", err)
		}
	case <-time.After(actBound):
		t.Fatal("the send kept waiting out the hour after its ctx was cancelled")
	}
	if got := statuses(w.f, postRoute); len(got) != 1 {
		t.Fatalf("statuses = %v, want the one 429", got)
	}
}

func TestTransportNoRepostAfter5xx(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	for _, status := range []int{500, 502} {
		w.f.InjectFault(fakediscord.Fault{Route: postRoute, Status: status, AfterHandling: true})
		before := len(w.f.Messages(idString(w.text)))
		_, err := w.mod("kudos").SendMessage(context.Background(), w.text, sdk.OutgoingMessage{Content: "maybe"})
		if err == nil || err.Error() != "sending the message failed" || !IsUncertain(err) {
			t.Fatalf("%d: err = %v, want an uncertain failure", status, err)
		}
		if n := len(w.f.Messages(idString(w.text))) - before; n != 1 {
			t.Fatalf("%d: messages created = %d, want exactly 1 (not re-posted)", status, n)
		}
	}
	if got := statuses(w.f, postRoute); len(got) != 2 {
		t.Fatalf("statuses = %v, want one POST per send", got)
	}
	if IsUncertain(errors.New("x")) || IsUncertain(context.Canceled) {
		t.Fatal("IsUncertain of an ordinary error")
	}
}

// silentREST is a loopback REST endpoint that accepts every request
// and never answers (until the test ends): each request is reported on
// got.
func silentREST(t *testing.T) (*httptest.Server, chan string) {
	t.Helper()
	got := make(chan string, 16)
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Method + " " + r.URL.Path:
		default:
		}
		select {
		case <-quit:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(quit); srv.Close() })
	return srv, got
}

// TestTransportDefaultDeadline: a request whose ctx has no deadline
// (discordgo's own Gateway() in Open) is bounded by the transport's default
// deadline; one whose ctx has its own deadline keeps it, even a longer one.
func TestTransportDefaultDeadline(t *testing.T) {
	t.Run("no deadline", func(t *testing.T) {
		srv, _ := silentREST(t)
		tr := newTransport(http.DefaultTransport, nil).(*transport)
		tr.timeout = 50 * time.Millisecond
		c := &http.Client{Transport: tr}
		done := make(chan error, 1)
		go func() {
			resp, err := c.Get(srv.URL + "/api/v9/gateway")
			if err == nil {
				resp.Body.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want the default deadline", err)
			}
		case <-time.After(connWait):
			t.Fatal("a request with no deadline to a silent endpoint never ended")
		}
	})
	t.Run("own deadline kept", func(t *testing.T) {
		body := "{\"url\":\"ws://x/\"}"
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.(http.Flusher).Flush()
			time.Sleep(300 * time.Millisecond) // longer than the default below
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		tr := newTransport(http.DefaultTransport, nil).(*transport)
		tr.timeout = 50 * time.Millisecond
		c := &http.Client{Transport: tr}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		u, _ := url.Parse(srv.URL + "/api/v9/gateway")
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("a request with its own deadline was cut short: %v", err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || string(b) != body {
			t.Fatalf("body %q, %v: the default deadline ended the body of a request with its own", b, err)
		}
	})
	t.Run("body readable after RoundTrip", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
			_, _ = io.WriteString(w, "ok")
		}))
		t.Cleanup(srv.Close)
		c := &http.Client{Transport: newTransport(http.DefaultTransport, nil)}
		resp, err := c.Get(srv.URL + "/api/v9/gateway")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "ok" {
			t.Fatalf("body %q, %v", b, err)
		}
	})
}
