package sdk

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"time"
)

// HTTP limits.
const (
	// MaxHTTPBodyBytes is the host's ceiling for any response body (8 MiB),
	// also the default limit.
	MaxHTTPBodyBytes = 8 << 20
	// DefaultHTTPTimeout applies to Get and PostJSON.
	DefaultHTTPTimeout = 20 * time.Second
	// DefaultDownloadTimeout applies to Download.
	DefaultDownloadTimeout = 30 * time.Second
	// MaxHTTPRedirects bounds followed redirects.
	MaxHTTPRedirects = 5
	// DiscordCDNToken as a HostRule.Host stands for Discord's CDN hosts.
	DiscordCDNToken = "discord-cdn"
)

// HTTP is the outbound HTTP port. Every request and redirect hop must match
// a declared HostRule (else *HostNotAllowedError); bodies over the limit fail
// with *ResponseTooLargeError and are never truncated; URLs with credentials are
// refused; cloud metadata endpoints are always blocked.
type HTTP interface {
	// Get fetches url.
	Get(ctx context.Context, url string, opts ...RequestOption) (*HTTPResponse, error)
	// PostJSON posts payload as JSON (never retried).
	PostJSON(ctx context.Context, url string, payload any, opts ...RequestOption) (*HTTPResponse, error)
	// Download fetches url and returns its validated, bounded body; a
	// non-200 status fails ("download returned HTTP N").
	Download(ctx context.Context, url string, opts ...RequestOption) (io.ReadCloser, error)
}

// HTTPResponse is a buffered response.
type HTTPResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON unmarshals the body into v.
func (r *HTTPResponse) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// RequestOption customizes one request.
type RequestOption func(*RequestOptions)

// RequestOptions are the resolved options of one request; implementations
// of HTTP obtain them with ApplyRequestOptions.
type RequestOptions struct {
	Header   http.Header
	Timeout  time.Duration
	MaxBytes int64
}

// WithHeader adds a request header.
func WithHeader(key, value string) RequestOption {
	return func(o *RequestOptions) {
		if o.Header == nil {
			o.Header = http.Header{}
		}
		o.Header.Add(key, value)
	}
}

// WithTimeout sets the request timeout (a ctx deadline also applies).
func WithTimeout(d time.Duration) RequestOption { return func(o *RequestOptions) { o.Timeout = d } }

// WithMaxBytes sets the body limit; the host caps it at MaxHTTPBodyBytes.
func WithMaxBytes(n int64) RequestOption { return func(o *RequestOptions) { o.MaxBytes = n } }

// Network is the address policy of a HostRule.
type Network string

// Networks; "" means NetworkPublic.
const (
	NetworkPublic  Network = "public"
	NetworkPrivate Network = "private"
)

// HostRule declares one outbound destination. Host is an exact lowercase
// hostname (no wildcards), DiscordCDNToken, or "${setting}" naming a module
// setting whose value (a host or URL) is resolved at load. Schemes default
// to https; Ports empty means the scheme's default port; Private permits
// that exact host's non-public address (never a range).
type HostRule struct {
	Host    string
	Schemes []string
	Ports   []int
	Network Network
}

// EffectiveSchemes returns Schemes or the default ["https"].
func (r HostRule) EffectiveSchemes() []string {
	if len(r.Schemes) == 0 {
		return []string{"https"}
	}
	return slices.Clone(r.Schemes)
}

// EffectiveNetwork returns Network or NetworkPublic.
func (r HostRule) EffectiveNetwork() Network {
	if r.Network == "" {
		return NetworkPublic
	}
	return r.Network
}

// SettingName returns the setting a "${name}" host refers to.
func (r HostRule) SettingName() (string, bool) {
	m := settingRefRE.FindStringSubmatch(r.Host)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// IsDiscordCDN reports whether Host is DiscordCDNToken.
func (r HostRule) IsDiscordCDN() bool { return r.Host == DiscordCDNToken }

var (
	// hostRE is the reference's _HOST_RE without the look-ahead, which Go's
	// RE2 lacks; the 1..253 length check is done separately.
	hostRE       = regexp.MustCompile(`\A([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9-]{1,63}\z`)
	settingRefRE = regexp.MustCompile(`\A\$\{([a-z][a-z0-9_]{0,63})\}\z`)
)

// validHostname reports whether host is an exact lowercase hostname of 1–253
// characters (labels of letters, digits and inner hyphens; no wildcard).
func validHostname(host string) bool {
	return len(host) >= 1 && len(host) <= 253 && hostRE.MatchString(host)
}

// validateHostRule checks a rule. Messages: "invalid HTTP host 'h';
// wildcards are not supported", "discord-cdn is always public",
// "invalid schemes ('ftp',) for host 'h'", "invalid ports (0,) for host 'h'",
// "invalid network 'n' for host 'h'".
func validateHostRule(rule HostRule) error {
	_, isSetting := rule.SettingName()
	if !rule.IsDiscordCDN() && !isSetting && !validHostname(rule.Host) {
		return contractErrorf("invalid HTTP host %s; wildcards are not supported", pyRepr(rule.Host))
	}
	network := rule.EffectiveNetwork()
	if network != NetworkPublic && network != NetworkPrivate {
		return contractErrorf("invalid network %s for host %s", pyRepr(string(rule.Network)), pyRepr(rule.Host))
	}
	if rule.IsDiscordCDN() && network != NetworkPublic {
		return contractErrorf("discord-cdn is always public")
	}
	for _, s := range rule.Schemes {
		if s != "http" && s != "https" {
			return contractErrorf("invalid schemes %s for host %s", pyTupleStrings(rule.Schemes), pyRepr(rule.Host))
		}
	}
	for _, p := range rule.Ports {
		if p <= 0 || p > 65535 {
			return contractErrorf("invalid ports %s for host %s", pyTupleInts(rule.Ports), pyRepr(rule.Host))
		}
	}
	return nil
}
