package sdk

import (
	"strings"
	"testing"
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
		t.Run(tt.name, func(t *testing.T) { checkErr(t, validateHostRule(tt.rule), tt.want) })
	}
	if got := len(strings.Repeat("a.", 126) + "a"); got != 253 || !validHostname(strings.Repeat("a.", 126)+"a") {
		t.Errorf("a 253-character host must be valid (len %d)", got)
	}
}
