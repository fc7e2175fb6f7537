package llm_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
)

func TestCompleteReplaysAssistantAndToolMessages(t *testing.T) {
	s := fake(t, llmfake.Step{Plan: llmfake.Text("done")})
	temp := 0.3
	req := llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are Kimi."},
			{Role: llm.RoleUser, Name: "ada", Content: "kudos to bob"},
			{Role: llm.RoleAssistant, ReasoningContent: "call give_kudos", ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "give_kudos", Arguments: `{"member": "bob"}`},
				{ID: "call_2", Name: "kudos_leaderboard"},
			}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: `{"ok":true}`},
			{Role: llm.RoleTool, ToolCallID: "call_2", Content: `[]`},
		},
		Tools:       []llm.Tool{{Name: "give_kudos", Description: "Give kudos", Parameters: json.RawMessage(`{"type":"object","properties":{"member":{"type":"string"}}}`)}, {Name: "kudos_leaderboard"}},
		MaxTokens:   123,
		Temperature: &temp,
		Extra:       map[string]any{"top_p": 1.0},
	}
	if _, err := client(t, s).Complete(ctxTimeout(t), req, nil); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(s.Requests()[0].Raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"model": "fake-model", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"max_tokens": 123.0, "temperature": 0.3, "top_p": 1.0,
		"messages": []any{
			map[string]any{"role": "system", "content": "You are Kimi."},
			map[string]any{"role": "user", "name": "ada", "content": "kudos to bob"},
			map[string]any{"role": "assistant", "content": nil, "reasoning_content": "call give_kudos", "tool_calls": []any{
				map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "give_kudos", "arguments": `{"member": "bob"}`}},
				map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "kudos_leaderboard", "arguments": "{}"}},
			}},
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": `{"ok":true}`},
			map[string]any{"role": "tool", "tool_call_id": "call_2", "content": `[]`},
		},
		"tools": []any{
			map[string]any{"type": "function", "function": map[string]any{"name": "give_kudos", "description": "Give kudos", "parameters": map[string]any{"type": "object", "properties": map[string]any{"member": map[string]any{"type": "string"}}}}},
			map[string]any{"type": "function", "function": map[string]any{"name": "kudos_leaderboard", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}},
		},
	}
	if a, b := mustJSON(t, got), mustJSON(t, want); a != b {
		t.Errorf("body =\n%s\nwant\n%s", a, b)
	}
}

