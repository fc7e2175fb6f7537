package discord

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
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
	startReady(t, b)
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

// TestFramesFilteredOverTLS: for a wss:// gateway the dialer does the TLS
// handshake itself (verifying the server as gorilla would), so the filter
// reads the plaintext; a malformed dispatch arrives as the replacement,
// the next message as sent.
func TestFramesFilteredOverTLS(t *testing.T) {
	good := []byte(`{"op":0,"s":2,"t":"MESSAGE_CREATE","d":{"id":"1"}}`)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.WriteMessage(websocket.TextMessage, []byte(`{"op":0,"s":1,"t":"GUILD_UPDATE","d":{}}`))
		_ = c.WriteMessage(websocket.TextMessage, good)
		_, _, _ = c.ReadMessage() // until the client closes
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted case's handshake error
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig
	cases := []struct {
		name    string
		tls     *tls.Config
		wantErr bool
	}{
		{"trusted", roots, false},
		{"untrusted", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var dropped []frameVerdict
			d := filterDialer(&websocket.Dialer{TLSClientConfig: tc.tls, HandshakeTimeout: connWait}, frameHooks{dropped: func(v frameVerdict) { dropped = append(dropped, v) }})
			c, _, err := d.Dial("wss"+strings.TrimPrefix(srv.URL, "https"), nil)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "discord: gateway TLS handshake") {
					t.Fatalf("Dial err = %v, want a TLS handshake error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var got []string
			for range 2 {
				_, m, err := c.ReadMessage()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(m))
			}
			want := []string{`{"op":0,"s":1,"t":"PRESENCES_REPLACE","d":[]}`, string(good)}
			if !slices.Equal(got, want) || len(dropped) != 1 || dropped[0].event != "GUILD_UPDATE" {
				t.Fatalf("messages %q, dropped %+v; want %q and one GUILD_UPDATE", got, dropped, want)
			}
		})
	}
}
