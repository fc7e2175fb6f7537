package egress

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// FuzzURLAndHostRules parses a declared rule host, a ${setting} value and a
// request URL. Whatever they are: nothing panics; an accepted URL's host is
// a resolved rule's host on an allowed scheme, never a metadata endpoint,
// and a non-global literal only under a private rule; a refusal is a
// *sdk.HostNotAllowedError with a reason that never shows the URL's
// password or query. Nothing is dialed.
func FuzzURLAndHostRules(f *testing.F) {
	for _, s := range [][3]string{
		{"api.example.com", "https://svc.example.com:8443", "https://api.example.com/x?token=s3cret"},
		{"discord-cdn", "svc", "https://cdn.discordapp.com/a"},
		{"127.0.0.1", "http://10.0.0.1", "http://10.0.0.1/"},
		{"a.test", "metadata.google.internal", "http://user:pw@a.test/"},
		{"${base}", "", "http://[::ffff:169.254.169.254]/"},
		{"x", "http://[fd00:ec2::254]:80", "HTTP://X./?q=1"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	def := sdk.SettingsDefinition{Fields: []sdk.SettingField{{Name: "base", Kind: sdk.SettingString, Default: ""}}}
	f.Fuzz(func(t *testing.T, ruleHost, setting, rawURL string) {
		settings, err := def.Prepare("m", map[string]string{"base": setting})
		if err != nil {
			return
		}
		declared := []sdk.HostRule{{Host: ruleHost, Schemes: []string{"http", "https"}}, {Host: "${base}", Network: sdk.NetworkPrivate}}
		rules, err := hostkit.ResolveHostRules("m", declared, settings)
		if err != nil {
			var mce *sdk.ModuleContractError
			if !asContract(err, &mce) {
				t.Fatalf("untyped load error %T %v", err, err)
			}
			return
		}
		for _, r := range rules {
			if hostkit.IsMetadataHost(r.Host) {
				t.Fatalf("metadata host %q resolved", r.Host)
			}
		}
		rule, reason, err := hostkit.CheckURLReason("m", rules, rawURL)
		if err != nil {
			if reason == "" {
				t.Fatalf("refusal without a reason: %v", err)
			}
			var hna *sdk.HostNotAllowedError
			if !asHNA(err, &hna) {
				t.Fatalf("untyped refusal %T", err)
			}
			if u, perr := url.Parse(rawURL); perr == nil {
				if pw, ok := u.User.Password(); ok && len(pw) > 3 && strings.Contains(err.Error(), pw) {
					t.Fatalf("refusal %q shows the password", err)
				}
				if len(u.RawQuery) > 3 && strings.Contains(err.Error(), u.RawQuery) {
					t.Fatalf("refusal %q shows the query", err)
				}
			}
			return
		}
		u, perr := url.Parse(rawURL)
		if perr != nil {
			t.Fatalf("accepted an unparseable URL %q", rawURL)
		}
		host := strings.ToLower(strings.TrimRight(u.Hostname(), "."))
		switch {
		case host != rule.Host:
			t.Fatalf("accepted host %q under rule %q", host, rule.Host)
		case !slices.Contains(rule.Schemes, strings.ToLower(u.Scheme)):
			t.Fatalf("accepted scheme %q", u.Scheme)
		case hostkit.IsMetadataHost(host):
			t.Fatalf("accepted metadata host %q", host)
		case !rule.Private && hostkit.IsNonGlobalIP(host):
			t.Fatalf("public rule accepted non-global %q", host)
		case u.User != nil:
			t.Fatalf("accepted credentials")
		}
	})
}
