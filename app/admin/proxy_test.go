package admin

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/store"
)

func prefixes(ss ...string) trustedProxies {
	var out trustedProxies
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// TestClientIP pins the client-address rule: only configured proxies are
// believed, X-Forwarded-For is walked from the right, and no value the
// client wrote gets through.
func TestClientIP(t *testing.T) {
	proxy := prefixes("127.0.0.1/32", "10.0.0.0/8", "fd00::/8")
	tests := []struct {
		name    string
		trusted trustedProxies
		peer    string
		xff     []string
		want    string
	}{
		{"no proxies: peer, header ignored", nil, "192.0.2.7:5000", []string{"198.51.100.1"}, "192.0.2.7"},
		{"untrusted peer: its header ignored", proxy, "192.0.2.7:5000", []string{"198.51.100.1"}, "192.0.2.7"},
		{"private untrusted peer: its header ignored", proxy, "192.168.1.50:5000", []string{"198.51.100.1"}, "192.168.1.50"},
		{"trusted peer, no header", proxy, "127.0.0.1:5000", nil, "127.0.0.1"},
		{"trusted peer appends the client", proxy, "127.0.0.1:5000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"forged leftmost entry ignored", proxy, "127.0.0.1:5000", []string{"1.2.3.4, 203.0.113.5"}, "203.0.113.5"},
		{"forged leftmost, private client (every hop private)", proxy, "127.0.0.1:5000", []string{"8.8.8.8, 192.168.1.50"}, "192.168.1.50"},
		{"chain of trusted proxies", proxy, "127.0.0.1:5000", []string{"203.0.113.5, 10.1.1.1, 10.2.2.2"}, "203.0.113.5"},
		{"chain over several header lines", proxy, "127.0.0.1:5000", []string{"9.9.9.9, 203.0.113.5", "10.1.1.1"}, "203.0.113.5"},
		{"forged trusted-looking entry left of the client", proxy, "127.0.0.1:5000", []string{"10.9.9.9, 203.0.113.5"}, "203.0.113.5"},
		{"all trusted: leftmost (written by a trusted hop)", proxy, "127.0.0.1:5000", []string{"10.1.1.1, 10.2.2.2"}, "10.1.1.1"},
		{"garbage entry: the hop that passed it on", proxy, "127.0.0.1:5000", []string{"203.0.113.5, not-an-ip, 10.2.2.2"}, "10.2.2.2"},
		{"garbage right at the peer", proxy, "127.0.0.1:5000", []string{"203.0.113.5, <script>"}, "127.0.0.1"},
		{"empty entry is garbage", proxy, "127.0.0.1:5000", []string{"203.0.113.5,,"}, "127.0.0.1"},
		{"empty header line is garbage", proxy, "127.0.0.1:5000", []string{""}, "127.0.0.1"},
		{"over-long entry is garbage", proxy, "127.0.0.1:5000", []string{strings.Repeat("1", 100)}, "127.0.0.1"},
		{"ipv6 client", proxy, "127.0.0.1:5000", []string{"2001:db8::1"}, "2001:db8::1"},
		{"bracketed ipv6 client", proxy, "127.0.0.1:5000", []string{"[2001:db8::1]"}, "2001:db8::1"},
		{"ipv6 client with port", proxy, "127.0.0.1:5000", []string{"[2001:db8::1]:4711"}, "2001:db8::1"},
		{"ipv4 client with port", proxy, "127.0.0.1:5000", []string{"203.0.113.5:4711"}, "203.0.113.5"},
		{"ipv6 trusted peer", proxy, "[fd00::2]:5000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"ipv6 untrusted peer", proxy, "[2001:db8::9]:5000", []string{"203.0.113.5"}, "2001:db8::9"},
		{"ipv4-mapped peer counts as ipv4", proxy, "[::ffff:127.0.0.1]:5000", []string{"203.0.113.5"}, "203.0.113.5"},
		{"ipv4-mapped client reported as ipv4", proxy, "127.0.0.1:5000", []string{"::ffff:203.0.113.5"}, "203.0.113.5"},
		{"zone dropped", proxy, "127.0.0.1:5000", []string{"fe80::1%eth0"}, "fe80::1"},
		{"bracketed ipv4 is garbage", proxy, "127.0.0.1:5000", []string{"[203.0.113.5]"}, "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.trusted.clientIP(tt.peer, tt.xff); got != tt.want {
				t.Fatalf("clientIP(%q, %q) = %q, want %q", tt.peer, tt.xff, got, tt.want)
			}
		})
	}
}

// FuzzClientIP: whatever the header says, an untrusted peer is the client,
// and the answer is always the peer or an address that appears in the
// header — never anything else, and never a panic.
func FuzzClientIP(f *testing.F) {
	for _, s := range []string{"203.0.113.5", "1.2.3.4, 203.0.113.5", "10.1.1.1, 10.2.2.2", "[2001:db8::1]:80", ",,", "garbage, 10.0.0.1", "::ffff:1.2.3.4"} {
		f.Add("127.0.0.1:5000", s)
		f.Add("192.0.2.7:5000", s)
	}
	proxy := prefixes("127.0.0.1/32", "10.0.0.0/8", "fd00::/8")
	f.Fuzz(func(t *testing.T, peer, xff string) {
		got := proxy.clientIP(peer, []string{xff})
		p, ok := parseHop(peer)
		if !ok {
			if got != peer {
				t.Fatalf("unparsable peer %q: got %q, want it unchanged", peer, got)
			}
			return
		}
		if !proxy.contains(p) {
			if got != p.String() {
				t.Fatalf("untrusted peer %q: got %q, want the peer", peer, got)
			}
			return
		}
		if got == p.String() {
			return
		}
		for _, e := range strings.Split(xff, ",") {
			if a, ok := parseHop(e); ok && a.String() == got {
				return
			}
		}
		t.Fatalf("clientIP(%q, %q) = %q: neither the peer nor a header entry", peer, xff, got)
	})
}

// TestForgedForwardedForFromPrivateClient reproduces the KIMI_TRUST_PROXY
// attack: behind a proxy on this host, a client on the private network
// writes a fresh address into X-Forwarded-For on every attempt. echo's
// extractor trusted the private hop and returned the forged leftmost entry
// (a fresh budget per guess, a forged audit address); now only the
// configured proxy is trusted, so the client's real address is spent (429
// after the burst) and is what the audit row records.
func TestForgedForwardedForFromPrivateClient(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.TrustedProxies = prefixes("127.0.0.1/32", "::1/128") })
	h.createAdmin()
	csrf := preSessionCSRF(t, h)
	const real = "192.168.1.50" // what the proxy appends: the client it saw
	var statuses []int
	for i := range h.srv.opts.LoginBurst + 5 {
		forged := fmt.Sprintf("203.0.113.%d", i+1) // what the client wrote
		res, err := postLogin(h, csrf, forged+", "+real, fmt.Sprintf("guess-%d", i), "wrong-password")
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, res.status)
	}
	for i, st := range statuses {
		want := http.StatusUnauthorized
		if i >= h.srv.opts.LoginBurst {
			want = http.StatusTooManyRequests
		}
		if st != want {
			t.Fatalf("attempt %d = %d, want %d (statuses %v)", i+1, st, want, statuses)
		}
	}
	entries, _, err := h.st.ListAudit(t.Context(), store.AuditFilter{Action: auth.ActionLoginFailed, Limit: store.AuditPageMax})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != h.srv.opts.LoginBurst {
		t.Fatalf("%d failed-login rows, want %d", len(entries), h.srv.opts.LoginBurst)
	}
	for _, e := range entries {
		if e.IP != real {
			t.Errorf("audit row IP %q, want the real client %q", e.IP, real)
		}
	}
}
