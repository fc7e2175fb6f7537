package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

func echoTool(_ context.Context, tc sdk.ToolContext, args json.RawMessage) (string, error) {
	return tc.UserName + " " + string(args), nil
}

func TestRecordingToolRegistry(t *testing.T) {
	r := NewRecordingToolRegistry()
	if err := r.Register(sdk.Tool{Name: "echo", Description: "Echo.", Handler: echoTool, Searchable: true}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tool sdk.Tool
		want string
	}{
		{"duplicate", sdk.Tool{Name: "echo", Description: "d", Handler: echoTool}, "tool 'echo' is already registered"},
		{"no handler", sdk.Tool{Name: "x", Description: "d"}, "tool 'x' needs a handler"},
		{"no description", sdk.Tool{Name: "x", Handler: echoTool}, "tool 'x' needs a description"},
	}
	for _, tt := range tests {
		if err := r.Register(tt.tool); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	ctx := context.Background()
	got, err := r.Call(ctx, "echo", map[string]int{"n": 1}, sdk.ToolContext{UserName: "Alice"})
	if err != nil || got != `Alice {"n":1}` {
		t.Errorf("call = %q, %v", got, err)
	}
	if got, _ := r.Call(ctx, "echo", nil, sdk.ToolContext{UserName: "Bob"}); got != "Bob {}" {
		t.Errorf("call without args = %q", got)
	}
	if _, err := r.Call(ctx, "missing", nil, sdk.ToolContext{}); err == nil {
		t.Error("calling an unknown tool succeeded")
	}
	if _, err := r.Call(ctx, "echo", func() {}, sdk.ToolContext{}); !errors.Is(err, sdk.ErrContract) {
		t.Errorf("unserializable args = %v", err)
	}

	r.Seal()
	err = r.Register(sdk.Tool{Name: "late", Description: "d", Handler: echoTool})
	if err == nil || err.Error() != "tool 'late' cannot be registered after module loading; register tools from ModuleSpec.create(), not start()" {
		t.Errorf("after sealing = %v", err)
	}
	if got := r.Names(); !slices.Equal(got, []string{"echo"}) {
		t.Errorf("names = %v", got)
	}
	if tool, ok := r.Tool("echo"); !ok || !tool.Searchable || tool.EffectiveMinTier() != sdk.TierMember {
		t.Errorf("tool = %+v", tool)
	}
}

func TestLoadContextRecordsLabelsAndSurfaces(t *testing.T) {
	lc, rec := NewLoadContext("mod", LoadOptions{Settings: sdk.NewSettings(map[string]any{"limit": 3})})

	if lc.ModuleName() != "mod" || lc.Settings().Int("limit") != 3 || lc.Logger() == nil {
		t.Error("load context does not report its inputs")
	}
	if !lc.Capabilities().Has(sdk.CapProposals) || !lc.Capabilities().Has(sdk.CapDiscordHistory) || lc.Capabilities().Has(sdk.CapScheduledResults) {
		t.Errorf("default capabilities = %v, want the baseline", lc.Capabilities().Names())
	}
	if err := lc.Tools().Register(sdk.Tool{Name: "echo", Description: "d", Handler: echoTool}); err != nil {
		t.Fatal(err)
	}
	lc.RegisterToolLabels(map[string]string{"echo": "Echoing"})
	lc.DeclareSurfaceTools("eval", []string{"echo"})

	if rec.Labels()["echo"] != "Echoing" {
		t.Errorf("labels = %v", rec.Labels())
	}
	if got := rec.Surfaces()["eval"]; !slices.Equal(got, []string{"echo"}) {
		t.Errorf("surfaces = %v", rec.Surfaces())
	}
	if _, ok := rec.Registry.Tool("echo"); !ok {
		t.Error("the recorder's registry does not hold the tool")
	}
}
