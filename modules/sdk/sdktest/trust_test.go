package sdktest

import (
	"context"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestTrustTiersAndDefault(t *testing.T) {
	ctx := context.Background()
	tr := NewFakeTrust()
	tr.Set(100, 1, sdk.TierStaff)

	tests := []struct {
		guild, user uint64
		want        sdk.TrustTier
	}{
		{100, 1, sdk.TierStaff},
		{100, 2, sdk.TierMember},
		{200, 1, sdk.TierMember}, // tiers are per guild
	}
	for _, tt := range tests {
		if got, err := tr.Tier(ctx, tt.guild, tt.user); err != nil || got != tt.want {
			t.Errorf("tier(%d, %d) = %v, %v; want %v", tt.guild, tt.user, got, err, tt.want)
		}
	}
	tr.SetDefault(sdk.TierRegular)
	if got, _ := tr.Tier(ctx, 100, 2); got != sdk.TierRegular {
		t.Errorf("default tier = %v", got)
	}
	if n := len(tr.Lookups()); n != 4 {
		t.Errorf("lookups = %d", n)
	}
}

func TestClockMovesOnlyWhenTold(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	c := NewClock(start)
	if !c.Now().Equal(start) {
		t.Fatal(c.Now())
	}
	c.Advance(time.Hour)
	if !c.Now().Equal(start.Add(time.Hour)) {
		t.Errorf("after advance: %v", c.Now())
	}
	c.Set(start)
	if !c.Now().Equal(start) {
		t.Errorf("after set: %v", c.Now())
	}
}
