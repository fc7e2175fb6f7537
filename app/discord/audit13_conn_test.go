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

// auditStallGateway is a gateway that accepts the websocket and then never
// says Hello (a stalled middlebox, an overloaded gateway node): each
// accepted connection is reported on conns and held until the test ends.
func auditStallGateway(t *testing.T) (*httptest.Server, chan struct{}) {
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

type auditRewrite struct{ target *url.URL }

func (a auditRewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	r2 := r.Clone(r.Context())
	r2.URL.Scheme, r2.URL.Host, r2.Host = a.target.Scheme, a.target.Host, a.target.Host
	return http.DefaultTransport.RoundTrip(r2)
}

func auditStallBot(t *testing.T, srv *httptest.Server) *Bot {
	t.Helper()
	u, _ := url.Parse(srv.URL)
	addr := u.Host
	b, err := New(Options{Logger: slog.New(slog.DiscardHandler), Token: "MTIz.abc.def-token",
		Transport: auditRewrite{target: u},
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

func auditWait(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(connWait):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestAuditCloseEndsAStalledOpen: discordgo's Open reads Hello and READY
// with no deadline (under the session's lock); a gateway that never sends
// Hello kept the reconnect loop in Open forever, and Close, which waits for
// the loop, never returned (a hung shutdown).
func TestAuditCloseEndsAStalledOpen(t *testing.T) {
	srv, conns := auditStallGateway(t)
	b := auditStallBot(t, srv)
	b.Start(context.Background())
	auditWait(t, "the gateway connection", conns)
	closed := make(chan struct{})
	go func() { _ = b.Close(); close(closed) }()
	auditWait(t, "Close to return", closed)
}

// TestAuditStalledOpenIsRetried: a gateway that stalls before Hello is
// given up after the open timeout and dialed again (the loop does not sit
// in Open for ever with no heartbeat to notice).
func TestAuditStalledOpenIsRetried(t *testing.T) {
	srv, conns := auditStallGateway(t)
	b := auditStallBot(t, srv)
	b.openTimeout = 50 * time.Millisecond
	t.Cleanup(func() { _ = b.Close() })
	b.Start(context.Background())
	auditWait(t, "the first gateway connection", conns)
	auditWait(t, "a second gateway connection", conns)
}
