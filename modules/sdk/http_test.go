package sdk

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestValidateHostRule(t *testing.T) {
	tests := []struct {
		name string
		rule HostRule
		want string
	}{
		{"plain", HostRule{Host: "api.example.com"}, ""},
		{"single label", HostRule{Host: "localhost", Network: NetworkPrivate}, ""},
		{"cdn", HostRule{Host: "discord-cdn"}, ""},
		{"setting", HostRule{Host: "${api_host}", Schemes: []string{"http", "https"}, Ports: []int{8080}}, ""},
		{"wildcard", HostRule{Host: "*.example.com"}, "invalid HTTP host '*.example.com'; wildcards are not supported"},
		{"upper", HostRule{Host: "API.example.com"}, "invalid HTTP host 'API.example.com'; wildcards are not supported"},
		{"trailing newline", HostRule{Host: "example.com\n"}, `invalid HTTP host 'example.com\n'; wildcards are not supported`},
		{"empty", HostRule{Host: ""}, "invalid HTTP host ''; wildcards are not supported"},
		{"too long", HostRule{Host: strings.Repeat("a.", 127) + "a"}, "invalid HTTP host '" + strings.Repeat("a.", 127) + "a'; wildcards are not supported"},
		{"label hyphen end", HostRule{Host: "a-.example.com"}, "invalid HTTP host 'a-.example.com'; wildcards are not supported"},
		{"bad setting ref", HostRule{Host: "${Bad}"}, "invalid HTTP host '${Bad}'; wildcards are not supported"},
		{"cdn private", HostRule{Host: "discord-cdn", Network: NetworkPrivate}, "discord-cdn is always public"},
		{"bad network", HostRule{Host: "a.com", Network: "lan"}, "invalid network 'lan' for host 'a.com'"},
		{"bad scheme one", HostRule{Host: "a.com", Schemes: []string{"ftp"}}, "invalid schemes ('ftp',) for host 'a.com'"},
		{"bad scheme two", HostRule{Host: "a.com", Schemes: []string{"https", "ws"}}, "invalid schemes ('https', 'ws') for host 'a.com'"},
		{"bad port", HostRule{Host: "a.com", Ports: []int{0}}, "invalid ports (0,) for host 'a.com'"},
		{"bad port high", HostRule{Host: "a.com", Ports: []int{443, 65536}}, "invalid ports (443, 65536) for host 'a.com'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErr(t, ValidateHostRule(tt.rule), tt.want) })
	}
	if got := len(strings.Repeat("a.", 126) + "a"); got != 253 || !ValidHostname(strings.Repeat("a.", 126)+"a") {
		t.Errorf("a 253-character host must be valid (len %d)", got)
	}
}

func TestHostRuleHelpers(t *testing.T) {
	r := HostRule{Host: "${api}"}
	if name, ok := r.SettingName(); !ok || name != "api" {
		t.Error("SettingName")
	}
	if s := r.EffectiveSchemes(); len(s) != 1 || s[0] != "https" {
		t.Error("EffectiveSchemes default")
	}
	if r.EffectiveNetwork() != NetworkPublic || (HostRule{Network: NetworkPrivate}).EffectiveNetwork() != NetworkPrivate {
		t.Error("EffectiveNetwork")
	}
	if !(HostRule{Host: DiscordCDNToken}).IsDiscordCDN() {
		t.Error("IsDiscordCDN")
	}
}

func TestResolveHostRules(t *testing.T) {
	settings := NewSettings(map[string]any{
		"bare": "API.Example.com", "url": "http://svc.internal:8080/path", "empty": "  ",
		"nohost": "https://", "meta": "169.254.169.254", "num": 5,
	})
	got, err := ResolveHostRules("m", []HostRule{
		{Host: DiscordCDNToken},
		{Host: "${bare}", Ports: []int{8443}},
		{Host: "${url}", Network: NetworkPrivate},
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
		rule HostRule
		want string
	}{
		{HostRule{Host: "${missing}"}, "module 'm' http host ${missing} names an unknown setting"},
		{HostRule{Host: "${empty}"}, "http host setting is empty"},
		{HostRule{Host: "${nohost}"}, "http host setting has no host"},
		{HostRule{Host: "${meta}"}, "module 'm' may not target '169.254.169.254'"},
		{HostRule{Host: "metadata.google.internal"}, "module 'm' may not target 'metadata.google.internal'"},
	}
	for _, e := range errs {
		_, err := ResolveHostRules("m", []HostRule{e.rule}, settings)
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
		var hna *HostNotAllowed
		if tt.want != "" && !errors.As(err, &hna) {
			t.Errorf("%s: want *HostNotAllowed, got %T", tt.url, err)
		}
	}
}

func TestIsNonGlobalIP(t *testing.T) {
	for host, want := range map[string]bool{
		"8.8.8.8": false, "10.1.2.3": true, "127.0.0.1": true, "169.254.1.1": true, "100.64.0.1": true,
		"::1": true, "[::1]": true, "2606:4700::1111": false, "fd00::1": true, "0.0.0.0": true,
		"example.com": false, "192.0.2.1": true, "::ffff:10.0.0.1": true,
	} {
		if got := IsNonGlobalIP(host); got != want {
			t.Errorf("IsNonGlobalIP(%q) = %v", host, got)
		}
	}
}

func TestApplyRequestOptions(t *testing.T) {
	o := ApplyRequestOptions(DefaultHTTPTimeout)
	if o.Timeout != 20*time.Second || o.MaxBytes != MaxHTTPBodyBytes || o.Header == nil {
		t.Fatalf("defaults: %+v", o)
	}
	o = ApplyRequestOptions(DefaultDownloadTimeout, WithHeader("X-A", "1"), WithTimeout(time.Second), WithMaxBytes(10), nil)
	if o.Header.Get("X-A") != "1" || o.Timeout != time.Second || o.MaxBytes != 10 {
		t.Fatalf("options: %+v", o)
	}
	o = ApplyRequestOptions(DefaultHTTPTimeout, WithMaxBytes(MaxHTTPBodyBytes+1), WithTimeout(-1))
	if o.MaxBytes != MaxHTTPBodyBytes || o.Timeout != DefaultHTTPTimeout {
		t.Fatalf("caps: %+v", o)
	}
	var bare RequestOptions
	WithHeader("K", "v")(&bare)
	if bare.Header.Get("K") != "v" {
		t.Fatal("WithHeader on nil header")
	}
	r := &HTTPResponse{Status: 200, Header: http.Header{}, Body: []byte(`{"a":1}`)}
	var v struct{ A int }
	if err := r.JSON(&v); err != nil || v.A != 1 {
		t.Fatalf("JSON: %v %v", v, err)
	}
}

func TestResponseTooLarge(t *testing.T) {
	checkErr(t, NewResponseTooLarge(100, 10), "response declares 100 bytes; limit is 10")
	err := NewResponseTooLarge(0, 10)
	checkErr(t, err, "response exceeded 10 bytes")
	var rtl *ResponseTooLarge
	if !errors.As(err, &rtl) || rtl.Limit != 10 {
		t.Fatal("errors.As ResponseTooLarge")
	}
	hna := NewHostNotAllowed("h", "module 'm' did not declare host 'h'")
	checkErr(t, hna, "module 'm' did not declare host 'h'")
}
