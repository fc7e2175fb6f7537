// Package egress is the modules' outbound HTTP port (sdk.HTTP,
// reference/kimi-agent-host.md §2.7): a module reaches only the hosts its
// rules declare, and never the inside of the network.
//
// Host rules are resolved once, at New (${setting} placeholders, the
// discord-cdn alias), and every request and every redirect hop (at most
// sdk.MaxHTTPRedirects) is checked against them: scheme, port, no
// credentials in the URL, never a cloud metadata endpoint. The address
// policy is enforced where it cannot be side-stepped: in the dialer's
// Control, on the address actually dialed, so a name that resolves (or
// re-resolves: DNS rebinding) to a private address and a redirect to one
// are refused as well as a literal. A public rule may reach global unicast
// addresses only; a rule that names a private network reaches non-global
// addresses only when the operator allows it (the allow_private_network
// setting, see AllowPrivateNetworkSetting); metadata addresses never.
//
// Bodies are capped while streaming (the caller's limit, at most
// sdk.MaxHTTPBodyBytes), on the declared Content-Length and on the bytes as
// read, after decompression. Errors name the host and the rule, never the
// URL's query, the headers or credentials.
package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// Default timeouts.
const (
	// DefaultConnectTimeout bounds the TCP connect and the TLS handshake.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultHeaderTimeout bounds the wait for response headers once the
	// request is written.
	DefaultHeaderTimeout = sdk.DefaultHTTPTimeout
)

// Resolver looks up a host's addresses; *net.Resolver implements it. Tests
// inject one to make a name resolve where they need it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Options configures New.
type Options struct {
	// Module is the module's name (errors, the User-Agent).
	Module string
	// Rules are the module's declared host rules (Permissions.HTTPHosts).
	Rules []sdk.HostRule
	// Settings are the module's prepared settings: ${setting} rules and
	// AllowPrivateNetworkSetting are read from them.
	Settings sdk.Settings
	// Resolver resolves host names (nil: net.DefaultResolver).
	Resolver Resolver
	// ConnectTimeout bounds the TCP connect and the TLS handshake (0:
	// DefaultConnectTimeout); HeaderTimeout the wait for response headers
	// (0: DefaultHeaderTimeout). The whole request is bounded by the
	// request's timeout (sdk.WithTimeout; 20 s, 30 s for Download).
	ConnectTimeout, HeaderTimeout time.Duration
	// TLSConfig, when set, is the TLS client configuration (tests: a test
	// server's roots). Nil: the system roots.
	TLSConfig *tls.Config
	// Observe, when set, is called after every request with the port's
	// counters and, for a refused request, the refusal. It must not block.
	Observe func(Metrics, *Refusal)
	// TestRoutes sends the connections for a declared host (lower case)
	// to a local address — a test's server — instead of resolving it: the
	// rules, caps, redirects and content checks apply as for any host; the
	// address check does not (the address is the test's own). Only a test
	// binary may set it (testing.Testing): New refuses it elsewhere.
	TestRoutes map[string]netip.AddrPort
}

// ErrTestRoutes is New's refusal of Options.TestRoutes outside a test binary.
var ErrTestRoutes = errors.New("egress: test routes are only for test binaries")

// Refusal is one refused request: a reason for the metrics (a hostkit
// Refused constant, "address:<class>" for an address refused at connect,
// "too_large" or "redirects") and the error's message.
type Refusal struct {
	Reason  string
	Message string
}

// Metrics are a port's counters since New.
type Metrics struct {
	// Requests counts calls (Get, PostJSON, Download), not redirect hops.
	Requests int64
	// Bytes counts response body bytes read (decompressed).
	Bytes int64
	// Refusals counts refused requests by reason.
	Refusals map[string]int64
}

// rule is a resolved rule and whether its private network is honoured.
type rule struct {
	hostkit.ResolvedHostRule
	declaredPrivate bool // the rule names a private network
}

// Port is one module's sdk.HTTP.
type Port struct {
	module   string
	ua       string
	rules    []rule
	checked  []hostkit.ResolvedHostRule // Private only where honoured
	resolver Resolver
	routes   map[string]netip.AddrPort // Options.TestRoutes
	connect  time.Duration
	client   *http.Client
	observe  func(Metrics, *Refusal)

	requests, bytes atomic.Int64
	mu              sync.Mutex
	refusals        map[string]int64
}

var _ sdk.HTTP = (*Port)(nil)

