package admin

import (
	"net/http"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/store"
)

// trustedProxies is the set of reverse proxies whose forwarding headers are
// believed (Options.TrustedProxies).
type trustedProxies []netip.Prefix

func (t trustedProxies) contains(a netip.Addr) bool {
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ipExtractor is echo's IPExtractor (c.RealIP) for the sign-in budget, the
// audit log and the access log. echo's own ExtractIPFromXFFHeader is not
// used: it trusts every loopback, link-local and private hop by default and,
// when every entry is trusted, returns the leftmost X-Forwarded-For entry
// (echo v4.16.4 ip.go:279-280), which the client writes itself.
func (t trustedProxies) ipExtractor() echo.IPExtractor {
	return func(r *http.Request) string {
		return t.clientIP(r.RemoteAddr, r.Header.Values(echo.HeaderXForwardedFor))
	}
}

// clientIP is the address of the client behind remoteAddr (the direct peer)
// and the X-Forwarded-For header lines xff. The rule is that no value the
// client chose gets through:
//   - a peer that is not a trusted proxy is the client; its headers are
//     ignored;
//   - otherwise X-Forwarded-For is walked from the right (each entry was
//     appended by the hop to its right) and the first address that is not a
//     trusted proxy is the client;
//   - a malformed entry ends the walk: the trusted hop that passed it on is
//     the answer, since nothing to its left can be vouched for;
//   - when every entry is a trusted proxy, the leftmost entry is the answer:
//     each entry was appended by a trusted hop, so it is real (e.g. a browser
//     on the proxy host itself).
//
// Entries may be bare addresses, bracketed IPv6, or either with a port;
// zones are dropped and IPv4-mapped IPv6 counts as IPv4.
func (t trustedProxies) clientIP(remoteAddr string, xff []string) string {
	peer, ok := parseHop(remoteAddr)
	if !ok {
		return remoteAddr // not from net/http's listener (tests, unix sockets): report it as is
	}
	if !t.contains(peer) || len(xff) == 0 {
		return peer.String()
	}
	hop := peer
	entries := strings.Split(strings.Join(xff, ","), ",")
	for i := len(entries) - 1; i >= 0; i-- {
		a, ok := parseHop(entries[i])
		if !ok {
			return hop.String()
		}
		if !t.contains(a) {
			return a.String()
		}
		hop = a
	}
	return hop.String()
}

// fromTrustedProxy reports whether r's direct peer is a trusted proxy, whose
// X-Forwarded-Proto is then believed.
func (t trustedProxies) fromTrustedProxy(r *http.Request) bool {
	peer, ok := parseHop(r.RemoteAddr)
	return ok && t.contains(peer)
}

// parseHop reads one address: "192.0.2.1", "2001:db8::1", "[2001:db8::1]",
// "192.0.2.1:443" or "[2001:db8::1]:443".
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return netip.Addr{}, false
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		s = s[1 : len(s)-1]
		if !strings.Contains(s, ":") {
			return netip.Addr{}, false // "[192.0.2.1]" is not a form any proxy writes
		}
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// auditAddress gives the request's context its client address (c.RealIP,
// through the trusted proxies), so every audit row written for the request
// records it, including those the services below the admin write without
// an IP of their own (tasks, modules, jobs, backups).
func auditAddress(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		c.SetRequest(r.WithContext(store.WithAuditAddress(r.Context(), c.RealIP())))
		return next(c)
	}
}
