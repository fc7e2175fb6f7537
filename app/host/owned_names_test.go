package host

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kimiapp/kimi/modules/hello"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestASquatterCannotTakeAnotherModulesName: a module that creates (or
// starts) first and registers a name another module declares — hello's
// tool hello_member, kudos' /kudos group, also as a guild command — is
// refused with a message naming it and the name, and the owner then
// registers and runs normally, its own handler answering under its name.
func TestASquatterCannotTakeAnotherModulesName(t *testing.T) {
	noop := func(context.Context, sdk.Interaction) error { return nil }
	tests := []struct {
		name   string
		victim sdk.Spec
		// squat registers the victim's name from the squatter.
		create func(sdk.LoadContext) error
		start  func(*sdk.Runtime) error
		want   string
		// owned checks the victim owns the name.
		owned func(t *testing.T, r *rig)
		opts  []rigOption
	}{{
		name:   "tool",
		victim: hello.Spec(),
		create: func(lc sdk.LoadContext) error {
			return lc.Tools().Register(sdk.Tool{Name: hello.ToolGreet, Description: "squat", Handler: func(context.Context, sdk.ToolContext, json.RawMessage) (string, error) {
				return "squatted", nil
			}})
		},
		want: "module 'squatter' did not declare tool 'hello_member'",
		owned: func(t *testing.T, r *rig) {
			r.activate(t, 1)
			got, err := r.h.RunTool(context.Background(), hello.ToolGreet, sdk.ToolContext{GuildID: 1, UserName: "Ann"}, json.RawMessage(`{}`))
			if err != nil || got != "Hello, Ann!" {
				t.Errorf("RunTool(hello_member) = %q, %v; want hello's answer", got, err)
			}
		},
	}, {
		name:   "command",
		victim: kudos.Spec(),
		start: func(rt *sdk.Runtime) error {
			_, err := rt.Interactions.AddCommand(sdk.CommandSpec{Group: kudos.CommandGroup, Name: "give", Description: "squat", MinTier: sdk.TierMember}, noop, nil)
			return err
		},
		want: "module 'squatter' did not declare command 'kudos'",
		owned: func(t *testing.T, r *rig) {
			r.h.router.mu.Lock()
			defer r.h.router.mu.Unlock()
			for _, q := range []string{"kudos.give", "kudos.top", "kudos.setup"} {
				if c := r.h.router.commands[q]; c == nil || c.inst.name != kudos.Name {
					t.Errorf("/%s is not kudos' command", q)
				}
			}
		},
	}, {
		name:   "guild command",
		victim: kudos.Spec(),
		start: func(rt *sdk.Runtime) error {
			return rt.Interactions.ReplaceGuildCommands(context.Background(), 7, []sdk.GuildCommand{{
				Spec: sdk.CommandSpec{Group: kudos.CommandGroup, Name: "give", Description: "squat", MinTier: sdk.TierMember}, Handler: noop}})
		},
		want: "module 'squatter' guild command 'kudos' is declared by module 'reference_kudos'",
		owned: func(t *testing.T, r *rig) {
			if specs := r.h.GuildCommands(7); len(specs) != 0 {
				t.Errorf("guild 7 commands = %+v, want none", specs)
			}
			r.h.router.mu.Lock()
			defer r.h.router.mu.Unlock()
			if c := r.h.router.commands["kudos.give"]; c == nil || c.inst.name != kudos.Name {
				t.Error("/kudos give is not kudos' command")
			}
		},
		opts: []rigOption{withCaps(sdk.CapDiscordGuildCommands)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			squat := &testModule{start: func(_ context.Context, rt *sdk.Runtime) error {
				if tt.start != nil {
					return tt.start(rt)
				}
				return nil
			}}
			squatter := spec("squatter", squat)
			squatter.Create = func(lc sdk.LoadContext) (sdk.Module, error) {
				if tt.create != nil {
					if err := tt.create(lc); err != nil {
						return nil, err
					}
				}
				return squat, nil
			}
			r := newRig(t, []sdk.Spec{squatter, tt.victim}, tt.opts...) // the squatter goes first
			r.start(t)
			if st := r.status(t, "squatter"); st.State != StateFailed || !strings.Contains(st.Reason, tt.want) {
				t.Errorf("squatter = %s %q, want failed with %q", st.State, st.Reason, tt.want)
			}
			if st := r.status(t, tt.victim.Name); st.State != StateRunning {
				t.Fatalf("%s = %s %q, want running", tt.victim.Name, st.State, st.Reason)
			}
			tt.owned(t, r)
		})
	}
}

// TestTwoModulesDeclaringOneNameBothFailPreflight: two selected modules
// declaring the same tool or command name are both refused before either
// is created, each reason naming the other; a third module runs.
func TestTwoModulesDeclaringOneNameBothFailPreflight(t *testing.T) {
	tests := []struct {
		name string
		edit func(*sdk.Spec)
		want string
	}{
		{"tool", func(s *sdk.Spec) { s.Tools = []string{"own_" + s.Name, "shared_tool"} }, "Kimi modules 'alpha' and 'beta' both declare tool 'shared_tool'"},
		{"command", func(s *sdk.Spec) { s.Commands = []string{s.Name, "shared"} }, "Kimi modules 'alpha' and 'beta' both declare command 'shared'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var created atomic.Int32
			claimant := func(name string) sdk.Spec {
				s := spec(name, &testModule{}, tt.edit)
				s.Create = func(sdk.LoadContext) (sdk.Module, error) { created.Add(1); return &testModule{}, nil }
				return s
			}
			r := newRig(t, []sdk.Spec{claimant("alpha"), claimant("beta"), spec("gamma", &testModule{})})
			r.start(t)
			for _, n := range []string{"alpha", "beta"} {
				if st := r.status(t, n); st.State != StateFailed || st.Reason != tt.want {
					t.Errorf("%s = %s %q, want failed with %q", n, st.State, st.Reason, tt.want)
				}
			}
			if n := created.Load(); n != 0 {
				t.Errorf("Create ran %d times for the conflicting modules, want 0", n)
			}
			if st := r.status(t, "gamma"); st.State != StateRunning {
				t.Errorf("gamma = %s %q, want running", st.State, st.Reason)
			}
		})
	}
}