// New resolves the module's rules and builds its port. A rule that cannot
// be resolved (an unknown or empty setting, a metadata host) is an error:
// the module cannot start.
func New(opts Options) (*Port, error) {
	resolved, err := hostkit.ResolveHostRules(opts.Module, opts.Rules, opts.Settings)
	if err != nil {
		return nil, fmt.Errorf("egress: resolve host rules: %w", err)
	}
	if len(opts.TestRoutes) > 0 && !testing.Testing() {
		return nil, ErrTestRoutes
	}
	allow := PrivateNetworkAllowed(opts.Settings)
	p := &Port{routes: opts.TestRoutes,
		module: opts.Module, ua: UserAgent(opts.Module), resolver: opts.Resolver,
		connect: opts.ConnectTimeout, observe: opts.Observe, refusals: map[string]int64{},
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.connect <= 0 {
		p.connect = DefaultConnectTimeout
	}
	header := opts.HeaderTimeout
	if header <= 0 {
		header = DefaultHeaderTimeout
	}
	for _, r := range resolved {
		declared := r.Private
		r.Private = declared && allow
		p.rules = append(p.rules, rule{ResolvedHostRule: r, declaredPrivate: declared})
		p.checked = append(p.checked, r)
	}
	var tlsConf *tls.Config
	if opts.TLSConfig != nil {
		tlsConf = opts.TLSConfig.Clone()
	}
	transport := &http.Transport{
		Proxy:                 nil, // never the environment's proxy
		DialContext:           p.dial,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   p.connect,
		ResponseHeaderTimeout: header,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
	}
	p.client = &http.Client{
		Transport: transport,
		// Redirects are followed by do, hop by hop, under the rules.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return p, nil
}

// UserAgent is the fixed User-Agent of a module's requests.
func UserAgent(module string) string { return "Kimi-Module/" + module }

// Metrics returns a copy of the port's counters.
func (p *Port) Metrics() Metrics {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.metricsLocked()
}

func (p *Port) metricsLocked() Metrics {
	m := Metrics{Requests: p.requests.Load(), Bytes: p.bytes.Load(), Refusals: make(map[string]int64, len(p.refusals))}
	for k, v := range p.refusals {
		m.Refusals[k] = v
	}
	return m
}

// CloseIdleConnections closes the port's idle connections (the host calls
// it when the module closes).
func (p *Port) CloseIdleConnections() { p.client.CloseIdleConnections() }

// Get implements sdk.HTTP.
func (p *Port) Get(ctx context.Context, url string, opts ...sdk.RequestOption) (*sdk.HTTPResponse, error) {
	return p.do(ctx, http.MethodGet, url, nil, sdk.DefaultHTTPTimeout, opts)
}

// PostJSON implements sdk.HTTP.
func (p *Port) PostJSON(ctx context.Context, url string, payload any, opts ...sdk.RequestOption) (*sdk.HTTPResponse, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, &sdk.ModuleContractError{Message: "payload must be JSON-serializable: " + err.Error(), Err: err}
	}
	return p.do(ctx, http.MethodPost, url, body, sdk.DefaultHTTPTimeout, opts)
}

// Download implements sdk.HTTP: the body is read, bounded and validated
// before it is handed out; a status other than 200 fails.
func (p *Port) Download(ctx context.Context, url string, opts ...sdk.RequestOption) (io.ReadCloser, error) {
	resp, err := p.do(ctx, http.MethodGet, url, nil, sdk.DefaultDownloadTimeout, opts)
	if err != nil {
		return nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, fmt.Errorf("download returned HTTP %d", resp.Status)
	}
	return io.NopCloser(bytes.NewReader(resp.Body)), nil
}

// credentialHeaders are dropped when a redirect changes the origin.
var credentialHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization"}

func (p *Port) do(ctx context.Context, method, rawURL string, body []byte, defTimeout time.Duration, opts []sdk.RequestOption) (*sdk.HTTPResponse, error) {
	p.requests.Add(1)
	o := hostkit.ApplyRequestOptions(defTimeout, opts...)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	header := o.Header.Clone()
	first := ""
	cur := rawURL
	for hop := 0; ; hop++ {
		r, reason, err := hostkit.CheckURLReason(p.module, p.checked, cur)
		if err != nil {
			return nil, p.refuse(reason, p.explain(cur, reason, err))
		}
		u, _ := url.Parse(cur) // CheckURLReason parsed it
		host := u.Hostname()
		if first == "" {
			first = host
		}
		req, err := p.request(ctx, method, u, body, header)
		if err != nil {
			return nil, fmt.Errorf("request to %s failed: cannot build the request", hostkit.Repr(host))
		}
		resp, err := p.client.Do(req)
		if err != nil {
			return nil, p.failure(parent, ctx, host, r, o.Timeout, err)
		}
		if isRedirect(resp.StatusCode) {
			loc := resp.Header.Get("Location")
			drain(resp.Body)
			if loc == "" {
				return nil, fmt.Errorf("redirect without a Location header from %s (rule %s)", hostkit.Repr(host), describeRule(r))
			}
			if hop >= sdk.MaxHTTPRedirects {
				return nil, p.refuse("redirects", hostkit.NewHostNotAllowedError(first, "too many redirects from "+first))
			}
			next, err := u.Parse(loc)
			if err != nil {
				return nil, p.refuse(hostkit.RefusedURL, hostkit.NewHostNotAllowedError(host, "redirect from "+hostkit.Repr(host)+" has an invalid Location"))
			}
			if resp.StatusCode == http.StatusSeeOther || (method == http.MethodPost && (resp.StatusCode == http.StatusMovedPermanently || resp.StatusCode == http.StatusFound)) {
				method, body = http.MethodGet, nil
			}
			if origin(next) != origin(u) {
				for _, h := range credentialHeaders {
					header.Del(h)
				}
			}
			cur = next.String()
			continue
		}
		return p.read(parent, ctx, resp, host, r, o)
	}
}

func (p *Port) request(ctx context.Context, method string, u *url.URL, body []byte, header http.Header) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	req.Header = header.Clone()
	req.Header.Set("User-Agent", p.ua)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// read reads the body under the cap: the declared length first, then the
// bytes as read (after the transport's transparent gzip decoding, so a
// compressed bomb is cut at the cap of its decompressed size).
func (p *Port) read(parent, ctx context.Context, resp *http.Response, host string, r hostkit.ResolvedHostRule, o sdk.RequestOptions) (*sdk.HTTPResponse, error) {
	defer resp.Body.Close()
	if resp.ContentLength > o.MaxBytes {
		return nil, p.refuse("too_large", hostkit.NewResponseTooLargeError(resp.ContentLength, o.MaxBytes))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, o.MaxBytes+1))
	p.bytes.Add(int64(len(data)))
	if err != nil {
		return nil, p.failure(parent, ctx, host, r, o.Timeout, err)
	}
	if int64(len(data)) > o.MaxBytes {
		return nil, p.refuse("too_large", hostkit.NewResponseTooLargeError(0, o.MaxBytes))
	}
	p.notify(nil)
	return &sdk.HTTPResponse{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// explain adds the operator's side to an address refusal of a rule that
// names a private network the operator has not allowed.
func (p *Port) explain(rawURL, reason string, err error) error {
	if reason != hostkit.RefusedAddress {
		return err
	}
	var hna *sdk.HostNotAllowedError
	if !errors.As(err, &hna) {
		return err
	}
	if r, ok := p.rule(hna.Host); ok && r.declaredPrivate && !r.Private {
		return hostkit.NewHostNotAllowedError(hna.Host, hna.Message+"; rule "+describeRule(r.ResolvedHostRule)+
			" names a private network, which the operator has not allowed ("+AllowPrivateNetworkSetting+")")
	}
	return err
}

func (p *Port) rule(host string) (rule, bool) {
	i := slices.IndexFunc(p.rules, func(r rule) bool { return r.Host == host })
	if i < 0 {
		return rule{}, false
	}
	return p.rules[i], true
}

func (p *Port) refuse(reason string, err error) error {
	msg := err.Error()
	p.mu.Lock()
	p.refusals[reason]++
	m := p.metricsLocked()
	p.mu.Unlock()
	if p.observe != nil {
		p.observe(m, &Refusal{Reason: reason, Message: msg})
	}
	return err
}

func (p *Port) notify(ref *Refusal) {
	if p.observe == nil {
		return
	}
	p.observe(p.Metrics(), ref)
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// origin is scheme://host:port with the scheme's default port made explicit.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port)
}

// drain reads a little of a redirect's body so the connection can be
// reused, then closes it.
func drain(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 64<<10)
	_ = body.Close()
}

func describeRule(r hostkit.ResolvedHostRule) string {
	network := "public"
	if r.Private {
		network = "private"
	}
	return hostkit.Repr(r.Host) + " (" + network + ")"
}
