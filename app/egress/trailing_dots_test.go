package egress

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestTrailingDotsAgree: the URL check (CheckURLReason) and the dialer
// agree on a host written with trailing dots. "nas.lan." and "nas.lan.."
// either reach the declared "nas.lan" or are refused with an error that
// names the rule; the URL check may not accept a host that the dialer then
// finds no rule for and refuses with a zero-valued error ("invalid IP",
// "undeclared address", the empty rule (public)), as happened when one
// stripped every trailing dot (strings.TrimRight) and the other only one
// (strings.TrimSuffix).
func TestTrailingDotsAgree(t *testing.T) {
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
