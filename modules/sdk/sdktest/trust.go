package sdktest

import (
	"context"
	"sync"

	"github.com/kimiapp/kimi/modules/sdk"
)

// FakeTrust is an sdk.Trust answering from a table of tiers; anyone not in
// it has the default tier (member unless changed).
type FakeTrust struct {
	mu      sync.Mutex
	tiers   map[GuildUser]sdk.TrustTier
	dflt    sdk.TrustTier
	lookups []GuildUser
}

var _ sdk.Trust = (*FakeTrust)(nil)

// NewFakeTrust returns a lookup where everyone is a member.
func NewFakeTrust() *FakeTrust {
	return &FakeTrust{tiers: map[GuildUser]sdk.TrustTier{}, dflt: sdk.TierMember}
}

// Set gives a member a tier in a guild.
func (f *FakeTrust) Set(guildID, userID uint64, tier sdk.TrustTier) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tiers[GuildUser{guildID, userID}] = tier
}

// SetDefault sets the tier of everyone not listed.
func (f *FakeTrust) SetDefault(tier sdk.TrustTier) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dflt = tier
}

// Tier returns the member's tier and records the lookup.
func (f *FakeTrust) Tier(ctx context.Context, guildID, userID uint64) (sdk.TrustTier, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups = append(f.lookups, GuildUser{guildID, userID})
	if tier, ok := f.tiers[GuildUser{guildID, userID}]; ok {
		return tier, nil
	}
	return f.dflt, nil
}

// Lookups returns every (guild, user) looked up, oldest first.
func (f *FakeTrust) Lookups() []GuildUser {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]GuildUser(nil), f.lookups...)
}
