package discord

import (
	"context"

	"github.com/kimiapp/kimi/modules/sdk"
)

// resolve resolves a tier from roles (nil roles: an unknown member, whose
// tier comes from the user-id lists alone).
func (a *actions) resolve(guildID, userID uint64, roles []uint64) sdk.TrustTier {
	if a.guilds == nil {
		return sdk.TierMember
	}
	return a.guilds.Resolve(guildID, userID, roles)
}

// tier resolves a member's trust tier from their roles: Kimi's member cache,
// else the session state, else a REST fetch; an unknown member (absent, or
// Discord unreachable) gets what the user-id lists give (member unless a
// staff id), as the original's TrustLookup.
func (a *actions) tier(ctx context.Context, guildID, userID uint64) (sdk.TrustTier, error) {
	if a.cache != nil {
		if roles, ok := a.cache.MemberRoles(guildID, userID); ok {
			return a.resolve(guildID, userID, nonNil(roles)), nil
		}
	}
	s, err := a.src.session()
	if err != nil {
		return a.resolve(guildID, userID, nil), nil
	}
	mem, err := member(ctx, s, guildID, userID)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		a.log.Debug("member fetch for the trust tier failed", "guild", guildID, "user", userID, "err", err)
		return a.resolve(guildID, userID, nil), nil
	}
	if mem == nil {
		return a.resolve(guildID, userID, nil), nil
	}
	return a.resolve(guildID, userID, nonNil(parseIDs(mem.Roles))), nil
}

// nonNil keeps a known member with no roles distinct from an unknown one.
func nonNil(roles []uint64) []uint64 {
	if roles == nil {
		return []uint64{}
	}
	return roles
}
