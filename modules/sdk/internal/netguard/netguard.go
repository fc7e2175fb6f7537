// Package netguard classifies hosts the SDK's declaration checks and
// hostkit's request policy both refuse: cloud metadata endpoints and
// non-global IP literals.
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
	metadataAddresses = []string{"169.254.169.254", "fd00:ec2::254", "100.100.100.200"}
)

// IsMetadataHost reports whether host (lowercase) is a cloud metadata
// endpoint.
func IsMetadataHost(host string) bool {
	return slices.Contains(metadataHosts, host) || slices.Contains(metadataAddresses, host)
}

// IsNonGlobalIP reports whether host is an IP literal that is not a global
// unicast address (loopback, private, link-local, unspecified, multicast,
// shared, documentation…). Hostnames return false.
func IsNonGlobalIP(host string) bool {
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	if !addr.IsGlobalUnicast() || addr.IsPrivate() {
		return true
	}
	for _, p := range nonGlobalPrefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

var nonGlobalPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "240.0.0.0/4", "2001:db8::/32", "2001::/23", "64:ff9b:1::/48",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()
