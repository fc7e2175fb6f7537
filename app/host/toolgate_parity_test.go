package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// TestRunToolGatesLikeSdktest: the host's RunTool and sdktest's CallGated
// decide a tool call alike — the same tools, callers and module state
// (running or closed; guild 1 and 3 active, 2 not; owner 9) give the same
// answers, and every refusal is hostkit.ErrToolUnavailable on both (the
// host's own ErrToolUnavailable, its message unchanged, wraps it): one gate,
// hostkit.CheckToolCall, so a module's unit test sees the host's refusal.
func TestRunToolGatesLikeSdktest(t *testing.T) {
	ctx := context.Background()
	const owner = 9
	handler := func(name string) sdk.ToolHandler {
		return func(context.Context, sdk.ToolContext, json.RawMessage) (string, error) { return name, nil }
	}
	tools := []sdk.Tool{
		{Name: "gate_member", Description: "d"},
		{Name: "gate_staff", Description: "d", MinTier: sdk.TierStaff},
		{Name: "gate_regular", Description: "d", MinTier: sdk.TierRegular},
		{Name: "gate_owner", Description: "d", OwnerOnly: true},
		{Name: "gate_dm", Description: "d", AllowOutsideGuilds: true},
		{Name: "gate_restricted", Description: "d", RestrictGuilds: true, GuildIDs: []uint64{1}},
	}
	var names []string
	fake := sdktest.NewRecordingToolRegistry()
	for i := range tools {
		tools[i].Handler = handler(tools[i].Name)
		names = append(names, tools[i].Name)
		if err := fake.Register(tools[i]); err != nil {
			t.Fatal(err)
		}
	}
	mod := &testModule{}
	s := spec("gate", mod, func(s *sdk.Spec) { s.Tools = names })
	s.Create = func(c sdk.LoadContext) (sdk.Module, error) {
		for _, tool := range tools {
			if err := c.Tools().Register(tool); err != nil {
				return nil, err
			}
		}
		return mod, nil
	}
	st := openStore(t)
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Modules: []sdk.Spec{s}, Trust: guildcfg.TrustSettings{OwnerUserID: owner}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(guilds.Close)
	r := newRig(t, []sdk.Spec{s}, func(o *Options) { o.Guilds = guilds })
	r.guilds = guilds
	r.start(t)
	r.activate(t, 1)
	r.activate(t, 3)
	gate := sdktest.ToolGate{Running: true, GuildActive: func(g uint64) bool { return g == 1 || g == 3 }, IsOwner: func(u uint64) bool { return u == owner }}

	type call struct {
		tool string
		tc   sdk.ToolContext
	}
	var calls []call
	for _, name := range append(names, "gate_unknown") {
		for _, tc := range []sdk.ToolContext{
			{GuildID: 1, UserID: 5},
			{GuildID: 1, UserID: 5, TrustTier: sdk.TierRegular},
			{GuildID: 1, UserID: 5, TrustTier: sdk.TierStaff},
			{GuildID: 1, UserID: owner},
			{GuildID: 2, UserID: 5, TrustTier: sdk.TierStaff},
			{GuildID: 3, UserID: owner, TrustTier: sdk.TierStaff},
			{GuildID: 0, UserID: 5},
			{GuildID: 0, UserID: owner, TrustTier: sdk.TierStaff},
		} {
			calls = append(calls, call{name, tc})
		}
	}
	compare := func(t *testing.T, gate sdktest.ToolGate) (allowed int) {
		for _, c := range calls {
			t.Run(fmt.Sprintf("%s/guild=%d/user=%d/tier=%d", c.tool, c.tc.GuildID, c.tc.UserID, c.tc.TrustTier), func(t *testing.T) {
				hostOut, hostErr := r.h.RunTool(ctx, c.tool, c.tc, json.RawMessage(`{}`))
				fakeOut, fakeErr := fake.CallGated(ctx, c.tool, nil, c.tc, gate)
				if (hostErr == nil) != (fakeErr == nil) || hostOut != fakeOut {
					t.Fatalf("host %q, %v; sdktest %q, %v", hostOut, hostErr, fakeOut, fakeErr)
				}
				if hostErr == nil {
					allowed++
					return
				}
				if !errors.Is(hostErr, hostkit.ErrToolUnavailable) || !errors.Is(fakeErr, hostkit.ErrToolUnavailable) {
					t.Fatalf("refusals are not the one gate's: host %v, sdktest %v", hostErr, fakeErr)
				}
				if !errors.Is(hostErr, ErrToolUnavailable) || hostErr.Error() != "host: this tool is not available in this server" {
					t.Fatalf("host refusal = %v, want the host's ErrToolUnavailable", hostErr)
				}
			})
		}
		return allowed
	}
	// Both allowed and refused calls occur, so the comparison decides
	// something either way.
	if n := compare(t, gate); n == 0 || n == len(calls) {
		t.Fatalf("%d of %d calls allowed", n, len(calls))
	}
	// Closed, the module's tools are masked on both.
	if err := r.h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	gate.Running = false
	t.Run("closed", func(t *testing.T) {
		if n := compare(t, gate); n != 0 {
			t.Fatalf("%d calls allowed after the module closed", n)
		}
	})
}
