package llm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
)

func TestTheKeyIsRedactedFromErrorsAndTheDebugLog(t *testing.T) {
	const key = "sk-very-secret-key-123"
	echo := `{"error":{"type":"invalid_authentication_error ` + key + `","message":"Bearer ` + key + ` is not valid"}}`
	for _, tt := range []struct {
		name string
		plan llmfake.Plan
	}{
		{"an error body echoing the key", llmfake.Plan{Status: 401, Body: echo}},
		{"a mid-stream error echoing the key", llmfake.Plan{Status: 200, Body: ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := fake(t, llmfake.Step{Plan: tt.plan, Match: llmfake.Match{}})
			if tt.plan.Status == 200 {
				// A stream whose error event echoes the key.
				s.SetSteps(llmfake.Step{Plan: llmfake.Plan{Content: []string{"x"}, Fail: llmfake.FailMidStream, ErrorType: key, ErrorMessage: "Bearer " + key}})
			}
			var log logBuffer
			c := client(t, s, func(o *llm.Options) { o.APIKey = key; o.Logger = log.logger() })
			_, err := c.Complete(ctxTimeout(t), user("hi"), nil)
			if err == nil {
				t.Fatal("Complete succeeded")
			}
			var he *llm.HTTPError
			if errors.As(err, &he) && (strings.Contains(he.Message, key) || strings.Contains(he.Type, key)) {
				t.Errorf("HTTPError keeps the key: %+v", he)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error text keeps the key: %v", err)
			}
			if strings.Contains(log.String(), key) {
				t.Errorf("the debug log keeps the key:\n%s", log.String())
			}
			if !strings.Contains(log.String(), "[REDACTED]") {
				t.Errorf("the debug log lacks the redacted body:\n%s", log.String())
			}
		})
	}
}

func TestTheErrorBodyIsLoggedAtDebugOnly(t *testing.T) {
	s := fake(t, llmfake.Step{Plan: llmfake.HTTPFailure(500, "server_error", "internal detail: /srv/secret/path")})
	var log logBuffer
	c := client(t, s, func(o *llm.Options) { o.Logger = log.logger() })
	_, err := c.Complete(ctxTimeout(t), user("hi"), nil)
	if err == nil {
		t.Fatal("Complete succeeded")
	}
	out := log.String()
	if !strings.Contains(out, "level=DEBUG") || !strings.Contains(out, "/srv/secret/path") {
		t.Errorf("the body is not in the debug log:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(line, "/srv/secret/path") && !strings.Contains(line, "level=DEBUG") {
			t.Errorf("the body is logged above debug: %s", line)
		}
	}
}

func TestTheKeyIsRedactedFromTheDebugLogInItsJSONEscapedForms(t *testing.T) {
	// A base64-style key with '/', '+' and '&', echoed by a server whose
	// JSON escapes '/' (PHP) or '&' (Go's HTML-safe encoder).
	const key = "sk-abc/def+ghi&jkl"
	for _, echoed := range []string{`sk-abc\/def+ghi&jkl`, `sk-abc/def+ghi\u0026jkl`, `sk-abc\/def+ghi\u0026jkl`} {
		s := fake(t, llmfake.Step{Plan: llmfake.Plan{Status: 401, Body: `{"error":{"type":"invalid_authentication_error","message":"key ` + echoed + ` is not valid"}}`}})
		var log logBuffer
		c := client(t, s, func(o *llm.Options) { o.APIKey = key; o.Logger = log.logger() })
		_, err := c.Complete(ctxTimeout(t), user("hi"), nil)
		if err == nil || strings.Contains(err.Error(), key) {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(log.String(), "def+ghi") || strings.Contains(log.String(), "ghi&jkl") {
			t.Errorf("the debug log keeps the key as %s:\n%s", echoed, log.String())
		}
	}
}
