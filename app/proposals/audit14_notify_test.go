package proposals

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kimiapp/kimi/app/egress"
)

// privateResolver resolves every name to 127.0.0.1 (a public-looking
// webhook host whose DNS points inside, or rebinds there).
type privateResolver struct{}

func (privateResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestAuditWebhookRefusesANameResolvingInside: the URL checks alone pass a
// host name; the egress rule must refuse it on the address dialed. A TLS
// server really listens there (and would answer): it must get no request,
// and the error must not carry the URL's secret path or query.
// TestWebhookRefusesPrivateHosts only tried URLs the settings' checks
// refuse before egress is reached.
func TestAuditWebhookRefusesANameResolvingInside(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tlsConf := &tls.Config{RootCAs: pool, ServerName: "example.com"}
	hook := "https://hooks.example.com:" + u.Port() + "/T0KEN-PATH?token=s3cret"

	err := postWebhookVia(context.Background(), egress.Options{Resolver: privateResolver{}, TLSConfig: tlsConf}, hook, map[string]string{"a": "b"})
	if err == nil || hits.Load() != 0 {
		t.Fatalf("a webhook name resolving to 127.0.0.1 was posted to (err %v, %d requests)", err, hits.Load())
	}
	if strings.Contains(err.Error(), "T0KEN") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the error shows the webhook's secret: %v", err)
	}
}
