// Package hello is the smallest useful Kimi module: one LLM tool that greets
// the member who is speaking. Copy it to start a module; see modules/kudos
// for every port in use.
package hello

import (
	"context"
	"encoding/json"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Name is the module name (and the prefix of anything it owns).
const Name = "hello"

// ToolGreet is the tool's name.
const ToolGreet = "hello_member"

// Spec declares the module: no permissions, settings or storage.
func Spec() sdk.Spec {
	return sdk.Spec{
		Name:        Name,
		Version:     "1.0.0",
		Description: "Gives the assistant a hello_member tool that greets a member by name; an example of the smallest module.",
		// A literal, not sdk.APIVersion: rebuilding this source against a
		// future, incompatible SDK must fail preflight instead of silently
		// claiming compatibility.
		APIVersion: 2,
		Create:     create,
		// The names the module registers and owns.
		Tools: []string{ToolGreet},
	}
}

// create registers the tool. Tools are registered at load time only; the
// host seals the registry afterwards.
func create(lc sdk.LoadContext) (sdk.Module, error) {
	err := lc.Tools().Register(sdk.Tool{
		Name:        ToolGreet,
		Description: "Greet the member who is speaking.",
		Parameters:  map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false},
		Handler:     greet,
		// Default registration: members and above, inside guilds only.
	})
	if err != nil {
		return nil, err
	}
	return module{}, nil
}

// greet answers with the caller's name. Identity comes from the trusted
// tool context, never from model-supplied arguments, which are ignored.
func greet(_ context.Context, tc sdk.ToolContext, _ json.RawMessage) (string, error) {
	return "Hello, " + tc.UserName + "!", nil
}

// module has no migrations and nothing to start or close.
type module struct{}

var _ sdk.Module = module{}

func (module) Migrations() []sdk.Migration               { return nil }
func (module) Start(context.Context, *sdk.Runtime) error { return nil }
func (module) Close(context.Context) error               { return nil }
