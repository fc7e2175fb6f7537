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
)

// auditSilentREST is a loopback REST endpoint that accepts every request
// and never answers (until the test ends): each request is reported on
// got.
func auditSilentREST(t *testing.T) (*httptest.Server, chan string) {
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

// TestAuditCloseEndsAHungGatewayRequest: discordgo's Open calls
// s.Gateway() with no ctx, and the bot's http.Client had no Timeout, so a
// REST endpoint that accepts GET /gateway and never answers held the
// reconnect loop in Open, and Close, which waits for the loop, never
// returned.
func TestAuditCloseEndsAHungGatewayRequest(t *testing.T) {
	srv, got := auditSilentREST(t)
	b := auditStallBot(t, srv)
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
	auditWait(t, "Close to return", closed)
}

// TestAuditTransportDefaultDeadline: a request whose ctx has no deadline
// (discordgo's own Gateway() in Open) is bounded by the transport's default
// deadline; one whose ctx has its own deadline keeps it, even a longer one.
func TestAuditTransportDefaultDeadline(t *testing.T) {
	t.Run("no deadline", func(t *testing.T) {
		srv, _ := auditSilentREST(t)
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
