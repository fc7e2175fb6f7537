package form

import (
	"net/url"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/settings"
)

// TestParseAssistant: the typed model wins over the list's; blank numbers
// are their defaults; a bad number is its field's error; the temperature
// is sent only when entered; Kept never holds a key or a base URL with
// credentials.
func TestParseAssistant(t *testing.T) {
	base := url.Values{AssistantBaseURL: {"https://api.moonshot.ai/v1"}, AssistantAPIKey: {"sk-x"}, AssistantModel: {"listed"}}
	with := func(kv ...string) url.Values {
		v := url.Values{}
		for k, vs := range base {
			v[k] = vs
		}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	cases := []struct {
		name  string
		form  url.Values
		check func(t *testing.T, u settings.AssistantUpdate, e Errors)
	}{
		{"defaults", base, func(t *testing.T, u settings.AssistantUpdate, e Errors) {
			if !e.OK() || u.MaxTokens != 4096 || u.Timeout != 10*time.Minute || u.Temperature != nil || u.ContextWindow != 0 || u.Model != "listed" {
				t.Fatalf("%+v %v", u, e)
			}
		}},
		{"typed model wins", with(AssistantModelCustom, " kimi-k9 "), func(t *testing.T, u settings.AssistantUpdate, e Errors) {
			if u.Model != "kimi-k9" {
				t.Fatalf("model %q", u.Model)
			}
		}},
		{"numbers", with(AssistantMaxTokens, "8,192", AssistantContextWindow, "262144", AssistantTimeout, "90", AssistantTemperature, "0.6"),
			func(t *testing.T, u settings.AssistantUpdate, e Errors) {
				if !e.OK() || u.MaxTokens != 8192 || u.ContextWindow != 262144 || u.Timeout != 90*time.Second || *u.Temperature != 0.6 {
					t.Fatalf("%+v %v", u, e)
				}
			}},
		{"bad numbers", with(AssistantMaxTokens, "many", AssistantTemperature, "warm", AssistantTimeout, "1e9"),
			func(t *testing.T, _ settings.AssistantUpdate, e Errors) {
				for _, f := range []string{AssistantMaxTokens, AssistantTemperature, AssistantTimeout} {
					if !e.Has(f) {
						t.Errorf("no error for %s: %v", f, e)
					}
				}
			}},
		{"a huge timeout is out of range, not an overflow", with(AssistantTimeout, "999999999999"),
			func(t *testing.T, u settings.AssistantUpdate, e Errors) {
				if err := u.Validate(); err == nil {
					t.Fatalf("timeout %s accepted", u.Timeout)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, e := ParseAssistant(post(t, "/assistant", tc.form), settings.AssistantLocks{}).Update()
			tc.check(t, u, e)
		})
	}

	f := ParseAssistant(post(t, "/assistant", with(AssistantBaseURL, "https://u:pw@x.example/v1", AssistantFallbackAPIKey, "sk-fb")), settings.AssistantLocks{})
	if k := f.Kept(); k.APIKey != "" || k.FallbackAPIKey != "" || k.BaseURL != "" {
		t.Fatalf("Kept holds a secret: %+v", k)
	}
	if e := f.Validate(); e.Get(FieldForm) != MsgAssistantNotSaved || !e.Has(AssistantBaseURL) {
		t.Fatalf("Validate: %v", e)
	}
	q := ParseAssistant(post(t, "/assistant", with(AssistantBaseURL, "https://x.example/v1?api_key=sk-q", AssistantFallbackBaseURL, "https://y.example/v1#sk-f")), settings.AssistantLocks{})
	if k := q.Kept(); k.BaseURL != "https://x.example/v1" || k.FallbackBaseURL != "https://y.example/v1" {
		t.Fatalf("Kept keeps a query or fragment: %q, %q", k.BaseURL, k.FallbackBaseURL)
	}
}
