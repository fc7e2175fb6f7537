package hostkit

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestHostRuleHelpers(t *testing.T) {
	r := sdk.HostRule{Host: "${api}"}
	if name, ok := r.SettingName(); !ok || name != "api" {
		t.Error("SettingName")
	}
	if s := r.EffectiveSchemes(); len(s) != 1 || s[0] != "https" {
		t.Error("EffectiveSchemes default")
	}
	if r.EffectiveNetwork() != sdk.NetworkPublic || (sdk.HostRule{Network: sdk.NetworkPrivate}).EffectiveNetwork() != sdk.NetworkPrivate {
		t.Error("EffectiveNetwork")
	}
	if !(sdk.HostRule{Host: sdk.DiscordCDNToken}).IsDiscordCDN() {
		t.Error("IsDiscordCDN")
	}
}

func TestResolveHostRules(t *testing.T) {
	settings := sdk.NewSettings(map[string]any{
		"bare": "API.Example.com", "url": "http://svc.internal:8080/path", "empty": "  ",
		"nohost": "https://", "meta": "169.254.169.254", "num": 5,
	})
	got, err := ResolveHostRules("m", []sdk.HostRule{
		{Host: sdk.DiscordCDNToken},
		{Host: "${bare}", Ports: []int{8443}},
		{Host: "${url}", Network: sdk.NetworkPrivate},
		{Host: "static.example.com", Schemes: []string{"http"}},
	}, settings)
	if err != nil {
		t.Fatal(err)
	}
	want := []ResolvedHostRule{
		{Host: "cdn.discordapp.com", Schemes: []string{"https"}},
		{Host: "media.discordapp.net", Schemes: []string{"https"}},
		{Host: "api.example.com", Schemes: []string{"https"}, Ports: []int{8443}},
		{Host: "svc.internal", Schemes: []string{"http"}, Ports: []int{8080}, Private: true},
		{Host: "static.example.com", Schemes: []string{"http"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rules: %+v", len(got), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Host != w.Host || strings.Join(g.Schemes, ",") != strings.Join(w.Schemes, ",") || len(g.Ports) != len(w.Ports) || g.Private != w.Private {
			t.Errorf("rule %d = %+v, want %+v", i, g, w)
		}
	}
	errs := []struct {
		rule sdk.HostRule
		want string
	}{
		{sdk.HostRule{Host: "${missing}"}, "module 'm' http host ${missing} names an unknown setting"},
		{sdk.HostRule{Host: "${empty}"}, "http host setting is empty"},
		{sdk.HostRule{Host: "${nohost}"}, "http host setting has no host"},
		{sdk.HostRule{Host: "${meta}"}, "module 'm' may not target '169.254.169.254'"},
		{sdk.HostRule{Host: "metadata.google.internal"}, "module 'm' may not target 'metadata.google.internal'"},
	}
	for _, e := range errs {
		_, err := ResolveHostRules("m", []sdk.HostRule{e.rule}, settings)
		checkErr(t, err, e.want)
	}
}

func TestCheckURL(t *testing.T) {
	rules := []ResolvedHostRule{
		{Host: "api.example.com", Schemes: []string{"https"}},
		{Host: "svc.example.com", Schemes: []string{"http", "https"}, Ports: []int{8080}},
		{Host: "10.0.0.5", Schemes: []string{"http"}, Private: true},
		{Host: "127.0.0.1", Schemes: []string{"http"}},
		{Host: "169.254.169.254", Schemes: []string{"http"}, Private: true},
	}
	tests := []struct {
		url, want string
	}{
		{"https://api.example.com/x", ""},
		{"https://API.example.com./x", ""},
		{"https://api.example.com:443/x", ""},
		{"http://svc.example.com:8080/", ""},
		{"http://10.0.0.5/", ""},
		{"ftp://api.example.com/", "module 'm' may only use http(s) URLs"},
		{"https:///path", "URL has no host"},
		{"https://user:pw@api.example.com/", "URLs with embedded credentials are not allowed"},
		{"https://other.example.com/", "module 'm' did not declare host 'other.example.com'"},
		{"http://api.example.com/", "scheme 'http' is not allowed for 'api.example.com'"},
		{"https://api.example.com:8443/", "port 8443 is not allowed for 'api.example.com'"},
		{"http://svc.example.com/", "port None is not allowed for 'svc.example.com'"},
		{"http://127.0.0.1/", "private or internal addresses are not allowed"},
		{"http://169.254.169.254/", "cloud metadata endpoints are never allowed"},
		{"http://[::1", "URL has no host"},
	}
	for _, tt := range tests {
		_, err := CheckURL("m", rules, tt.url)
		checkErr(t, err, tt.want)
		var hna *sdk.HostNotAllowedError
		if tt.want != "" && !errors.As(err, &hna) {
			t.Errorf("%s: want *HostNotAllowedError, got %T", tt.url, err)
		}
	}
}

func TestIsNonGlobalIP(t *testing.T) {
	for host, want := range map[string]bool{
		"8.8.8.8": false, "10.1.2.3": true, "127.0.0.1": true, "169.254.1.1": true, "100.64.0.1": true,
		"::1": true, "[::1]": true, "2606:4700::1111": false, "fd00::1": true, "0.0.0.0": true,
		"example.com": false, "192.0.2.1": true, "::ffff:10.0.0.1": true,
		// Embedded forms: NAT64, 6to4, Teredo, IPv4-compatible, "this network".
		"64:ff9b::7f00:1": true, "64:ff9b::a00:1": true, "64:ff9b::808:808": false,
		"2002:7f00:1::": true, "2002:c0a8:101::1": true, "2002:808:808::1": false,
		"2001:0:4136:e378:8000:63bf:3fff:fdd2": true, "::7f00:1": true, "::808:808": true,
		"0.1.2.3": true, "fec0::1": true, "::ffff:169.254.169.254": true,
	} {
		if got := IsNonGlobalIP(host); got != want {
			t.Errorf("IsNonGlobalIP(%q) = %v", host, got)
		}
	}
}

func TestMetadataForms(t *testing.T) {
	for host, want := range map[string]bool{
		"metadata.google.internal": true, "metadata.google.internal.": true, "metadata": true, "instance-data": true,
		"169.254.169.254": true, "[fd00:ec2::254]": true, "fd00:ec2:0:0::254": true, "100.100.100.200": true,
		"169.254.170.2": true, "[fd00:ec2::23]": true, // AWS task metadata
		"::ffff:169.254.169.254": true, "64:ff9b::a9fe:a9fe": true, "2002:a9fe:a9fe::": true,
		"169.254.169.253": false, "example.com": false,
	} {
		if got := IsMetadataHost(host); got != want {
			t.Errorf("IsMetadataHost(%q) = %v", host, got)
		}
	}
	for addr, want := range map[string]string{
		"127.0.0.1": "loopback", "::1": "loopback", "10.0.0.1": "private", "fd00::1": "private",
		"169.254.1.1": "link-local", "fe80::1": "link-local", "100.64.0.1": "cgnat", "224.0.0.1": "multicast",
		"ff02::1": "multicast", "0.0.0.0": "unspecified", "::": "unspecified", "169.254.169.254": "metadata",
		"::ffff:127.0.0.1": "loopback", "64:ff9b::a00:1": "private", "2002:6440:1::": "cgnat",
		"::a00:1": "ipv4-compatible", "::808:808": "ipv4-compatible", "2001::1": "reserved", "8.8.8.8": "",
		"2606:4700::1111": "",
	} {
		if got := ClassifyAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("ClassifyAddr(%s) = %q, want %q", addr, got, want)
		}
	}
}

