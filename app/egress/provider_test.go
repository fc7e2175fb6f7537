package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// providerGet fetches url through a provider transport and returns the body.
func providerGet(t *testing.T, o ProviderOptions, url string) (string, error) {
	t.Helper()
	tr := NewProviderTransport(o)
	t.Cleanup(tr.CloseIdleConnections)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestProviderTransportAddressPolicy: a loopback endpoint (literal or by a
// name that resolves to it) is refused at connect time unless the private
// network is allowed; metadata addresses are refused even then.
func TestProviderTransportAddressPolicy(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	res := resolverFor("llm.test", "127.0.0.1", "meta.test", "169.254.169.254", "meta6.test", "fd00:ec2::254",
		"lan.test", "192.168.1.20", "mapped.test", "::ffff:169.254.169.254", "mapped-lo.test", "::ffff:127.0.0.1")
	cases := []struct {
		name      string
		url       string
		allow     bool
		wantClass string // "" = served
	}{
		{"loopback literal refused by default", s.urlFor("127.0.0.1", "/"), false, "loopback"},
		{"name resolving to loopback refused by default", s.urlFor("llm.test", "/"), false, "loopback"},
		{"private LAN address refused by default", "http://lan.test:1/", false, "private"},
		{"loopback allowed with the switch", s.urlFor("llm.test", "/"), true, ""},
		{"loopback literal allowed with the switch", s.urlFor("127.0.0.1", "/"), true, ""},
		{"IPv4 metadata refused even with the switch", "http://meta.test/latest/meta-data/", true, "metadata"},
		{"IPv4 metadata literal refused even with the switch", "http://169.254.169.254/", true, "metadata"},
		{"IPv6 metadata refused even with the switch", "http://meta6.test/", true, "metadata"},
		{"unspecified address refused even with the switch", "http://0.0.0.0:1/", true, "unspecified"},
		{"IPv4-mapped metadata literal refused even with the switch", "http://[::ffff:169.254.169.254]/", true, "metadata"},
		{"NAT64 metadata literal refused even with the switch", "http://[64:ff9b::a9fe:a9fe]/", true, "metadata"},
		{"name resolving to IPv4-mapped metadata refused even with the switch", "http://mapped.test/", true, "metadata"},
		{"Alibaba metadata refused even with the switch", "http://100.100.100.200/", true, "metadata"},
		{"IPv6 unspecified refused even with the switch", "http://[::]:1/", true, "unspecified"},
		{"name resolving to IPv4-mapped loopback refused by default", "http://mapped-lo.test:1/", false, "loopback"},
		{"IPv6 loopback refused by default", "http://[::1]:1/", false, "loopback"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, err := providerGet(t, ProviderOptions{AllowPrivateNetwork: tc.allow, Resolver: res}, tc.url)
			if tc.wantClass == "" {
				if err != nil || body != "ok" {
					t.Fatalf("want the server's answer, got %q, %v", body, err)
				}
				return
			}
			var refused *AddressRefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("want *AddressRefusedError, got %T %v", err, err)
			}
			if refused.Class != tc.wantClass {
				t.Fatalf("class %q, want %q (%v)", refused.Class, tc.wantClass, err)
			}
		})
	}
	if n := s.hits.Load(); n != 2 {
		t.Fatalf("the server was reached %d times, want 2 (the allowed cases only)", n)
	}
}

// TestProviderTransportRefusalMessages: a refusal says what the operator
// can change; a metadata refusal says it never is allowed.
func TestProviderTransportRefusalMessages(t *testing.T) {
	_, err := providerGet(t, ProviderOptions{}, "http://127.0.0.1:1/v1/models")
	if err == nil || !strings.Contains(err.Error(), "loopback address; allow a private-network endpoint") {
		t.Fatalf("loopback refusal: %v", err)
	}
	_, err = providerGet(t, ProviderOptions{AllowPrivateNetwork: true}, "http://169.254.169.254/")
	if err == nil || !strings.Contains(err.Error(), "cloud metadata endpoints are never allowed") {
		t.Fatalf("metadata refusal: %v", err)
	}
}

// TestProviderTransportIgnoresEnvironmentProxy: HTTP(S)_PROXY never carries
// a prompt elsewhere.
func TestProviderTransportIgnoresEnvironmentProxy(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "proxied") }))
	t.Cleanup(proxy.Close)
	for _, v := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"} {
		t.Setenv(v, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "direct") })
	body, err := providerGet(t, ProviderOptions{AllowPrivateNetwork: true, Resolver: resolverFor("llm.test", "127.0.0.1")}, s.urlFor("llm.test", "/"))
	if err != nil {
		t.Fatal(err)
	}
	if body != "direct" {
		t.Fatalf("body %q: the request went through the environment's proxy", body)
	}
	// net/http reads the environment's proxy once per process, so the
	// request alone cannot catch a transport that would read it later.
	if tr := NewProviderTransport(ProviderOptions{}); tr.Proxy != nil {
		t.Fatal("the transport has a proxy function")
	}
}

// TestProviderTransportVerifiesTLS: a server whose certificate the roots do
// not trust is refused; with its root it is reached, and the body streams
// past any module cap.
func TestProviderTransportVerifiesTLS(t *testing.T) {
	big := strings.Repeat("x", 12<<20) // beyond sdk.MaxHTTPBodyBytes
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, big) }))
	t.Cleanup(s.Close)
	if _, err := providerGet(t, ProviderOptions{AllowPrivateNetwork: true}, s.URL); err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	// A configuration that skips verification has it turned back on.
	if _, err := providerGet(t, ProviderOptions{AllowPrivateNetwork: true, TLSConfig: &tls.Config{InsecureSkipVerify: true}}, s.URL); err == nil {
		t.Fatal("InsecureSkipVerify was honoured")
	}
	conf := s.Client().Transport.(*http.Transport).TLSClientConfig
	body, err := providerGet(t, ProviderOptions{AllowPrivateNetwork: true, TLSConfig: conf}, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) != len(big) {
		t.Fatalf("read %d bytes, want %d", len(body), len(big))
	}
}
