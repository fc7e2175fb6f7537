package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
)

// Complete with a tool: the model asks for a call, the caller runs it and
// replays the assistant message (with its reasoning_content) and the
// tool's result; the model then answers in text.
func ExampleClient_Complete() {
	fake := llmfake.New(
		llmfake.Step{Match: llmfake.Match{Role: "user", Tools: []string{"kudos_leaderboard"}},
			Plan: llmfake.Plan{Reasoning: []string{"I should look it up."}, Calls: []llmfake.Call{{ID: "call_1", Name: "kudos_leaderboard", Args: llmfake.Split3(`{"limit":3}`)}}}},
		llmfake.Step{Match: llmfake.Match{ToolResultFor: "call_1"}, Plan: llmfake.Text("Ada leads with 12 kudos.")},
	)
	defer fake.Close()
	fake.SetKimiStrict(true) // as Moonshot's thinking models: reasoning_content must be replayed

	c, err := llm.New(llm.Options{BaseURL: fake.URL(), Model: "fake-model", UserAgent: "Kimi/example", Transport: &http.Transport{}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	tools := []llm.Tool{{Name: "kudos_leaderboard", Description: "The server's kudos leaderboard",
		Parameters: json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer"}}}`)}}
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "Who has the most kudos?"}}

	resp, err := c.Complete(ctx, llm.Request{Messages: msgs, Tools: tools}, nil)
	if err != nil {
		panic(err)
	}
	call := resp.ToolCalls[0]
	fmt.Println(resp.FinishReason, call.Name, call.Args["limit"])

	msgs = append(msgs,
		llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ReasoningContent: resp.Reasoning, ToolCalls: resp.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: `[{"member":"Ada","kudos":12}]`})
	resp, err = c.Complete(ctx, llm.Request{Messages: msgs, Tools: tools}, nil)
	if err != nil {
		d, o := llm.Classify(err)
		fmt.Println(d, llm.UserMessage(o))
		return
	}
	fmt.Println(resp.Content)
	// Output:
	// tool_calls kudos_leaderboard 3
	// Ada leads with 12 kudos.
}
