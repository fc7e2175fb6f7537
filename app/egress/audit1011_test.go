package egress

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestAuditTrailingDotsAgree: CheckURLReason strips every trailing dot of
// the host (strings.TrimRight) and accepts "nas.lan.." as the declared
// "nas.lan", but dial strips only one (strings.TrimSuffix), finds no rule
// for "nas.lan." and refuses with a zero-valued error ("invalid IP",
// "undeclared address", rule ” (public)). Both checks must agree on the
// host: the request either reaches the declared host or is refused with
// an error that names the rule.
func TestAuditTrailingDotsAgree(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "in") })
	for _, host := range []string{"nas.lan.", "nas.lan.."} {
		t.Run(host, func(t *testing.T) {
			p := newPort(t, Options{Rules: []sdk.HostRule{httpRule("nas.lan", sdk.NetworkPrivate, s.port)},
				Settings: allowed(t, true), Resolver: resolverFor("nas.lan", "127.0.0.1")})
			resp, err := p.Get(context.Background(), s.urlFor(host, "/"))
			if err == nil {
				if string(resp.Body) != "in" {
					t.Fatalf("body %q", resp.Body)
				}
				return
			}
			if msg := err.Error(); strings.Contains(msg, "invalid IP") || strings.Contains(msg, "rule '' ") {
				t.Fatalf("the URL check accepted %q but the dialer refused it as undeclared: %v", host, err)
			}
		})
	}
}
