package kimitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// A module's HTTP egress in tests: its declared hosts are pointed at the
// test's servers (WithHTTPHost), through the host's real egress — its
// rules (scheme, host, port), the response caps, redirects checked hop by
// hop, content types — with only the name's resolution and the address
// check replaced (the address is the test's own). This is for test
// binaries only: the egress refuses it in any other build.

// NewTLSServer starts an HTTPS test server whose certificate is valid for
// hosts (the names a module declares, e.g. "api.example.com") and stops
// it when the test ends. Pass it to WithHTTPHost for each of them.
func NewTLSServer(t testing.TB, handler http.Handler, hosts ...string) *httptest.Server {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("kimitest: key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "kimitest " + strings.Join(hosts, " ")},
		DNSNames:     hosts,
		IPAddresses:  nil,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		// Its own authority: the appliance trusts exactly this certificate.
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("kimitest: certificate: %v", err)
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// WithHTTPHost sends the modules' requests to host (as declared in their
// HTTPHosts, any port) to srv, and trusts srv's certificate when it is a
// TLS server (NewTLSServer's is valid for the names it was made for). A
// plain httptest server serves the rules that declare the http scheme.
func WithHTTPHost(host string, srv *httptest.Server) Option {
	return func(o *options) {
		ap, err := netip.ParseAddrPort(srv.Listener.Addr().String())
		if err != nil {
			panic("kimitest: WithHTTPHost: the server's address: " + err.Error())
		}
		if o.routes == nil {
			o.routes = map[string]netip.AddrPort{}
		}
		o.routes[strings.ToLower(host)] = ap
		if c := srv.Certificate(); c != nil {
			if o.roots == nil {
				o.roots = x509.NewCertPool()
			}
			o.roots.AddCert(c)
		}
	}
}
