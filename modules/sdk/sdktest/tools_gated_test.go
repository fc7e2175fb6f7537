package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestCallGated: the gated call runs a tool's handler only where the host
// would (module running, visible in the caller's guild or outside guilds,
// tier, owner-only) and otherwise refuses with the host's refusal, the
// handler not run.
func TestCallGated(t *testing.T) {
	const guild, other, owner, stranger = 10, 20, 1, 2
	ran := 0
	handler := func(context.Context, sdk.ToolContext, json.RawMessage) (string, error) { ran++; return "ok", nil }
	r := NewRecordingToolRegistry()
	for _, tool := range []sdk.Tool{
		{Name: "plain", Description: "d", Handler: handler},
		{Name: "dm", Description: "d", Handler: handler, AllowOutsideGuilds: true},
		{Name: "pinned", Description: "d", Handler: handler, RestrictGuilds: true, GuildIDs: []uint64{other}},
		{Name: "staff", Description: "d", Handler: handler, MinTier: sdk.TierStaff},
		{Name: "owner", Description: "d", Handler: handler, OwnerOnly: true},
	} {
		if err := r.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	running := ToolGate{Running: true, IsOwner: func(id uint64) bool { return id == owner }}
	onlyOther := running
	onlyOther.GuildActive = func(id uint64) bool { return id == other }
	tests := []struct {
		name, tool string
		tc         sdk.ToolContext
		gate       ToolGate
		allowed    bool
	}{
		{"in a guild", "plain", sdk.ToolContext{GuildID: guild}, running, true},
		{"module not running", "plain", sdk.ToolContext{GuildID: guild}, ToolGate{}, false},
		{"module inactive in the guild", "plain", sdk.ToolContext{GuildID: guild}, onlyOther, false},
		{"module active in the guild", "plain", sdk.ToolContext{GuildID: other}, onlyOther, true},
		{"outside guilds, guild-only tool", "plain", sdk.ToolContext{}, running, false},
		{"outside guilds, allowed", "dm", sdk.ToolContext{}, running, true},
		{"restricted, another guild", "pinned", sdk.ToolContext{GuildID: guild}, running, false},
		{"restricted, its guild", "pinned", sdk.ToolContext{GuildID: other}, running, true},
		{"tier too low", "staff", sdk.ToolContext{GuildID: guild, TrustTier: sdk.TierRegular}, running, false},
		{"unset tier counts as member", "staff", sdk.ToolContext{GuildID: guild}, running, false},
		{"tier enough", "staff", sdk.ToolContext{GuildID: guild, TrustTier: sdk.TierStaff}, running, true},
		{"owner-only, the owner", "owner", sdk.ToolContext{GuildID: guild, UserID: owner}, running, true},
		{"owner-only, another user", "owner", sdk.ToolContext{GuildID: guild, UserID: stranger}, running, false},
		{"owner-only, no owner configured", "owner", sdk.ToolContext{GuildID: guild, UserID: owner}, ToolGate{Running: true}, false},
		{"unknown tool", "nope", sdk.ToolContext{GuildID: guild}, running, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := ran
			got, err := r.CallGated(context.Background(), tt.tool, nil, tt.tc, tt.gate)
			if tt.allowed {
				if err != nil || got != "ok" || ran != before+1 {
					t.Errorf("CallGated = %q, %v (handler ran %d times), want it run", got, err, ran-before)
				}
				return
			}
			if !errors.Is(err, ErrToolUnavailable) || ran != before {
				t.Errorf("CallGated = %q, %v (handler ran %d times), want %v and no run", got, err, ran-before, ErrToolUnavailable)
			}
			if err != nil && err.Error() != "this tool is not available in this server" {
				t.Errorf("refusal %q, want the host's", err)
			}
		})
	}
}
