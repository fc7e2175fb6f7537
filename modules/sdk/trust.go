package sdk

import (
	"context"
	"fmt"
)

// TrustTier is a member's trust level: TierMember < TierRegular < TierStaff.
// Compare tiers with <, >=. The zero value is "unset": in specs it means the
// field's documented default.
type TrustTier uint8

// Trust tiers, ordered.
const (
	TierMember TrustTier = iota + 1
	TierRegular
	TierStaff
)

// String returns "member", "regular", "staff" or "" for unset.
func (t TrustTier) String() string {
	switch t {
	case TierMember:
		return "member"
	case TierRegular:
		return "regular"
	case TierStaff:
		return "staff"
	}
	return ""
}

// Valid reports whether t is one of the three tiers.
func (t TrustTier) Valid() bool { return t >= TierMember && t <= TierStaff }

// Or returns t, or def when t is unset.
func (t TrustTier) Or(def TrustTier) TrustTier {
	if t == 0 {
		return def
	}
	return t
}

// AtLeast reports whether t is min or above.
func (t TrustTier) AtLeast(min TrustTier) bool { return t >= min }

// MarshalText renders the tier name.
func (t TrustTier) MarshalText() ([]byte, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("sdk: invalid trust tier %d", uint8(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText parses a tier name.
func (t *TrustTier) UnmarshalText(b []byte) error {
	v, err := ParseTrustTier(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// ParseTrustTier parses "member", "regular" or "staff".
func ParseTrustTier(s string) (TrustTier, error) {
	switch s {
	case "member":
		return TierMember, nil
	case "regular":
		return TierRegular, nil
	case "staff":
		return TierStaff, nil
	}
	return 0, contractErrorf("unknown trust tier %s", pyRepr(s))
}

// Trust is the read-only trust lookup. An unknown member is TierMember
// unless listed as staff.
type Trust interface {
	// Tier returns the user's trust tier in the guild.
	Tier(ctx context.Context, guildID, userID uint64) (TrustTier, error)
}
