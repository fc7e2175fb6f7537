package discord

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// stallGateway is a gateway that accepts the websocket and then never
// says Hello (a stalled middlebox, an overloaded gateway node): each
// accepted connection is reported on conns and held until the test ends.
func stallGateway(t *testing.T) (*httptest.Server, chan struct{}) {
	t.Helper()
	conns := make(chan struct{}, 16)
	quit := make(chan struct{})
	up := websocket.Upgrader{}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	mux.HandleFunc("GET /api/v9/gateway", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"url":"ws://gateway.invalid/gw"}`))
	})
	mux.HandleFunc("/gw/", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		conns <- struct{}{}
		<-quit // never a Hello
	})
	t.Cleanup(func() { close(quit); srv.Close() })
	return srv, conns
}

// hostRewrite sends every request to target's host, whatever its URL
// names (discord.com), so the bot's REST calls reach the test server.
type hostRewrite struct{ target *url.URL }

func (a hostRewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := r.Clone(r.Context())
	r2.URL.Scheme, r2.URL.Host, r2.Host = a.target.Scheme, a.target.Host, a.target.Host
	return http.DefaultTransport.RoundTrip(r2)
}

// stallBot is a bot whose REST calls and gateway dials all reach srv,
// with a short reconnect back-off.
func stallBot(t *testing.T, srv *httptest.Server) *Bot {
	t.Helper()
	u, _ := url.Parse(srv.URL)
	addr := u.Host
	b, err := New(Options{Logger: slog.New(slog.DiscardHandler), Token: "MTIz.abc.def-token",
		Transport: hostRewrite{target: u},
		Dialer: &websocket.Dialer{HandshakeTimeout: 10 * time.Second,
			NetDialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}}})
	if err != nil {
		t.Fatal(err)
	}
	b.backoffBase = 20 * time.Millisecond
	return b
}

// waitOn waits (bounded by connWait) for ch to yield or close.
func waitOn(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(connWait):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestConnCloseEndsAStalledOpen: discordgo's Open reads Hello and READY
// with no deadline (under the session's lock), so a gateway that never
// sends Hello holds the reconnect loop in Open; Close, which waits for the
// loop, must still return (no hung shutdown).
func TestConnCloseEndsAStalledOpen(t *testing.T) {
	srv, conns := stallGateway(t)
	b := stallBot(t, srv)
	b.Start(context.Background())
	waitOn(t, "the gateway connection", conns)
	closed := make(chan struct{})
	go func() { _ = b.Close(); close(closed) }()
	waitOn(t, "Close to return", closed)
}

// TestConnStalledOpenIsRetried: a gateway that stalls before Hello is
// given up after the open timeout and dialed again (the loop does not sit
// in Open for ever with no heartbeat to notice).
func TestConnStalledOpenIsRetried(t *testing.T) {
	srv, conns := stallGateway(t)
	b := stallBot(t, srv)
	b.openTimeout = 50 * time.Millisecond
	t.Cleanup(func() { _ = b.Close() })
	b.Start(context.Background())
	waitOn(t, "the first gateway connection", conns)
	waitOn(t, "a second gateway connection", conns)
}

// TestConnCloseEndsAHungGatewayRequest: discordgo's Open calls
// s.Gateway() with no ctx, so a REST endpoint that accepts GET /gateway
// and never answers holds the reconnect loop in Open unless the bot's
// client bounds the request; Close, which waits for the loop, must still
// return.
func TestConnCloseEndsAHungGatewayRequest(t *testing.T) {
	srv, got := silentREST(t)
	// gateway/bot (read before each identify, with its own bound) is
	// refused at once, so the loop goes on to Open and its GET /gateway.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v9/gateway/bot", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"message":"unavailable","code":0}`, http.StatusServiceUnavailable)
	})
	mux.Handle("/", srv.Config.Handler)
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	b := stallBot(t, front)
	b.Start(context.Background())
	select {
	case r := <-got:
		if r != "GET /api/v9/gateway" {
			t.Fatalf("first request %q", r)
		}
	case <-time.After(connWait):
		t.Fatal("no GET /gateway")
	}
	closed := make(chan struct{})
	go func() { _ = b.Close(); close(closed) }()
	waitOn(t, "Close to return", closed)
}
