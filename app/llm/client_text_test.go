package llm_test

import (
	"encoding/json"
	"testing"

	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
)

func TestCompleteStreamsAScriptedText(t *testing.T) {
	s := fake(t, llmfake.Step{Match: llmfake.Match{Role: "user", Contains: "hello"}, Plan: llmfake.Text("Hel", "lo ", "there")})
	c := client(t, s)
	var ev events
	resp, err := c.Complete(ctxTimeout(t), user("hello kimi"), ev.add)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Content != "Hello there" || resp.FinishReason != "stop" || resp.ServedModel != "fake-model" {
		t.Errorf("response = %+v", resp)
	}
	if got := ev.text(llm.EventText); got != "Hello there" {
		t.Errorf("streamed text = %q", got)
	}
	if !resp.Usage.Present || resp.Usage.PromptTokens != 10 || resp.Usage.CompletionTokens != 5 || resp.Usage.TotalTokens != 15 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" || !r.Body.Stream || r.Body.StreamOptions == nil || !r.Body.StreamOptions.IncludeUsage {
		t.Errorf("request = %s %s stream %v options %+v", r.Method, r.Path, r.Body.Stream, r.Body.StreamOptions)
	}
	if r.Body.MaxTokens == nil || *r.Body.MaxTokens != llm.DefaultMaxTokens {
		t.Errorf("max_tokens = %v, want %d always sent", r.Body.MaxTokens, llm.DefaultMaxTokens)
	}
	if _, sent := r.Fields["temperature"]; sent {
		t.Errorf("temperature sent without being set: %s", r.Raw)
	}
	if got := r.Header.Get("User-Agent"); got != "Kimi/test" {
		t.Errorf("User-Agent = %q", got)
	}
	if got := r.Header.Get("Authorization"); got != "" {
		t.Errorf("a keyless client sent Authorization %q", got)
	}
}

func TestModelsListsTheEndpointsModelsWithTheirContextWindow(t *testing.T) {
	s := fake(t)
	s.SetModels(llmfake.ModelEntry{ID: "kimi-k2.6", OwnedBy: "moonshot", ContextLength: 262144}, llmfake.ModelEntry{ID: "small"})
	s.SetAPIKey("sk-test")
	c := client(t, s, func(o *llm.Options) { o.APIKey = "sk-test" })
	got, err := c.Models(ctxTimeout(t))
	if err != nil {
		t.Fatalf("Models: %v", err)
	}
	want := []llm.Model{{ID: "kimi-k2.6", OwnedBy: "moonshot", ContextWindow: 262144}, {ID: "small"}}
	if a, b := mustJSON(t, got), mustJSON(t, want); a != b {
		t.Errorf("models = %s, want %s", a, b)
	}
	if r := s.Requests()[0]; r.Method != "GET" || r.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("request = %s %s auth %q", r.Method, r.Path, r.Header.Get("Authorization"))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
