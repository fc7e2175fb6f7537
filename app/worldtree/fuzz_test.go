package worldtree

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseErrorInfo feeds arbitrary error bodies to the error-code reader: it must never panic,
// and it reports a code only from a body that is valid JSON.
func FuzzParseErrorInfo(f *testing.F) {
	for _, s := range []string{
		`{"error_code":"x"}`, `{"detail":{"error_code":"y","bifrost_error":"b"}}`, `{"detail":"auth_invalid"}`,
		`{"detail":[{"loc":["body"]}]}`, `[]`, `null`, `boom`, ``, `{"error_code":"\u0041"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		info := parseErrorInfo(body)
		for _, v := range []string{info.code, info.bifrostError} {
			if v == "" {
				continue
			}
			if !json.Valid(body) {
				t.Fatalf("reported %q from invalid JSON %q", v, body)
			}
		}
		_ = printableCode(info.code)
	})
}

// FuzzSessionPage decodes arbitrary GET /sessions bodies through the page conversion ListSessions
// uses: no panic, and an accepted page has items, no empty cursor, and every item a session id,
// non-nil metadata and tags, and no message count.
func FuzzSessionPage(f *testing.F) {
	f.Add([]byte(`{"items":[` + listItem + `],"next_cursor":"v1.x"}`))
	f.Add([]byte(`{"items":[{"session_id":"s","agent_id":"a","archived":null,"tags":null}],"next_cursor":null}`))
	f.Add([]byte(`{"items":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var w wireSessionPage
		if json.Unmarshal(body, &w) != nil {
			return
		}
		page, err := w.page(redactor{})
		if err != nil {
			return
		}
		if page.Items == nil || (page.NextCursor != nil && *page.NextCursor == "") {
			t.Fatalf("bad page %+v from %q", page, body)
		}
		for _, s := range page.Items {
			if s.SessionID == "" || s.Metadata == nil || s.Tags == nil || s.MessageCount != nil {
				t.Fatalf("bad item %+v from %q", s, body)
			}
		}
	})
}

// FuzzEndpointForPlane checks the plane mapping never panics and only yields http URLs on the
// three Bifrost ports.
func FuzzEndpointForPlane(f *testing.F) {
	f.Add("memory", "10.100.10.50")
	f.Add("affect", "fd00::1")
	f.Add("persona", "h")
	f.Fuzz(func(t *testing.T, plane, host string) {
		got, err := EndpointForPlane(plane, host)
		if err != nil {
			return
		}
		if !strings.HasPrefix(got, "http://") ||
			!(strings.HasSuffix(got, ":8390") || strings.HasSuffix(got, ":8391") || strings.HasSuffix(got, ":8392")) {
			t.Fatalf("EndpointForPlane(%q, %q) = %q", plane, host, got)
		}
	})
}
