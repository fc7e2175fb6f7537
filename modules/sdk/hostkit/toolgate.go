package hostkit

import (
	"errors"
	"slices"

	"github.com/kimiapp/kimi/modules/sdk"
)

// ErrToolUnavailable is the refusal of a tool call the host's rules do not
// allow (the reference host's "This tool is not available in this
// server."): a tool that is unknown, masked or not offered to this caller.
var ErrToolUnavailable = errors.New("this tool is not available in this server")

// ToolGate is what the host knows about a module and the appliance when it
// decides whether a tool call is allowed (§1.9).
type ToolGate struct {
	// Running: the module has started; its tools are masked until then.
	Running bool
	// GuildActive reports whether the module is active in a guild; nil
	// means active in every guild.
	GuildActive func(guildID uint64) bool
	// IsOwner reports whether a user is the appliance's owner
	// (OWNER_USER_ID); nil fails owner-only tools closed.
	IsOwner func(userID uint64) bool
}

// ToolVisible reports whether t is offered in guildID (0: a DM or personal
// chat) under g: masked until the module runs; outside guilds only with
// AllowOutsideGuilds; in a guild only where RestrictGuilds allows it and the
// module is active.
func ToolVisible(t sdk.Tool, guildID uint64, g ToolGate) bool {
	if !g.Running {
		return false
	}
	if guildID == 0 {
		return t.AllowOutsideGuilds
	}
	if t.RestrictGuilds && !slices.Contains(t.GuildIDs, guildID) {
		return false
	}
	return g.GuildActive == nil || g.GuildActive(guildID)
}

// CheckToolCall applies the host's rules to a call of t by the caller tc:
// visible in tc's guild, the caller's tier at least the tool's MinTier (an
// unset tier counts as member), and owner-only tools for the owner alone.
// A refused call is ErrToolUnavailable.
func CheckToolCall(t sdk.Tool, tc sdk.ToolContext, g ToolGate) error {
	if !ToolVisible(t, tc.GuildID, g) || tc.TrustTier.Or(sdk.TierMember) < t.EffectiveMinTier() ||
		t.OwnerOnly && (g.IsOwner == nil || !g.IsOwner(tc.UserID)) {
		return ErrToolUnavailable
	}
	return nil
}
