package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
)

// TestShutdownFinishesInFlightRequests: a request that is running when
// shutdown starts completes with its full response; new connections are
// refused afterwards.
func TestShutdownFinishesInFlightRequests(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "finished")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}

	type reply struct {
		body string
		err  error
	}
	got := make(chan reply, 1)
	go func() {
		resp, err := client.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			got <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- reply{string(b), err}
	}()
	<-entered

	done := make(chan error, 1)
	go func() { done <- shutdownHTTP(context.Background(), srv, slog.New(slog.DiscardHandler)) }()
	// Shutdown closes the listener first; wait until it has, so the
	// in-flight request is released only during the drain.
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		c.Close()
	}
	select {
	case <-done:
		t.Fatal("shutdown returned while a request was still running")
	default:
	}
	close(release)
	r := <-got
	if r.err != nil || r.body != "finished" {
		t.Fatalf("in-flight request: %q, %v", r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := client.Get("http://" + ln.Addr().String() + "/"); err == nil {
		t.Fatal("a new request succeeded after shutdown")
	}
}
