package egress

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Timeouts of the provider transport. A model's stream can run for many
// minutes, so nothing here bounds the body: the caller's stall watchdog and
// request timeout do. The header wait is long because a non-streaming
// answer (the client's retry after a 400) sends its headers only when the
// whole completion is written.
const (
	DefaultProviderConnectTimeout = 10 * time.Second
	DefaultProviderHeaderTimeout  = 10 * time.Minute
)

// ProviderOptions configures NewProviderTransport.
type ProviderOptions struct {
	// AllowPrivateNetwork lets the endpoint be a private, loopback or
	// link-local address (a local Ollama); cloud metadata addresses stay
	// refused even then. Off: global unicast addresses only.
	AllowPrivateNetwork bool
	// Resolver resolves host names (nil: net.DefaultResolver).
	Resolver Resolver
	// ConnectTimeout bounds the TCP connect and the TLS handshake (0:
	// DefaultProviderConnectTimeout); HeaderTimeout the wait for response
	// headers (0: DefaultProviderHeaderTimeout).
	ConnectTimeout, HeaderTimeout time.Duration
	// TLSConfig, when set, is the TLS client configuration (tests: a test
	// server's roots). Nil: the system roots. Verification is never off.
	TLSConfig *tls.Config
	// Logger, when set, gets one debug line per refused address (never a
	// URL or header).
	Logger *slog.Logger
}

// AddressRefusedError is the provider transport's refusal of the address
// it was about to connect to. Its message names the host, the address and
// its class, and what the operator can change.
type AddressRefusedError struct {
	Host  string
	Addr  netip.Addr
	Class string // a hostkit.ClassifyAddr class: "loopback", "private", "metadata", …
}

func (e *AddressRefusedError) Error() string {
	if e.Class == "metadata" {
		return fmt.Sprintf("egress: refused to connect to %s for %s: cloud metadata endpoints are never allowed",
			e.Addr, hostkit.Repr(e.Host))
	}
	if !e.Addr.IsValid() {
		return fmt.Sprintf("egress: refused to connect for %s: the address did not parse", hostkit.Repr(e.Host))
	}
	return fmt.Sprintf("egress: refused to connect to %s for %s: %s address; allow a private-network endpoint to reach it",
		e.Addr, hostkit.Repr(e.Host), e.Class)
}

// PolicyRefusal reports true: the model provider's failure policy
// (llm.Classify) treats the refusal as a setting to change, not a
// transient failure to retry.
func (e *AddressRefusedError) PolicyRefusal() bool { return true }

// NewProviderTransport is the model provider's HTTP transport: every
// connection is dialed by the egress layer's guarded dialer, which checks
// the address actually connected (so a name that resolves, or re-resolves,
// to a refused address is caught as well as a literal), the environment's
// proxy settings are ignored, TLS is verified, and response bodies stream
// without a size cap.
func NewProviderTransport(o ProviderOptions) *http.Transport {
	res := o.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	connect := o.ConnectTimeout
	if connect <= 0 {
		connect = DefaultProviderConnectTimeout
	}
	header := o.HeaderTimeout
	if header <= 0 {
		header = DefaultProviderHeaderTimeout
	}
	policy := rule{ResolvedHostRule: hostkit.ResolvedHostRule{Private: o.AllowPrivateNetwork}}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := splitDialAddr(addr)
		if err != nil {
			return nil, err
		}
		return dialChecked(ctx, res, connect, network, host, port, func(a netip.Addr, ok bool) error {
			class := "unparseable"
			if ok {
				class = refusedClass(policy, a)
			}
			if class == "" {
				return nil
			}
			if o.Logger != nil {
				o.Logger.Debug("provider address refused", "host", host, "addr", a.String(), "class", class)
			}
			return &AddressRefusedError{Host: host, Addr: a, Class: class}
		})
	}
	var tlsConf *tls.Config
	if o.TLSConfig != nil {
		tlsConf = o.TLSConfig.Clone()
		tlsConf.InsecureSkipVerify = false
	}
	return &http.Transport{
		Proxy:                 nil, // never the environment's proxy
		DialContext:           dial,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   connect,
		ResponseHeaderTimeout: header,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          8,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		// The stream is read as it comes; a gzip layer would only delay it.
		DisableCompression: true,
	}
}
