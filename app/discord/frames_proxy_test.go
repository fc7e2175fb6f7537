package discord

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// connectProxy is a minimal HTTP CONNECT proxy recording the tunnels asked.
type connectProxy struct {
	ln      net.Listener
	mu      sync.Mutex
	tunnels []string
}

func newConnectProxy(t *testing.T) *connectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connectProxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *connectProxy) serve(c net.Conn) {
	defer c.Close()
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil || req.Method != http.MethodConnect {
		return
	}
	p.mu.Lock()
	p.tunnels = append(p.tunnels, req.Host)
	p.mu.Unlock()
	up, err := net.Dial("tcp", req.Host)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
		return
	}
	defer up.Close()
	_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	go func() { _, _ = io.Copy(up, c) }()
	_, _ = io.Copy(c, up)
}

func (p *connectProxy) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.tunnels...)
}

// TestFramesFilteredThroughAProxy: the dialer does the proxy hop the
// websocket dialer's Proxy picks itself (so the filter sees the stream),
// and the filter still drops a malformed frame.
func TestFramesFilteredThroughAProxy(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	f.AddGuild(fakediscord.GuildSpec{ID: evGuild, Name: "frames"})
	p := newConnectProxy(t)
	pu := &url.URL{Scheme: "http", Host: p.ln.Addr().String()}
	logs := &connLog{}
	b, err := New(Options{Store: connStore(t), Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Token: "Bot " + f.Token(), TokenSource: "test", Transport: f.Transport(),
		Dialer: &websocket.Dialer{Proxy: http.ProxyURL(pu)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	b.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), connWait)
	defer cancel()
	if err := b.AwaitReady(ctx); err != nil {
		t.Fatalf("AwaitReady: %v", err)
	}
	gw, err := url.Parse(f.GatewayURL())
	if err != nil {
		t.Fatal(err)
	}
	if got := p.asked(); len(got) != 1 || got[0] != gw.Host {
		t.Fatalf("proxy tunnels = %v, want one to %s", got, gw.Host)
	}
	if err := f.DispatchRaw(evGuild, "GUILD_CREATE", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	connWaitFor(t, "the frame dropped", func() bool { return b.Status().FramesDropped == 1 })
	if !strings.Contains(logs.String(), "event=GUILD_CREATE") {
		t.Errorf("no WARN naming the event:\n%s", logs)
	}
}
