package form

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestDemoMessage: the demo post form's checks, each with the field it names.
func TestDemoMessage(t *testing.T) {
	cases := []struct {
		name              string
		channel, member   string
		content, wantErr  string
		wantContentStored string
	}{
		{"ok, trailing space trimmed", "1", "2", "hello \n", "", "hello"},
		{"line breaks and tabs are fine", "1", "2", "a\n\tb", "", "a\n\tb"},
		{"no channel", "", "2", "x", FieldDemoChannel, ""},
		{"no member", "1", "", "x", FieldDemoMember, ""},
		{"blank", "1", "2", " \n ", FieldDemoContent, ""},
		{"2000 characters", "1", "2", strings.Repeat("é", 2000), "", strings.Repeat("é", 2000)},
		{"2001 characters", "1", "2", strings.Repeat("é", 2001), FieldDemoContent, ""},
		{"a control character", "1", "2", "bell\a", FieldDemoContent, ""},
		{"invalid UTF-8", "1", "2", "a\xffb", FieldDemoContent, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := url.Values{FieldDemoChannel: {c.channel}, FieldDemoMember: {c.member}, FieldDemoContent: {c.content}}.Encode()
			r, _ := http.NewRequest("POST", "/demo/messages", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			f := ParseDemoMessage(r)
			errs := f.Validate()
			if c.wantErr == "" {
				if !errs.OK() || f.Content != c.wantContentStored {
					t.Fatalf("errors %v, content %q", errs, f.Content)
				}
				return
			}
			if !errs.Has(c.wantErr) || len(errs) != 1 {
				t.Fatalf("errors = %v, want one for %s", errs, c.wantErr)
			}
		})
	}
}
