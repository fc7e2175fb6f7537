package hello_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/kimitest"
	"github.com/kimiapp/kimi/modules/hello"
)

// TestGreetOnTheAppliance: on the real appliance, Bob's mention reaches the
// assistant's (scripted) model with hello_member offered; the model calls
// it with arguments that claim another name, and the tool greets Bob, the
// speaker, from the trusted context.
func TestGreetOnTheAppliance(t *testing.T) {
	t.Parallel()
	a := kimitest.Start(t, kimitest.WithModules(hello.Spec()))
	const call = "call_greet"
	a.Model().SetSteps(
		llmfake.Step{Match: llmfake.Match{ToolResultFor: call}, Reply: func(r llmfake.Recorded) llmfake.Plan {
			var out struct{ Result string }
			_ = json.Unmarshal([]byte(r.Body.Last().Content), &out)
			return llmfake.Text("greeted: " + out.Result)
		}},
		llmfake.Step{Match: llmfake.Match{Contains: "say hello"}, Plan: llmfake.ToolCall(call, hello.ToolGreet, `{"name":"Mallory"}`)},
	)
	before := len(a.Model().Requests())
	trigger := a.Mention(kimitest.ChannelID, kimitest.Bob, "say hello")
	answer := a.WaitMessage(kimitest.ChannelID, func(m *discordgo.Message) bool {
		return m.MessageReference != nil && m.MessageReference.MessageID == trigger.ID && strings.HasPrefix(m.Content, "greeted:")
	})
	if answer.Content != "greeted: Hello, Bob!" {
		t.Fatalf("the answer is %q", answer.Content)
	}
	if reqs := a.Model().Requests()[before:]; len(reqs) == 0 || !slices.Contains(reqs[0].Body.ToolNames(), hello.ToolGreet) {
		t.Fatalf("the model was not offered %s", hello.ToolGreet)
	}
}
