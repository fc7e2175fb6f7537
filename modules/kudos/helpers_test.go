package kudos

import (
	"context"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// The reference fixture: a modest daily limit, one guild with a digest
// channel, a staff member and two members, and a clock the tests own so
// the 24-hour window is deterministic.
const (
	guild = uint64(100)
	staff = uint64(1)
	alice = uint64(2)
	bob   = uint64(3)
)

var t0 = time.Unix(1_000_000, 0)

// harness is a started module plus its fakes and clock.
type harness struct {
	*sdktest.Runtime
	clock *sdktest.Clock
}

func fixtureOptions() []sdktest.Option {
	trust := sdktest.NewFakeTrust()
	trust.Set(guild, staff, sdk.TierStaff)
	return []sdktest.Option{
		sdktest.WithSettings(map[string]any{SettingDailyLimit: 2, SettingBoardSize: 3, SettingDigestInterval: 7 * 86400}),
		sdktest.WithGuildSettings(guild, map[string]any{FieldDigestChannel: 900}),
		sdktest.WithTrust(trust),
	}
}

// started builds and starts the module on the fixture; extra options are
// applied after the fixture's.
func started(t *testing.T, extra ...sdktest.Option) *harness {
	t.Helper()
	clock := sdktest.NewClock(t0)
	rt := sdktest.NewRuntime(t, spec(clock.Now), append(fixtureOptions(), extra...)...)
	rt.Start(context.Background())
	return &harness{Runtime: rt, clock: clock}
}

// caller is the trusted tool context of a member speaking in the guild.
func caller(user uint64) sdk.ToolContext {
	return sdk.ToolContext{UserID: user, UserName: "tester", GuildID: guild, ChannelID: 555, TrustTier: sdk.TierMember}
}

// tool calls a module tool and fails the test on an error.
func (h *harness) tool(t *testing.T, name string, args map[string]any, tc sdk.ToolContext) string {
	t.Helper()
	reply, err := h.CallTool(context.Background(), name, args, tc)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return reply
}

// interaction builds a fake interaction in the fixture guild and channel.
func interaction(user uint64, options sdk.Options, customID string) *sdktest.FakeInteraction {
	return sdktest.NewInteraction(sdktest.InteractionInput{
		Module: Name, GuildID: guild, ChannelID: 555, UserID: user, GuildName: "Test Guild",
		Options: options, CustomID: customID,
	})
}

// last returns the interaction's latest reply or fails the test.
func last(t *testing.T, in *sdktest.FakeInteraction) sdktest.FakeResponse {
	t.Helper()
	r, ok := in.Last()
	if !ok {
		t.Fatal("the handler did not reply")
	}
	return r
}

// keyed returns a live keyed health report or fails the test.
func (h *harness) keyed(t *testing.T, key string) sdk.ModuleHealth {
	t.Helper()
	report, ok := h.Health.Keyed(key)
	if !ok {
		t.Fatalf("no live %q health report (keys %v)", key, h.Health.Keys())
	}
	return report
}
