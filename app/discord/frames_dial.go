package discord

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/net/proxy"
)

// filterDialer is d whose gateway connections pass the frame filter
// (frameConn, frames.go), reporting to hooks. The
// filter must see the plaintext stream, so the dialer does the TLS
// handshake of a wss:// gateway itself (NetDialTLSContext) and, for the
// same reason, the proxy hop d.Proxy picks (an HTTP(S) CONNECT or SOCKS5),
// which gorilla would otherwise dial through the TLS function.
func filterDialer(d *websocket.Dialer, hooks frameHooks) *websocket.Dialer {
	f := *d
	dial := f.NetDialContext
	if dial == nil {
		var nd net.Dialer
		dial = nd.DialContext
	}
	pick := f.Proxy
	f.Proxy = nil
	f.NetDial = nil
	tlsConfig := f.TLSClientConfig
	f.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialVia(ctx, dial, pick, "http", network, addr)
		if err != nil {
			return nil, err
		}
		return newFrameConn(c, hooks), nil
	}
	f.NetDialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialVia(ctx, dial, pick, "https", network, addr)
		if err != nil {
			return nil, err
		}
		tc, err := tlsHandshake(ctx, c, tlsConfig, addr)
		if err != nil {
			return nil, err
		}
		return newFrameConn(tc, hooks), nil
	}
	return &f
}

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// tlsHandshake is gorilla's client handshake over c: cfg with ServerName
// defaulting to addr's host.
func tlsHandshake(ctx context.Context, c net.Conn, cfg *tls.Config, addr string) (net.Conn, error) {
	if cfg == nil {
		cfg = &tls.Config{}
	} else {
		cfg = cfg.Clone()
	}
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("discord: gateway TLS handshake: %w", err)
	}
	return tc, nil
}

// dialVia connects to addr directly or through the proxy pick chooses for
// scheme://addr (nil pick or URL: directly).
func dialVia(ctx context.Context, dial dialFunc, pick func(*http.Request) (*url.URL, error), scheme, network, addr string) (net.Conn, error) {
	if pick == nil {
		return dial(ctx, network, addr)
	}
	pu, err := pick(&http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: scheme, Host: addr}, Header: http.Header{}})
	if err != nil {
		return nil, fmt.Errorf("discord: choose the gateway proxy: %w", err)
	}
	if pu == nil {
		return dial(ctx, network, addr)
	}
	switch pu.Scheme {
	case "http", "https":
		port := pu.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[pu.Scheme]
		}
		paddr := net.JoinHostPort(pu.Hostname(), port)
		c, err := dial(ctx, network, paddr)
		if err != nil {
			return nil, err
		}
		if pu.Scheme == "https" {
			if c, err = tlsHandshake(ctx, c, nil, paddr); err != nil {
				return nil, err
			}
		}
		if err := proxyConnect(ctx, c, pu, addr); err != nil {
			_ = c.Close()
			return nil, err
		}
		return c, nil
	default: // socks5, socks5h
		pd, err := proxy.FromURL(pu, ctxDialer(dial))
		if err != nil {
			return nil, fmt.Errorf("discord: gateway proxy %s: %w", pu.Redacted(), err)
		}
		if cd, ok := pd.(proxy.ContextDialer); ok {
			return cd.DialContext(ctx, network, addr)
		}
		return pd.Dial(network, addr)
	}
}

// ctxDialer is a dialFunc as proxy.ContextDialer.
type ctxDialer dialFunc

func (d ctxDialer) Dial(network, addr string) (net.Conn, error) {
	return d(context.Background(), network, addr)
}

func (d ctxDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d(ctx, network, addr)
}

var _ proxy.ContextDialer = ctxDialer(nil)

// proxyConnect asks the HTTP proxy on c for a tunnel to addr.
func proxyConnect(ctx context.Context, c net.Conn, pu *url.URL, addr string) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
		defer func() { _ = c.SetDeadline(time.Time{}) }()
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: addr}, Host: addr, Header: http.Header{}}
	if pu.User != nil {
		pass, _ := pu.User.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(pu.User.Username()+":"+pass)))
	}
	if err := req.Write(c); err != nil {
		return fmt.Errorf("discord: gateway proxy CONNECT: %w", err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return fmt.Errorf("discord: gateway proxy CONNECT: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("discord: gateway proxy CONNECT: %s", resp.Status)
	}
	if br.Buffered() > 0 {
		return fmt.Errorf("discord: gateway proxy CONNECT: data before the tunnel")
	}
	return nil
}
