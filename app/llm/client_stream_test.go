package llm_test

import (
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
)

// call is the part of a ToolCall the stream tests compare.
type call struct {
	ID, Name, Arguments string
	ArgsOK              bool
}

func calls(r llm.Response) []call {
	var out []call
	for _, tc := range r.ToolCalls {
		out = append(out, call{tc.ID, tc.Name, tc.Arguments, tc.ArgsErr == nil && tc.Args != nil})
	}
	return out
}

func TestCompleteReassemblesEveryStreamShape(t *testing.T) {
	weather := `{"city":"Paris","unit":"c"}`
	time := `{"tz":"Europe/Paris"}`
	two := []llmfake.Call{
		{ID: "call_w", Name: "weather", Args: llmfake.Split3(weather)},
		{ID: "call_t", Name: "time", Args: llmfake.Split3(time)},
	}
	for _, tt := range []struct {
		name       string
		plan       llmfake.Plan
		content    string
		reasoning  string
		calls      []call
		finish     string
		usage      llm.Usage
		toolEvents string
	}{
		{name: "text deltas", plan: llmfake.Text("a", "b", "c"), content: "abc", finish: "stop"},
		{name: "a tool call with the name first and the arguments in three fragments",
			plan:   llmfake.ToolCall("call_1", "weather", weather),
			calls:  []call{{"call_1", "weather", weather, true}},
			finish: "tool_calls", toolEvents: "weather"},
		{name: "two parallel calls interleaved by index",
			plan:   llmfake.Plan{Calls: two, Interleave: true},
			calls:  []call{{"call_w", "weather", weather, true}, {"call_t", "time", time, true}},
			finish: "tool_calls", toolEvents: "weathertime"},
		{name: "continuations without an index go to index 0",
			plan:   llmfake.Plan{Calls: two[:1], MissingIndex: true},
			calls:  []call{{"call_w", "weather", weather, true}},
			finish: "tool_calls", toolEvents: "weather"},
		{name: "continuations with index -1 go to index 0",
			plan:   llmfake.Plan{Calls: two[:1], NegativeIndex: true},
			calls:  []call{{"call_w", "weather", weather, true}},
			finish: "tool_calls", toolEvents: "weather"},
		{name: "an empty id on continuations keeps the first id",
			plan:   llmfake.Plan{Calls: two, Interleave: true, EmptyIDOnContinuation: true},
			calls:  []call{{"call_w", "weather", weather, true}, {"call_t", "time", time, true}},
			finish: "tool_calls", toolEvents: "weathertime"},
		{name: "an id and a name sent again on each continuation are not doubled",
			plan:   llmfake.Plan{Calls: two, Interleave: true, RepeatIDAndName: true},
			calls:  []call{{"call_w", "weather", weather, true}, {"call_t", "time", time, true}},
			finish: "tool_calls", toolEvents: "weathertime"},
		{name: "a call without an id gets call_<index>",
			plan:   llmfake.Plan{Calls: []llmfake.Call{two[0], {Name: "time", Args: []string{time}}}},
			calls:  []call{{"call_w", "weather", weather, true}, {"call_1", "time", time, true}},
			finish: "tool_calls", toolEvents: "weathertime"},
		{name: "unparseable arguments are kept raw with ArgsErr",
			plan:   llmfake.Plan{Calls: []llmfake.Call{{ID: "c", Name: "weather", Args: []string{`{"city":`, `"Par`}}}},
			calls:  []call{{"c", "weather", `{"city":"Par`, false}},
			finish: "tool_calls", toolEvents: "weather"},
		{name: "reasoning_content deltas", plan: llmfake.Plan{Reasoning: []string{"think", "ing"}, Content: []string{"ok"}},
			content: "ok", reasoning: "thinking", finish: "stop"},
		{name: "reasoning deltas (OpenRouter's spelling)", plan: llmfake.Plan{Reasoning: []string{"hm"}, ReasoningField: "reasoning", Content: []string{"ok"}},
			content: "ok", reasoning: "hm", finish: "stop"},
		{name: "data: without a space", plan: llmfake.Plan{Content: []string{"x", "y"}, NoSpace: true}, content: "xy", finish: "stop"},
		{name: "keep-alive comments", plan: llmfake.Plan{Content: []string{"x", "y"}, KeepAlive: true}, content: "xy", finish: "stop"},
		{name: "the final usage chunk with cached and reasoning tokens",
			plan:    llmfake.Plan{Content: []string{"x"}, Usage: llmfake.Usage{Prompt: 100, Completion: 20, Cached: 64, Reasoning: 7}},
			content: "x", finish: "stop",
			usage: llm.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120, CachedTokens: 64, ReasoningTokens: 7, Present: true}},
		{name: "no usage chunk", plan: llmfake.Plan{Content: []string{"x"}, NoUsage: true}, content: "x", finish: "stop", usage: llm.Usage{}},
		{name: "finish_reason length", plan: llmfake.Plan{Content: []string{"cut"}, FinishReason: "length"}, content: "cut", finish: "length"},
		{name: "a stream without [DONE] after its finish reason", plan: llmfake.Plan{Content: []string{"x"}, NoDone: true}, content: "x", finish: "stop"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := fake(t, llmfake.Step{Plan: tt.plan})
			var ev events
			resp, err := client(t, s).Complete(ctxTimeout(t), user("hi"), ev.add)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Content != tt.content || resp.Reasoning != tt.reasoning || resp.FinishReason != tt.finish {
				t.Errorf("content %q reasoning %q finish %q, want %q %q %q", resp.Content, resp.Reasoning, resp.FinishReason, tt.content, tt.reasoning, tt.finish)
			}
			if got, want := mustJSON(t, calls(resp)), mustJSON(t, tt.calls); got != want {
				t.Errorf("tool calls = %s, want %s", got, want)
			}
			wantUsage := tt.usage
			if wantUsage == (llm.Usage{}) && !tt.plan.NoUsage {
				wantUsage = llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, Present: true}
			}
			if resp.Usage != wantUsage {
				t.Errorf("usage = %+v, want %+v", resp.Usage, wantUsage)
			}
			if ev.text(llm.EventText) != tt.content || ev.text(llm.EventReasoning) != tt.reasoning || ev.text(llm.EventToolCall) != tt.toolEvents {
				t.Errorf("events: text %q reasoning %q tools %q", ev.text(llm.EventText), ev.text(llm.EventReasoning), ev.text(llm.EventToolCall))
			}
			for _, tc := range resp.ToolCalls {
				if tc.ArgsErr != nil && !strings.Contains(tc.ArgsErr.Error(), "not a JSON object") {
					t.Errorf("ArgsErr = %v", tc.ArgsErr)
				}
			}
		})
	}
}

