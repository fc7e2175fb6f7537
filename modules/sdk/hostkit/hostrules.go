package hostkit

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/internal/netguard"
)

// ResolvedHostRule is a HostRule after load-time resolution: one exact host.
type ResolvedHostRule struct {
	Host    string
	Schemes []string
	// Ports empty means only the scheme's default port.
	Ports   []int
	Private bool
}

// ResolveHostRules expands declared rules at load: DiscordCDNToken becomes
// two https rules; "${setting}" takes the setting's host or URL (a bare host
// gets https://; the URL's scheme and port replace the rule's). Messages:
// "module 'm' http host ${s} names an unknown setting",
// "http host setting is empty", "http host setting has no host",
// "module 'm' may not target 'h'" (cloud metadata endpoints).
func ResolveHostRules(module string, rules []sdk.HostRule, settings sdk.Settings) ([]ResolvedHostRule, error) {
	var out []ResolvedHostRule
	for _, rule := range rules {
		if rule.IsDiscordCDN() {
			for _, h := range DiscordCDNHosts() {
				out = append(out, ResolvedHostRule{Host: h, Schemes: []string{"https"}})
			}
			continue
		}
		host, schemes, ports := strings.ToLower(rule.Host), rule.EffectiveSchemes(), slices.Clone(rule.Ports)
		if name, ok := rule.SettingName(); ok {
			value, found := settings.Lookup(name)
			if !found {
				return nil, contractErrorf("module %s http host ${%s} names an unknown setting", pyRepr(module), name)
			}
			h, scheme, port, err := hostFromSetting(pyStr(value))
			if err != nil {
				return nil, err
			}
			host = h
			if scheme != "" {
				schemes = []string{scheme}
			}
			if port != 0 {
				ports = []int{port}
			}
		}
		if netguard.IsMetadataHost(host) {
			return nil, contractErrorf("module %s may not target %s", pyRepr(module), pyRepr(host))
		}
		out = append(out, ResolvedHostRule{Host: host, Schemes: schemes, Ports: ports, Private: rule.EffectiveNetwork() == sdk.NetworkPrivate})
	}
	return out, nil
}

func hostFromSetting(text string) (host, scheme string, port int, err error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", "", 0, contractErrorf("http host setting is empty")
	}
	if !strings.Contains(text, "://") {
		text = "https://" + text
	}
	u, perr := url.Parse(text)
	if perr != nil || u.Hostname() == "" {
		return "", "", 0, contractErrorf("http host setting has no host")
	}
	if p := u.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	}
	return strings.ToLower(u.Hostname()), strings.ToLower(u.Scheme), port, nil
}

// CheckURL applies the per-request policy to one URL (and every redirect
// hop): http(s) only, a host, no credentials, a declared host, an allowed
// scheme and port, no non-global IP literal unless the rule is private, and
// never a metadata endpoint. Failures are *HostNotAllowedError with the
// reference's messages (for example "module 'm' did not declare host 'h'").
func CheckURL(module string, rules []ResolvedHostRule, rawURL string) (ResolvedHostRule, error) {
	rule, _, err := CheckURLReason(module, rules, rawURL)
	return rule, err
}

// Refusal reasons CheckURLReason returns beside its error, for a host's
// metrics.
const (
	RefusedURL          = "url"
	RefusedCredentials  = "credentials"
	RefusedUndeclared   = "undeclared_host"
	RefusedScheme       = "scheme"
	RefusedPort         = "port"
	RefusedAddress      = "address"
	RefusedMetadataHost = "metadata"
)

