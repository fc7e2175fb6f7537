package kudos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// Behaviour beyond the 24 reference tests: the refusal paths and parsers a
// module author would otherwise have to read the code to trust.

func TestToolsRefuseGuildlessCallers(t *testing.T) {
	h := started(t)
	dm := sdk.ToolContext{UserID: alice, TrustTier: sdk.TierMember}
	tests := map[string]string{
		ToolGive:        "Kudos can only be given inside a server.",
		ToolLeaderboard: "The kudos leaderboard is only available inside a server.",
	}
	for tool, want := range tests {
		if got := h.tool(t, tool, map[string]any{"user": "3", "reason": "x"}, dm); got != want {
			t.Errorf("%s in a DM = %q, want %q", tool, got, want)
		}
	}
}

func TestGiveIsRefusedWhereTheGuildDocumentIsInvalid(t *testing.T) {
	h := started(t)
	// Staff-only giving with a digest channel breaks the cross-field rule;
	// with invalid_policy disable_module, kudos are off in that guild.
	h.GuildSettings.Set(guild, map[string]any{FieldGiverMinTier: "staff"})

	got := h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(bob), "reason": "x"}, caller(staff))

	if got != "Kudos are not enabled in this server." {
		t.Errorf("reply = %q", got)
	}
	if h.RT.IsGuildActive(guild) {
		t.Error("the module predicate must be false for the invalid guild")
	}
}

func TestSetupIsStaffOnlyAndNeedsProposals(t *testing.T) {
	ctx := context.Background()
	h := started(t)

	member := interaction(alice, sdk.Options{"channel": uint64(777)}, "")
	if err := h.Interactions.RunCommand(ctx, "kudos.setup", member); err != nil {
		t.Fatal(err)
	}
	if r := last(t, member); r.Content != sdktest.ReplyStaffOnly || !r.Ephemeral {
		t.Errorf("member reply = %+v", r)
	}

	h.RT.Proposals = nil // a host without the proposal service
	in := interaction(staff, sdk.Options{"channel": uint64(777)}, "")
	if err := h.Interactions.RunCommand(ctx, "kudos.setup", in); err != nil {
		t.Fatal(err)
	}
	if r := last(t, in); r.Content != "Configuration proposals are unavailable." || !r.Ephemeral {
		t.Errorf("reply without proposals = %+v", r)
	}
	if n := len(h.Proposals.Changes()); n != 0 {
		t.Errorf("%d proposals made", n)
	}
}

func TestSetupReportsProposalErrors(t *testing.T) {
	h := started(t)
	setup, _ := h.Interactions.Command("kudos.setup")
	// Bypass the gate: an actor outside any guild cannot propose.
	in := sdktest.NewInteraction(sdktest.InteractionInput{UserID: staff, Options: sdk.Options{"channel": uint64(777)}})

	if err := setup.Handler(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if r := last(t, in); r.Content != "Could not propose the change: proposal actor must belong to a guild" || !r.Ephemeral {
		t.Errorf("reply = %+v", r)
	}
}

func TestThankBackIsStillBoundByTheDailyLimit(t *testing.T) {
	ctx := context.Background()
	h := started(t)
	if err := h.Interactions.RunCommand(ctx, "kudos.give", interaction(alice, sdk.Options{"member": bob, "reason": "helped"}, "")); err != nil {
		t.Fatal(err)
	}
	// Bob spends his daily limit elsewhere.
	for range 2 {
		h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(staff), "reason": "x"}, caller(bob))
	}
	customID, _ := h.Interactions.CustomID(ButtonThankBack, "1")
	in := interaction(bob, nil, customID)

	if err := h.Interactions.Press(ctx, sdk.ComponentButton, in); err != nil {
		t.Fatal(err)
	}
	if r := last(t, in); r.Content != "You have given 2 kudos in the last 24 hours." || !r.Ephemeral {
		t.Errorf("reply = %+v", r)
	}
}

func TestThankBackRefusesAKudosOfAnotherGuild(t *testing.T) {
	ctx := context.Background()
	h := started(t)
	h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(bob), "reason": "x"}, caller(alice))
	customID, _ := h.Interactions.CustomID(ButtonThankBack, "1")
	in := sdktest.NewInteraction(sdktest.InteractionInput{GuildID: 200, UserID: bob, CustomID: customID})

	if err := h.Interactions.Press(ctx, sdk.ComponentButton, in); err != nil {
		t.Fatal(err)
	}
	if r := last(t, in); r.Content != "That kudos is no longer available." {
		t.Errorf("reply = %q", r.Content)
	}
}

