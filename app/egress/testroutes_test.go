package egress

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestTestRoutesReachTheTestsServer: in a test binary, a declared host
// routed to a local server is served by it through the port's checks (a
// loopback address the rules would refuse), while an undeclared host is
// still refused.
func TestTestRoutesReachTheTestsServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"host":%q}`, r.Host)
	}))
	defer srv.Close()
	p, err := New(Options{Module: "m", Rules: []sdk.HostRule{{Host: "api.example.com", Schemes: []string{"http"}}},
		TestRoutes: map[string]netip.AddrPort{"api.example.com": netip.MustParseAddrPort(strings.TrimPrefix(srv.URL, "http://"))}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Get(context.Background(), "http://api.example.com/x")
	if err != nil {
		t.Fatalf("routed request: %v", err)
	}
	if got := string(resp.Body); got != `{"host":"api.example.com"}` {
		t.Fatalf("the server saw %s", got)
	}
	var refused *sdk.HostNotAllowedError
	if _, err := p.Get(context.Background(), "http://other.example.com/x"); !errors.As(err, &refused) {
		t.Fatalf("an undeclared host: %v, want refused", err)
	}
}

// TestTestRoutesOnlyInTestBinaries: an ordinary binary (not built by go
// test) that asks for test routes is refused with ErrTestRoutes.
func TestTestRoutesOnlyInTestBinaries(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "routesguard")
	build := exec.Command("go", "build", "-o", bin, "./testdata/routesguard/main.go")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "refused" {
		t.Fatalf("routesguard: %v: %s", err, out)
	}
}
