package admin

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzLocalRedirect: whatever ?next= holds, the redirect stays on this site.
func FuzzLocalRedirect(f *testing.F) {
	for _, s := range []string{"/", "/audit?q=1", "//evil", "/\\evil", "https://x", "/%2F%2Fevil", "/\t/evil", "javascript:x", "/a#b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := localRedirect(next)
		if got == "/" {
			return
		}
		if got != next {
			t.Fatalf("localRedirect(%q) = %q: must be the input or /", next, got)
		}
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.HasPrefix(got, "/\\") {
			t.Fatalf("localRedirect(%q) = %q is not a local path", next, got)
		}
		u, err := url.Parse(got)
		if err != nil || u.Host != "" || u.Scheme != "" {
			t.Fatalf("localRedirect(%q) = %q parses with host %q scheme %q", next, got, u.Host, u.Scheme)
		}
	})
}
