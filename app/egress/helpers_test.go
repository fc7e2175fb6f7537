package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// fakeResolver answers from a table; every other name is not found.
type fakeResolver struct {
	mu    sync.Mutex
	names map[string][]netip.Addr
	calls int
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if a, ok := r.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func resolverFor(pairs ...string) *fakeResolver {
	r := &fakeResolver{names: map[string][]netip.Addr{}}
	for i := 0; i+1 < len(pairs); i += 2 {
		r.names[pairs[i]] = append(r.names[pairs[i]], netip.MustParseAddr(pairs[i+1]))
	}
	return r
}

// server is a loopback test server that counts its requests.
type server struct {
	*httptest.Server
	hits atomic.Int64
	port int
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	s.port, _ = strconv.Atoi(u.Port())
	return s
}

// urlFor is the server's URL under host name.
func (s *server) urlFor(host, path string) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(s.port)) + path
}

// httpRule is an http rule for host on the given ports.
func httpRule(host string, network sdk.Network, ports ...int) sdk.HostRule {
	return sdk.HostRule{Host: host, Schemes: []string{"http"}, Ports: ports, Network: network}
}

// allowed are settings with the operator's private-network allowance.
func allowed(t *testing.T, on bool) sdk.Settings {
	t.Helper()
	spec := WithAllowanceSetting(sdk.Spec{Name: "m", Permissions: sdk.Permissions{HTTPHosts: []sdk.HostRule{{Host: "x", Network: sdk.NetworkPrivate}}}})
	s, err := spec.Settings.Prepare("m", map[string]string{AllowPrivateNetworkSetting: strconv.FormatBool(on)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newPort(t *testing.T, opts Options) *Port {
	t.Helper()
	if opts.Module == "" {
		opts.Module = "m"
	}
	p, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(p.CloseIdleConnections)
	return p
}

func hostNotAllowed(t *testing.T, err error, want string) {
	t.Helper()
	var hna *sdk.HostNotAllowedError
	if !errors.As(err, &hna) {
		t.Fatalf("want *sdk.HostNotAllowedError containing %q, got %T %v", want, err, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func asContract(err error, target **sdk.ModuleContractError) bool { return errors.As(err, target) }

func asHNA(err error, target **sdk.HostNotAllowedError) bool { return errors.As(err, target) }
