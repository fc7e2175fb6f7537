// Package netguard classifies hosts the SDK's declaration checks and
// hostkit's request policy both refuse: cloud metadata endpoints and
// non-global IP addresses, in every form an address can take (IPv4-mapped,
// IPv4-compatible, NAT64, 6to4 and Teredo embeddings).
package netguard

import (
	"net/netip"
	"slices"
	"strings"
)

// metadataHosts and metadataAddresses are cloud metadata endpoints no module
// may ever reach.
var (
	metadataHosts     = []string{"metadata.google.internal", "metadata", "instance-data"}
	metadataAddresses = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("100.100.100.200"),
		// AWS ECS/Fargate task metadata and credentials, and its IPv6 form.
		netip.MustParseAddr("169.254.170.2"), netip.MustParseAddr("fd00:ec2::23"),
	}
)

// IsMetadataHost reports whether host (lowercase; a trailing dot and IPv6
// brackets are ignored) is a cloud metadata endpoint, by name or by address
// in any of its forms (::ffff:169.254.169.254, 64:ff9b::a9fe:a9fe, …).
func IsMetadataHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	if slices.Contains(metadataHosts, host) {
		return true
	}
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && IsMetadataAddr(addr)
}

// IsMetadataAddr reports whether addr, or an IPv4 address embedded in it, is
// a cloud metadata endpoint.
func IsMetadataAddr(addr netip.Addr) bool {
	for _, a := range forms(addr) {
		if slices.Contains(metadataAddresses, a) {
			return true
		}
	}
	return false
}

// IsNonGlobalIP reports whether host is an IP literal that is not a global
// unicast address (loopback, private, link-local, unspecified, multicast,
// shared, documentation…), or embeds one. Hostnames return false.
func IsNonGlobalIP(host string) bool {
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return false
	}
	return Classify(addr) != ""
}

// Address classes Classify returns.
const (
	ClassMetadata       = "metadata"
	ClassLoopback       = "loopback"
	ClassPrivate        = "private"
	ClassLinkLocal      = "link-local"
	ClassShared         = "cgnat"
	ClassMulticast      = "multicast"
	ClassUnspecified    = "unspecified"
	ClassReserved       = "reserved"
	ClassIPv4Compatible = "ipv4-compatible"
)

// Classify returns why addr is not a global unicast address ("" if it is):
// one of the Class constants. An IPv6 address that embeds an IPv4 address
// (IPv4-mapped ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16) is
// classified by the embedded address too; Teredo (2001::/32) and the
// deprecated IPv4-compatible ::/96 are refused whatever they embed.
func Classify(addr netip.Addr) string {
	addr = addr.WithZone("")
	if IsMetadataAddr(addr) {
		return ClassMetadata
	}
	for _, a := range forms(addr) {
		if c := classifyOne(a); c != "" {
			return c
		}
	}
	if addr.Is6() && !addr.Is4In6() && ipv4Compatible.Contains(addr) {
		return ClassIPv4Compatible
	}
	return ""
}

func classifyOne(a netip.Addr) string {
	switch {
	case a.IsUnspecified():
		return ClassUnspecified
	case a.IsLoopback():
		return ClassLoopback
	case a.IsMulticast():
		return ClassMulticast
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return ClassLinkLocal
	case a.IsPrivate():
		return ClassPrivate
	case shared.Contains(a):
		return ClassShared
	case !a.IsGlobalUnicast():
		return ClassReserved
	}
	for _, p := range nonGlobalPrefixes {
		if p.Contains(a) {
			return ClassReserved
		}
	}
	return ""
}

// forms returns addr (IPv4-mapped addresses unmapped) followed by any IPv4
// address embedded in it by NAT64 or 6to4.
func forms(addr netip.Addr) []netip.Addr {
	addr = addr.Unmap()
	out := []netip.Addr{addr}
	if !addr.Is6() {
		return out
	}
	b := addr.As16()
	switch {
	case nat64.Contains(addr):
		out = append(out, netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	case sixToFour.Contains(addr):
		out = append(out, netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	return out
}

var (
	shared         = netip.MustParsePrefix("100.64.0.0/10")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	ipv4Compatible = netip.MustParsePrefix("::/96")
)

var nonGlobalPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "240.0.0.0/4", "2001:db8::/32", "2001::/23", "64:ff9b:1::/48",
		"100::/64", "fec0::/10", "3fff::/20",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()