func TestApplyRequestOptions(t *testing.T) {
	o := ApplyRequestOptions(sdk.DefaultHTTPTimeout)
	if o.Timeout != 20*time.Second || o.MaxBytes != sdk.MaxHTTPBodyBytes || o.Header == nil {
		t.Fatalf("defaults: %+v", o)
	}
	o = ApplyRequestOptions(sdk.DefaultDownloadTimeout, sdk.WithHeader("X-A", "1"), sdk.WithTimeout(time.Second), sdk.WithMaxBytes(10), nil)
	if o.Header.Get("X-A") != "1" || o.Timeout != time.Second || o.MaxBytes != 10 {
		t.Fatalf("options: %+v", o)
	}
	o = ApplyRequestOptions(sdk.DefaultHTTPTimeout, sdk.WithMaxBytes(sdk.MaxHTTPBodyBytes+1), sdk.WithTimeout(-1))
	if o.MaxBytes != sdk.MaxHTTPBodyBytes || o.Timeout != sdk.DefaultHTTPTimeout {
		t.Fatalf("caps: %+v", o)
	}
	var bare sdk.RequestOptions
	sdk.WithHeader("K", "v")(&bare)
	if bare.Header.Get("K") != "v" {
		t.Fatal("WithHeader on nil header")
	}
	r := &sdk.HTTPResponse{Status: 200, Header: http.Header{}, Body: []byte(`{"a":1}`)}
	var v struct{ A int }
	if err := r.JSON(&v); err != nil || v.A != 1 {
		t.Fatalf("JSON: %v %v", v, err)
	}
}

func TestResponseTooLarge(t *testing.T) {
	checkErr(t, NewResponseTooLargeError(100, 10), "response declares 100 bytes; limit is 10")
	err := NewResponseTooLargeError(0, 10)
	checkErr(t, err, "response exceeded 10 bytes")
	var rtl *sdk.ResponseTooLargeError
	if !errors.As(err, &rtl) || rtl.Limit != 10 {
		t.Fatal("errors.As ResponseTooLargeError")
	}
	hna := NewHostNotAllowedError("h", "module 'm' did not declare host 'h'")
	checkErr(t, hna, "module 'm' did not declare host 'h'")
}