func TestCompleteRefusesAnInvalidRequestBeforeSending(t *testing.T) {
	ok := llm.Message{Role: llm.RoleUser, Content: "hi"}
	for _, tt := range []struct {
		name string
		req  llm.Request
		want string
	}{
		{"no message", llm.Request{}, "no message"},
		{"an unknown role", llm.Request{Messages: []llm.Message{{Role: "robot"}}}, `unknown role "robot"`},
		{"a tool result without its call id", llm.Request{Messages: []llm.Message{ok, {Role: llm.RoleTool, Content: "x"}}}, "without a tool call id"},
		{"a replayed call without an id", llm.Request{Messages: []llm.Message{ok, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "x"}}}}}, "has no id or no name"},
		{"an invalid tool name", llm.Request{Messages: []llm.Message{ok}, Tools: []llm.Tool{{Name: "no spaces"}}}, "invalid tool name"},
		{"parameters that are not an object", llm.Request{Messages: []llm.Message{ok}, Tools: []llm.Tool{{Name: "t", Parameters: json.RawMessage(`[]`)}}}, "not a JSON object schema"},
		{"Extra setting a field of its own", llm.Request{Messages: []llm.Message{ok}, Extra: map[string]any{"stream": false}}, `must not set "stream"`},
		{"a temperature out of range", llm.Request{Messages: []llm.Message{ok}, Temperature: new(3.0)}, "temperature 3 is outside"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := fake(t)
			_, err := client(t, s).Complete(ctxTimeout(t), tt.req, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to say %q", err, tt.want)
			}
			if d, _ := llm.Classify(err); d != llm.Stop {
				t.Errorf("disposition %v, want Stop", d)
			}
			if n := len(s.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

func TestCompleteWithoutAModelIsNotConfigured(t *testing.T) {
	s := fake(t)
	_, err := client(t, s, func(o *llm.Options) { o.Model = "" }).Complete(ctxTimeout(t), user("hi"), nil)
	if !errors.Is(err, llm.ErrNotConfigured) {
		t.Fatalf("err = %v, want ErrNotConfigured", err)
	}
}

// toHost sends every request to target, keeping the URL's host in the
// Host header, so a client can believe it talks to api.moonshot.ai.
type toHost struct {
	target *url.URL
	rt     http.RoundTripper
}

func (h toHost) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = h.target.Scheme, h.target.Host
	return h.rt.RoundTrip(r)
}

func TestThinkingIsSentOnlyToMoonshotHosts(t *testing.T) {
	for _, tt := range []struct {
		base     string
		thinking llm.Thinking
		want     string // the thinking field's JSON, "" for absent
	}{
		{"https://api.moonshot.ai/v1", llm.ThinkingOn, `{"type":"enabled"}`},
		{"https://api.moonshot.cn/v1", llm.ThinkingOff, `{"type":"disabled"}`},
		{"https://API.Moonshot.AI./v1", llm.ThinkingOff, `{"type":"disabled"}`},
		{"https://api.moonshot.ai/v1", llm.ThinkingDefault, ""},
		{"https://api.openai.com/v1", llm.ThinkingOn, ""},
		{"https://openrouter.ai/v1", llm.ThinkingOff, ""},
	} {
		t.Run(tt.base+"/"+tt.want, func(t *testing.T) {
			s := fake(t, llmfake.Step{Plan: llmfake.Text("ok")})
			target, _ := url.Parse(s.URL())
			c := client(t, s, func(o *llm.Options) {
				o.BaseURL, o.Thinking = tt.base, tt.thinking
				o.Transport = toHost{target, transport(t)}
			})
			if _, err := c.Complete(ctxTimeout(t), user("hi"), nil); err != nil {
				t.Fatal(err)
			}
			got := string(s.Requests()[0].Fields["thinking"])
			if got != tt.want {
				t.Errorf("thinking = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNewValidatesItsOptions(t *testing.T) {
	tr := http.DefaultTransport
	for _, tt := range []struct {
		name string
		o    llm.Options
		want string
	}{
		{"no base URL", llm.Options{Transport: tr}, "not configured"},
		{"not http", llm.Options{BaseURL: "ftp://x/v1", Transport: tr}, "http:// or https://"},
		{"no host", llm.Options{BaseURL: "https:///v1", Transport: tr}, "no host"},
		{"user info", llm.Options{BaseURL: "https://u:sk-secret@x/v1", Transport: tr}, "user name or password"},
		{"a query", llm.Options{BaseURL: "https://x/v1?key=sk-secret", Transport: tr}, "query"},
		{"a fragment", llm.Options{BaseURL: "https://x/v1#f", Transport: tr}, "fragment"},
		{"a key with a newline", llm.Options{BaseURL: "https://x/v1", APIKey: "sk\nX-Evil: 1", Transport: tr}, "API key has a space, a control character"},
		{"negative max tokens", llm.Options{BaseURL: "https://x/v1", MaxTokens: -1, Transport: tr}, "max tokens -1"},
		{"a temperature out of range", llm.Options{BaseURL: "https://x/v1", Temperature: new(-0.5), Transport: tr}, "temperature -0.5"},
		{"an unknown thinking setting", llm.Options{BaseURL: "https://x/v1", Thinking: 9, Transport: tr}, "unknown thinking"},
		{"a negative timeout", llm.Options{BaseURL: "https://x/v1", Timeout: -1, Transport: tr}, "negative"},
		{"no transport", llm.Options{BaseURL: "https://x/v1"}, "no transport"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := llm.New(tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to say %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "sk-secret") {
				t.Errorf("the error quotes the URL's secret: %v", err)
			}
		})
	}
	c, err := llm.New(llm.Options{BaseURL: " https://api.moonshot.ai/v1/ ", Model: "m", Transport: tr})
	if err != nil || c.BaseURL() != "https://api.moonshot.ai/v1" || c.Model() != "m" {
		t.Errorf("New = %v, %v; want the trimmed base URL", c, err)
	}
}

func TestTheClientReadsNoEnvironmentVariable(t *testing.T) {
	s := fake(t, llmfake.Step{Plan: llmfake.Text("ok"), Repeat: true})
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("NO_PROXY", "")
	c := client(t, s)
	if _, err := c.Complete(ctxTimeout(t), user("hi"), nil); err != nil {
		t.Fatalf("Complete: %v (an environment variable redirected the client)", err)
	}
	if _, err := c.Models(ctxTimeout(t)); err != nil {
		t.Fatalf("Models: %v", err)
	}
	for _, r := range s.Requests() {
		if h := r.Header.Get("Authorization"); h != "" {
			t.Errorf("Authorization %q sent from the environment", h)
		}
		if h := r.Header.Get("OpenAI-Organization"); h != "" {
			t.Errorf("OpenAI-Organization %q sent from the environment", h)
		}
	}
}
