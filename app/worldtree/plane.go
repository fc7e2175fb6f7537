package worldtree

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Bifrost planes (Bifrost #18) and the ports they listen on.
const (
	PlaneMemory   = "memory"   // port 8391
	PlaneAffect   = "affect"   // port 8390
	PlaneCombined = "combined" // port 8392
)

// planePorts maps a plane to its port.
var planePorts = map[string]int{PlaneMemory: 8391, PlaneAffect: 8390, PlaneCombined: 8392}

// EndpointForPlane returns the Worldtree-visible Bifrost base URL of plane on host:
// "memory" -> http://host:8391, "affect" -> http://host:8390, "combined" -> http://host:8392.
// Any other plane fails with ErrUnknownPlane. host is a name or an IP address without a port;
// an IPv6 address is bracketed.
func EndpointForPlane(plane, host string) (string, error) {
	port, ok := planePorts[plane]
	if !ok {
		return "", fmt.Errorf("worldtree: endpoint for plane: %w %q (want memory, affect or combined)",
			ErrUnknownPlane, truncateString(plane, 64))
	}
	if host == "" {
		return "", fmt.Errorf("worldtree: endpoint for plane: %w: host is empty", ErrInvalidArgument)
	}
	if strings.ContainsAny(host, "/?#@[] \t\r\n") || (strings.Contains(host, ":") && net.ParseIP(host) == nil) {
		return "", fmt.Errorf("worldtree: endpoint for plane: %w: host %q must be a name or IP address without port or path",
			ErrInvalidArgument, truncateString(host, 64))
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port)), nil
}