func TestCompleteParsesToolCallArguments(t *testing.T) {
	s := fake(t, llmfake.Step{Plan: llmfake.ToolCall("call_1", "kudos", `{"member":"ada","count":2}`)})
	resp, err := client(t, s).Complete(ctxTimeout(t), user("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Args["member"] != "ada" || resp.ToolCalls[0].Args["count"] != 2.0 {
		t.Errorf("tool calls = %+v", resp.ToolCalls)
	}
}

func TestCompleteReadsANonStreamedAnswerWhenTheServerIgnoresStream(t *testing.T) {
	// A 400 step makes the client retry with stream: false; the fake then
	// answers one JSON body, which must carry the same reassembly.
	s := fake(t,
		llmfake.Step{Plan: llmfake.HTTPFailure(400, "invalid_request_error", "stream_options is not supported")},
		llmfake.Step{Plan: llmfake.Plan{Reasoning: []string{"r"}, Content: []string{"whole"}, Calls: []llmfake.Call{{ID: "c1", Name: "weather", Args: []string{`{"a":1}`}}}}},
	)
	resp, err := client(t, s).Complete(ctxTimeout(t), user("hi"), nil)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Content != "whole" || resp.Reasoning != "r" || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Args["a"] != 1.0 || resp.FinishReason != "tool_calls" {
		t.Errorf("response = %+v", resp)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || !reqs[0].Body.Stream || reqs[1].Body.Stream {
		t.Fatalf("requests: %d, want a streamed one then one with stream: false", len(reqs))
	}
	if _, sent := reqs[1].Fields["stream_options"]; sent {
		t.Errorf("the non-streamed retry sent stream_options: %s", reqs[1].Raw)
	}
}
