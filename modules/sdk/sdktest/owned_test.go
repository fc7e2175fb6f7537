package sdktest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// ownerModule registers, in Create and Start, whatever its test asks.
type ownerModule struct {
	start func(*sdk.Runtime) error
}

func (ownerModule) Migrations() []sdk.Migration { return nil }
func (m ownerModule) Start(_ context.Context, rt *sdk.Runtime) error {
	if m.start != nil {
		return m.start(rt)
	}
	return nil
}
func (ownerModule) Close(context.Context) error { return nil }

// TestRuntimeRefusesUndeclaredNames: NewRuntime's fakes enforce the host's
// rule — a module registers only the tool and command names its spec
// declares, with the host's message — and declared names register.
func TestRuntimeRefusesUndeclaredNames(t *testing.T) {
	noop := func(context.Context, sdk.Interaction) error { return nil }
	tool := func(name string) sdk.Tool {
		return sdk.Tool{Name: name, Description: "d", Handler: func(context.Context, sdk.ToolContext, json.RawMessage) (string, error) { return name, nil }}
	}
	tests := []struct {
		name      string
		tools     []string // registered in Create
		group     string   // AddCommand'ed in Start ("kudos give")
		declare   func(*sdk.Spec)
		createErr string
		startErr  string
	}{
		{name: "undeclared tool", tools: []string{"hello_member"}, createErr: "module 'squatter' did not declare tool 'hello_member'"},
		{name: "declared tool", tools: []string{"own_tool"}, declare: func(s *sdk.Spec) { s.Tools = []string{"own_tool"} }},
		{name: "one of two undeclared", tools: []string{"own_tool", "hello_member"}, declare: func(s *sdk.Spec) { s.Tools = []string{"own_tool"} },
			createErr: "module 'squatter' did not declare tool 'hello_member'"},
		{name: "undeclared command group", group: "kudos", startErr: "module 'squatter' did not declare command 'kudos'"},
		{name: "declared command group", group: "own", declare: func(s *sdk.Spec) { s.Commands = []string{"own"} }},
		{name: "a declared tool name is no command", group: "own", declare: func(s *sdk.Spec) { s.Tools = []string{"own"} },
			startErr: "module 'squatter' did not declare command 'own'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mod := ownerModule{start: func(rt *sdk.Runtime) error {
				if tt.group == "" {
					return nil
				}
				_, err := rt.Interactions.AddCommand(sdk.CommandSpec{Group: tt.group, Name: "give", Description: "d", MinTier: sdk.TierMember}, noop, nil)
				return err
			}}
			spec := sdk.Spec{Name: "squatter", Version: "1", APIVersion: sdk.APIVersion, Create: func(lc sdk.LoadContext) (sdk.Module, error) {
				for _, n := range tt.tools {
					if err := lc.Tools().Register(tool(n)); err != nil {
						return nil, err
					}
				}
				return mod, nil
			}}
			if tt.declare != nil {
				tt.declare(&spec)
			}
			r, err := TryNewRuntime(t, spec)
			if tt.createErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.createErr) {
					t.Fatalf("TryNewRuntime = %v, want %q", err, tt.createErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			err = r.StartErr(context.Background())
			if tt.startErr == "" && err != nil || tt.startErr != "" && (err == nil || !strings.Contains(err.Error(), tt.startErr)) {
				t.Errorf("StartErr = %v, want %q", err, tt.startErr)
			}
		})
	}
}

// TestFakesOwnDeclaredNames: the fakes on their own accept any name until
// told the module's declarations, then refuse the others.
func TestFakesOwnDeclaredNames(t *testing.T) {
	reg := NewRecordingToolRegistry()
	if err := reg.Register(sdk.Tool{Name: "free", Description: "d", Handler: echoTool}); err != nil {
		t.Fatalf("undeclared registry refused a tool: %v", err)
	}
	reg.Declare("m", []string{"mine"})
	if err := reg.Register(sdk.Tool{Name: "theirs", Description: "d", Handler: echoTool}); err == nil || err.Error() != "module 'm' did not declare tool 'theirs'" {
		t.Errorf("undeclared tool = %v", err)
	}
	if err := reg.Register(sdk.Tool{Name: "mine", Description: "d", Handler: echoTool}); err != nil {
		t.Errorf("declared tool = %v", err)
	}

	ix := NewFakeInteractions("m")
	noop := func(context.Context, sdk.Interaction) error { return nil }
	if _, err := ix.AddCommand(sdk.CommandSpec{Name: "free", Description: "d"}, noop, nil); err != nil {
		t.Fatalf("undeclared router refused a command: %v", err)
	}
	ix.DeclareCommands([]string{"mine"})
	if _, err := ix.AddCommand(sdk.CommandSpec{Name: "theirs", Description: "d"}, noop, nil); err == nil || err.Error() != "module 'm' did not declare command 'theirs'" {
		t.Errorf("undeclared command = %v", err)
	}
	if _, err := ix.AddCommand(sdk.CommandSpec{Group: "mine", Name: "sub", Description: "d"}, noop, nil); err != nil {
		t.Errorf("declared group = %v", err)
	}
}