func TestTopCommandIsEphemeralWhenEmpty(t *testing.T) {
	h := started(t)
	in := interaction(alice, nil, "")

	if err := h.Interactions.RunCommand(context.Background(), "kudos.top", in); err != nil {
		t.Fatal(err)
	}

	r := last(t, in)
	if !r.Ephemeral || r.Embed == nil || r.Embed.Title != "Kudos, last 30 day(s)" ||
		r.Embed.Description != "Nobody has received kudos in the last 30 day(s)." {
		t.Errorf("reply = %+v embed %+v", r, r.Embed)
	}
}

func TestDigestSkipsDisabledGuildsAndEmptyBoards(t *testing.T) {
	h := started(t)
	// Guild 300 has a channel but no kudos; guild 400 is invalid.
	h.GuildSettings.Set(300, map[string]any{FieldDigestChannel: 901})
	h.GuildSettings.Set(400, map[string]any{FieldDigestChannel: 902, FieldGiverMinTier: "staff"})

	h.Scheduler.RunDue(context.Background(), time.Unix(1e12, 0))

	if calls := h.Discord.CallsFor(sdk.ActionSendMessage); len(calls) != 0 {
		t.Errorf("posted %d digests, want none", len(calls))
	}
	digest := h.keyed(t, HealthKeyDigest)
	if digest.State != sdk.HealthHealthy || digest.Metrics["digest_posted"] != 0 || digest.Metrics["digest_failures"] != 0 {
		t.Errorf("digest health = %+v", digest)
	}
	// The job is periodic: rescheduled one interval after the run.
	if job, _ := h.Scheduler.Job(DigestJobKey); !job.RunAt.Equal(time.Unix(1e12, 0).Add(7 * 24 * time.Hour)) {
		t.Errorf("next digest at %v", job.RunAt)
	}
}

func TestMemberRemoveIgnoresForeignPayloads(t *testing.T) {
	h := started(t)
	h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(bob), "reason": "a"}, caller(alice))

	n, err := h.Events.Deliver(context.Background(), sdk.TopicMemberRemove, "not a MemberRemoveEvent")

	if n != 1 || err != nil {
		t.Errorf("deliver = %d, %v", n, err)
	}
	if got := h.tool(t, ToolLeaderboard, nil, caller(alice)); strings.Contains(got, "Nobody") {
		t.Error("an unrelated payload erased kudos")
	}
}

func TestEntryPointsBeforeStartFail(t *testing.T) {
	rt := sdktest.NewRuntime(t, spec(sdktest.NewClock(t0).Now))

	_, err := rt.CallTool(context.Background(), ToolGive, map[string]any{"user": "3", "reason": "x"}, caller(alice))

	if !errors.Is(err, errNotStarted) {
		t.Errorf("tool before start = %v", err)
	}
}

func TestParseUserID(t *testing.T) {
	tests := []struct {
		in   any
		want uint64
		ok   bool
	}{
		{"123", 123, true},
		{" <@123> ", 123, true},
		{"<@!123>", 123, true},
		{json.Number("123"), 123, true},
		{"bob", 0, false},
		{"<@bob>", 0, false},
		{"0", 0, false},
		{"-5", 0, false},
		{"18446744073709551616", 0, false}, // 2^64
		{"", 0, false},
		{nil, 0, false},
		{true, 0, false},
	}
	for _, tt := range tests {
		if got, ok := parseUserID(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("parseUserID(%#v) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestDaysArg(t *testing.T) {
	tests := []struct {
		in   any
		want int
	}{
		{nil, 30},
		{json.Number("7"), 7},
		{json.Number("7.9"), 7},
		{json.Number("0"), 1},
		{json.Number("9999"), 365},
		{json.Number("-3"), 1},
		{"12", 12},
		{"soon", 30},
		{true, 30},
	}
	for _, tt := range tests {
		if got := daysArg(tt.in); got != tt.want {
			t.Errorf("daysArg(%#v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestClampDays(t *testing.T) {
	for in, want := range map[int64]int{-3: 1, 0: 1, 1: 1, 7: 7, 365: 365, 366: 365} {
		if got := clampDays(in); got != want {
			t.Errorf("clampDays(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestDigestDays(t *testing.T) {
	tests := map[time.Duration]int{
		time.Minute:        1,
		36 * time.Hour:     2, // 1.5 rounds to even
		60 * time.Hour:     2, // 2.5 rounds to even, as Python's round
		7 * 24 * time.Hour: 7,
	}
	for interval, want := range tests {
		if got := digestDays(interval); got != want {
			t.Errorf("digestDays(%v) = %d, want %d", interval, got, want)
		}
	}
}

func TestCommandsWithoutRequiredOptionsFail(t *testing.T) {
	h := started(t)
	for _, name := range []string{"kudos.give", "kudos.setup"} {
		in := interaction(staff, nil, "")
		if err := h.Interactions.RunCommand(context.Background(), name, in); err == nil {
			t.Errorf("%s without options succeeded", name)
		}
		if r := last(t, in); r.Content != sdktest.ReplyCommandFailed {
			t.Errorf("%s reply = %q", name, r.Content)
		}
	}
}