// CheckURLReason is CheckURL that also names the refusal's reason (one of
// the Refused constants; "" when the URL is allowed).
func CheckURLReason(module string, rules []ResolvedHostRule, rawURL string) (ResolvedHostRule, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ResolvedHostRule{}, RefusedURL, NewHostNotAllowedError("", "URL has no host")
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(strings.TrimRight(u.Hostname(), "."))
	if scheme != "http" && scheme != "https" {
		return ResolvedHostRule{}, RefusedURL, NewHostNotAllowedError(host, "module "+pyRepr(module)+" may only use http(s) URLs")
	}
	if host == "" {
		return ResolvedHostRule{}, RefusedURL, NewHostNotAllowedError(host, "URL has no host")
	}
	if u.User != nil {
		return ResolvedHostRule{}, RefusedCredentials, NewHostNotAllowedError(host, "URLs with embedded credentials are not allowed")
	}
	if netguard.IsMetadataHost(host) {
		return ResolvedHostRule{}, RefusedMetadataHost, NewHostNotAllowedError(host, "cloud metadata endpoints are never allowed")
	}
	i := slices.IndexFunc(rules, func(r ResolvedHostRule) bool { return r.Host == host })
	if i < 0 {
		return ResolvedHostRule{}, RefusedUndeclared, NewHostNotAllowedError(host, "module "+pyRepr(module)+" did not declare host "+pyRepr(host))
	}
	rule := rules[i]
	if !slices.Contains(rule.Schemes, scheme) {
		return ResolvedHostRule{}, RefusedScheme, NewHostNotAllowedError(host, "scheme "+pyRepr(scheme)+" is not allowed for "+pyRepr(host))
	}
	port := 0
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return ResolvedHostRule{}, RefusedPort, NewHostNotAllowedError(host, "invalid port")
		}
		port = n
	}
	if !rule.AllowsPort(scheme, port) {
		shown := "None"
		if port != 0 {
			shown = strconv.Itoa(port)
		}
		return ResolvedHostRule{}, RefusedPort, NewHostNotAllowedError(host, "port "+shown+" is not allowed for "+pyRepr(host))
	}
	if !rule.Private && IsNonGlobalIP(host) {
		return ResolvedHostRule{}, RefusedAddress, NewHostNotAllowedError(host, "private or internal addresses are not allowed")
	}
	return rule, "", nil
}

// DiscordCDNHosts are the hosts DiscordCDNToken expands to.
func DiscordCDNHosts() []string { return []string{"cdn.discordapp.com", "media.discordapp.net"} }

// ApplyRequestOptions resolves opts over the defaults: the given timeout and
// MaxHTTPBodyBytes; non-positive or larger limits become MaxHTTPBodyBytes.
func ApplyRequestOptions(defaultTimeout time.Duration, opts ...sdk.RequestOption) sdk.RequestOptions {
	o := sdk.RequestOptions{Header: http.Header{}, Timeout: defaultTimeout, MaxBytes: sdk.MaxHTTPBodyBytes}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.MaxBytes <= 0 || o.MaxBytes > sdk.MaxHTTPBodyBytes {
		o.MaxBytes = sdk.MaxHTTPBodyBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	return o
}

// AllowsPort reports whether the effective port (port, or the scheme's
// default when port is 0) is allowed.
func (r ResolvedHostRule) AllowsPort(scheme string, port int) bool {
	def := 80
	if scheme == "https" {
		def = 443
	}
	if port == 0 {
		port = def
	}
	if len(r.Ports) > 0 {
		return slices.Contains(r.Ports, port)
	}
	return port == def
}

// IsMetadataHost reports whether host (lowercase) is a cloud metadata
// endpoint.
func IsMetadataHost(host string) bool { return netguard.IsMetadataHost(host) }

// IsNonGlobalIP reports whether host is an IP literal that is not a global
// unicast address (loopback, private, link-local, unspecified, multicast,
// shared, documentation…) or embeds one (IPv4-mapped, IPv4-compatible,
// NAT64, 6to4, Teredo). Hostnames return false.
func IsNonGlobalIP(host string) bool { return netguard.IsNonGlobalIP(host) }

// ClassifyAddr returns why addr is not a global unicast address, "" if it
// is: "metadata", "loopback", "private", "link-local", "cgnat",
// "multicast", "unspecified", "reserved" or "ipv4-compatible". IPv6 forms
// that embed an IPv4 address are classified by the embedded address too.
func ClassifyAddr(addr netip.Addr) string { return netguard.Classify(addr) }

// IsMetadataAddr reports whether addr, in any form, is a cloud metadata
// endpoint.
func IsMetadataAddr(addr netip.Addr) bool { return netguard.IsMetadataAddr(addr) }
