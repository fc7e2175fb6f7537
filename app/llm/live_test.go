//go:build livellm

package llm_test

// The opt-in live smoke test against Moonshot: never built in CI (the
// livellm tag), so it never shows as a skip there. Run it with
//
//	KIMI_LIVE_LLM=1 KIMI_LLM_API_KEY=sk-… GOEXPERIMENT=jsonv2 go test -tags livellm -run Live ./app/llm/
//
// (KIMI_LLM_BASE_URL and KIMI_LLM_MODEL override the endpoint and the
// model; by default the first model GET /models lists).

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/llm"
)

func TestLiveMoonshotOneToolRound(t *testing.T) {
	if os.Getenv("KIMI_LIVE_LLM") != "1" || os.Getenv("KIMI_LLM_API_KEY") == "" {
		t.Fatal("set KIMI_LIVE_LLM=1 and KIMI_LLM_API_KEY to run the live test (built only with -tags livellm)")
	}
	base := os.Getenv("KIMI_LLM_BASE_URL")
	if base == "" {
		base = "https://api.moonshot.ai/v1"
	}
	c, err := llm.New(llm.Options{BaseURL: base, APIKey: os.Getenv("KIMI_LLM_API_KEY"), Model: os.Getenv("KIMI_LLM_MODEL"),
		UserAgent: "Kimi/live-test", Timeout: 3 * time.Minute, Transport: &http.Transport{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	models, err := c.Models(ctx)
	if err != nil || len(models) == 0 {
		t.Fatalf("Models: %v, %v", models, err)
	}
	model := c.Model()
	if model == "" {
		model = models[0].ID
	}
	t.Logf("model %s (%d listed)", model, len(models))
	tools := []llm.Tool{{Name: "get_time", Description: "The current time in a city",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "Use the get_time tool for Paris, then tell me the time."}}
	resp, err := c.Complete(ctx, llm.Request{Model: model, Messages: msgs, Tools: tools, MaxTokens: 2048}, nil)
	if err != nil {
		t.Fatalf("first round: %v", err)
	}
	if len(resp.ToolCalls) == 0 {
		t.Fatalf("no tool call: %+v", resp)
	}
	tc := resp.ToolCalls[0]
	t.Logf("call %s %s; reasoning %d bytes; usage %+v", tc.Name, tc.Arguments, len(resp.Reasoning), resp.Usage)
	msgs = append(msgs,
		llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ReasoningContent: resp.Reasoning, ToolCalls: resp.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: `{"time":"14:05"}`})
	resp, err = c.Complete(ctx, llm.Request{Model: model, Messages: msgs, Tools: tools, MaxTokens: 2048}, nil)
	if err != nil {
		t.Fatalf("second round (reasoning_content replayed): %v", err)
	}
	if resp.Content == "" {
		t.Fatalf("no answer: %+v", resp)
	}
	t.Logf("answer %q from %s", resp.Content, resp.ServedModel)
}
