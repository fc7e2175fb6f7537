package guildcfg

import (
	"slices"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TrustSettings are the deployment's trust lists (KIMI_STAFF_USER_IDS,
// KIMI_STAFF_ROLE_IDS, KIMI_REGULAR_ROLE_IDS) and the bot owner
// (KIMI_OWNER_USER_ID, 0 when unset). They apply in every guild; a guild's
// server-setup document can add to the lists, never remove.
type TrustSettings struct {
	StaffUserIDs   []uint64
	StaffRoleIDs   []uint64
	RegularRoleIDs []uint64
	OwnerUserID    uint64
}

// Resolve returns a member's trust tier in a guild, as the original's
// TrustResolver (reference/kimi-agent-host.md §7): a staff user id (global
// or the guild's) is staff; an unknown member (roles nil) is member; any
// staff role is staff, else any regular role is regular, else member. Only
// a valid server-setup document adds its lists (a broken one grants
// nothing). The owner is not implicitly staff: see IsOwner. Resolve reads
// the in-memory snapshot and does not allocate.
func (s *Service) Resolve(guildID, userID uint64, roles []uint64) sdk.TrustTier {
	var guild *GuildConfig
	if g := s.snap.Load().guilds[guildID]; g != nil && g.valid {
		guild = &g.config
	}
	global := &s.trust
	if slices.Contains(global.StaffUserIDs, userID) || (guild != nil && slices.Contains(guild.StaffUserIDs, userID)) {
		return sdk.TierStaff
	}
	if roles == nil {
		return sdk.TierMember
	}
	if anyIn(roles, global.StaffRoleIDs) || (guild != nil && anyIn(roles, guild.StaffRoleIDs)) {
		return sdk.TierStaff
	}
	if anyIn(roles, global.RegularRoleIDs) || (guild != nil && anyIn(roles, guild.RegularRoleIDs)) {
		return sdk.TierRegular
	}
	return sdk.TierMember
}

// ConfiguredOwner is the deployment's bot owner (KIMI_OWNER_USER_ID), 0
// when unset.
func (s *Service) ConfiguredOwner() uint64 { return s.trust.OwnerUserID }

// IsOwner reports whether userID is the deployment's bot owner. An unset
// owner matches nobody (fail closed).
func (s *Service) IsOwner(userID uint64) bool {
	return s.trust.OwnerUserID != 0 && userID == s.trust.OwnerUserID
}

func anyIn(roles, list []uint64) bool {
	for _, r := range roles {
		if slices.Contains(list, r) {
			return true
		}
	}
	return false
}
