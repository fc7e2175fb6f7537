package hello

import (
	"context"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// Port of test_hello_module.py::test_greeting_uses_the_actual_caller.
func TestGreetingUsesTheActualCaller(t *testing.T) {
	lc, recorded := sdktest.NewLoadContext(Name, sdktest.LoadOptions{})
	if _, err := Spec().Create(lc); err != nil {
		t.Fatalf("create: %v", err)
	}
	caller := sdk.ToolContext{UserID: 123, UserName: "Alice", GuildID: 456, ChannelID: 789, TrustTier: sdk.TierMember}

	got, err := recorded.Registry.Call(context.Background(), ToolGreet, map[string]any{"user_name": "Mallory"}, caller)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if got != "Hello, Alice!" {
		t.Errorf("greeting = %q, want %q", got, "Hello, Alice!")
	}
	tool, _ := recorded.Registry.Tool(ToolGreet)
	if tool.AllowOutsideGuilds {
		t.Error("hello_member must be guild-only (the default registration)")
	}
	if tool.EffectiveMinTier() != sdk.TierMember {
		t.Errorf("min tier = %v, want member", tool.EffectiveMinTier())
	}
}

// The spec passes the host's preflight validators.
func TestSpecPassesPreflight(t *testing.T) {
	if err := Spec().Validate(); err != nil {
		t.Fatal(err)
	}
	rt := sdktest.NewRuntime(t, Spec())
	rt.Start(context.Background())
	if got := rt.Tools.Names(); len(got) != 1 || got[0] != ToolGreet {
		t.Errorf("tools = %v, want [%s]", got, ToolGreet)
	}
}
