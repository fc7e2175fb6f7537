package kudos

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// Ports of tests/test_module.py (18 tests): the started module through
// every entry point, on the SDK fakes only.

// 1. test_start_registers_every_surface
func TestStartRegistersEverySurface(t *testing.T) {
	h := started(t)

	job, ok := h.Scheduler.Job(DigestJobKey)
	if !ok || job.Handler != DigestHandler {
		t.Errorf("digest job = %+v (exists %v), want handler %q", job, ok, DigestHandler)
	}
	if got := h.Events.Subscriptions(); !slices.Equal(got, []string{sdk.TopicMemberRemove}) {
		t.Errorf("subscriptions = %v", got)
	}
	if got := h.Interactions.CommandNames(); !slices.Equal(got, []string{"kudos.give", "kudos.setup", "kudos.top"}) {
		t.Errorf("commands = %v", got)
	}
	if setup, _ := h.Interactions.Command("kudos.setup"); setup.Spec.EffectiveMinTier() != sdk.TierStaff {
		t.Errorf("kudos.setup min tier = %v, want staff", setup.Spec.EffectiveMinTier())
	}
	if _, ok := h.Interactions.Component(sdk.ComponentButton, ButtonThankBack); !ok {
		t.Error("the thank_back button is not registered")
	}
	// The registry hands out a handle; ServiceAs checks the provided type.
	handle, err := h.Services.Get(ServiceName, ServiceVersion)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdk.ServiceAs[Board](handle); err != nil {
		t.Errorf("service: %v", err)
	}
	if c, degraded := h.Health.Constraint("services"); degraded {
		t.Errorf("declared service not provided: %+v", c)
	}
	current, ok := h.Health.Current()
	if !ok || current.State != sdk.HealthHealthy || current.Metrics["guilds"] != 1.0 {
		t.Errorf("health = %+v (ok %v), want healthy with guilds=1", current, ok)
	}
}

// 2. test_close_releases_registrations
func TestCloseReleasesRegistrations(t *testing.T) {
	h := started(t)

	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	if got := h.Interactions.CommandNames(); len(got) != 0 {
		t.Errorf("commands after close = %v", got)
	}
	if got := h.Interactions.Components(); len(got) != 0 {
		t.Errorf("components after close = %v", got)
	}
	if got := h.Events.Subscriptions(); len(got) != 0 {
		t.Errorf("subscriptions after close = %v", got)
	}
	if got := h.Services.Provided(); len(got) != 0 {
		t.Errorf("services after close = %v", got)
	}
	if n := h.GuildSettings.Callbacks(); n != 0 {
		t.Errorf("guild-settings callbacks after close = %d", n)
	}
}

// 3. test_give_tool_records_and_publishes
func TestGiveToolRecordsAndPublishes(t *testing.T) {
	h := started(t)

	reply := h.tool(t, ToolGive, map[string]any{"user": fmt.Sprintf("<@%d>", bob), "reason": "  fixed the   bot "}, caller(alice))

	if want := fmt.Sprintf("Kudos to <@%d>: fixed the bot", bob); reply != want {
		t.Errorf("reply = %q, want %q", reply, want)
	}
	published := h.Events.Published()
	if len(published) != 1 {
		t.Fatalf("published %d events, want 1", len(published))
	}
	if published[0].Topic != TopicGiven {
		t.Errorf("topic = %q", published[0].Topic)
	}
	want := GivenEvent{GuildID: guild, GiverID: alice, ReceiverID: bob, Reason: "fixed the bot", KudosID: 1}
	if !reflect.DeepEqual(published[0].Payload, want) {
		t.Errorf("payload = %#v, want %#v", published[0].Payload, want)
	}
}

// 4. test_give_tool_validates_input
func TestGiveToolValidatesInput(t *testing.T) {
	h := started(t)
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"user": "bob", "reason": "x"}, "numeric"},
		{map[string]any{"user": fmt.Sprint(alice), "reason": "x"}, "yourself"},
		{map[string]any{"user": fmt.Sprint(bob), "reason": "  "}, "Say what"},
		{map[string]any{"user": fmt.Sprint(bob), "reason": strings.Repeat("x", 201)}, "under 200"},
	}
	for _, tt := range tests {
		if got := h.tool(t, ToolGive, tt.args, caller(alice)); !strings.Contains(got, tt.want) {
			t.Errorf("give %v = %q, want it to contain %q", tt.args, got, tt.want)
		}
	}
	if got := h.Events.Published(); len(got) != 0 {
		t.Errorf("refused gives published %d events", len(got))
	}
}

// 5. test_daily_limit_is_a_rolling_window
func TestDailyLimitIsARollingWindow(t *testing.T) {
	h := started(t)
	args := map[string]any{"user": fmt.Sprint(bob), "reason": "great"}

	for i := range 2 {
		if got := h.tool(t, ToolGive, args, caller(alice)); !strings.HasPrefix(got, "Kudos") {
			t.Fatalf("give %d = %q", i+1, got)
		}
	}
	if got := h.tool(t, ToolGive, args, caller(alice)); !strings.Contains(got, "last 24 hours") {
		t.Errorf("third give = %q, want the limit message", got)
	}

	h.clock.Advance(24*time.Hour + time.Second)
	if got := h.tool(t, ToolGive, args, caller(alice)); !strings.HasPrefix(got, "Kudos") {
		t.Errorf("give after the window = %q", got)
	}
}

// 6. test_guild_minimum_tier_is_enforced
func TestGuildMinimumTierIsEnforced(t *testing.T) {
	h := started(t)
	h.GuildSettings.Set(guild, map[string]any{FieldGiverMinTier: "regular"})

	reply := h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(bob), "reason": "x"}, caller(alice))
	if !strings.Contains(reply, "regular members and above") {
		t.Errorf("member reply = %q", reply)
	}

	regular := caller(alice)
	regular.TrustTier = sdk.TierRegular
	if got := h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(bob), "reason": "x"}, regular); !strings.HasPrefix(got, "Kudos") {
		t.Errorf("regular reply = %q", got)
	}
}

// 7. test_daily_limit_holds_under_concurrent_gives
func TestDailyLimitHoldsUnderConcurrentGives(t *testing.T) {
	h := started(t)
	args := map[string]any{"user": fmt.Sprint(bob), "reason": "race"}

	replies := make([]string, 6)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Go(func() {
			reply, err := h.CallTool(context.Background(), ToolGive, args, caller(alice))
			if err != nil {
				t.Errorf("give: %v", err)
			}
			replies[i] = reply
		})
	}
	wg.Wait()

	successes := 0
	for _, r := range replies {
		if strings.HasPrefix(r, "Kudos") {
			successes++
		}
	}
	if successes != 2 {
		t.Errorf("%d gives succeeded, want exactly 2: %q", successes, replies)
	}
}

// 8. test_leaderboard_tool_ranks_receivers
func TestLeaderboardToolRanksReceivers(t *testing.T) {
	h := started(t)
	h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(bob), "reason": "a"}, caller(alice))
	h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(staff), "reason": "b"}, caller(alice))
	h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(staff), "reason": "c"}, caller(bob))

	board := h.tool(t, ToolLeaderboard, map[string]any{"days": 7}, caller(alice))

	lines := strings.Split(board, "\n")
	want := []string{"Kudos received in the last 7 day(s):", fmt.Sprintf("1. <@%d> — 2", staff), fmt.Sprintf("2. <@%d> — 1", bob)}
	if !slices.Equal(lines, want) {
		t.Errorf("board = %q, want lines %q", board, want)
	}
	other := sdk.ToolContext{UserID: 1, GuildID: 999, TrustTier: sdk.TierMember}
	if got := h.tool(t, ToolLeaderboard, nil, other); got != "Nobody has received kudos in the last 30 day(s)." {
		t.Errorf("unknown guild board = %q", got)
	}
}

// 9. test_give_command_replies_with_thank_back_button
func TestGiveCommandRepliesWithThankBackButton(t *testing.T) {
	h := started(t)
	in := interaction(alice, sdk.Options{"member": bob, "reason": "helped"}, "")

	if err := h.Interactions.RunCommand(context.Background(), "kudos.give", in); err != nil {
		t.Fatal(err)
	}

	r := last(t, in)
	if want := fmt.Sprintf("Kudos to <@%d>: helped", bob); r.Content != want {
		t.Errorf("content = %q, want %q", r.Content, want)
	}
	if len(r.Components) != 1 {
		t.Fatalf("components = %v, want one button", r.Components)
	}
	button, ok := r.Components[0].(sdk.ButtonSpec)
	want := sdk.ButtonSpec{Key: ButtonThankBack, Label: "Thank back", Style: sdk.ButtonSuccess, Parts: []string{"1"}}
	if !ok || !reflect.DeepEqual(button, want) {
		t.Errorf("button = %#v, want %#v", r.Components[0], want)
	}
	if r.Ephemeral {
		t.Error("a successful /kudos give must reply publicly")
	}
}

// 10. test_thank_back_button_only_works_for_the_receiver
func TestThankBackButtonOnlyWorksForTheReceiver(t *testing.T) {
	h := started(t)
	ctx := context.Background()
	if err := h.Interactions.RunCommand(ctx, "kudos.give", interaction(alice, sdk.Options{"member": bob, "reason": "helped"}, "")); err != nil {
		t.Fatal(err)
	}
	customID, err := h.Interactions.CustomID(ButtonThankBack, "1")
	if err != nil {
		t.Fatal(err)
	}
	parsed, ok := sdk.ParseCustomID(customID)
	if !ok || parsed.Module != Name || parsed.Key != ButtonThankBack || !slices.Equal(parsed.Parts, []string{"1"}) {
		t.Errorf("custom id %q parses to %+v", customID, parsed)
	}
	press := func(user uint64, id string) sdktest.FakeResponse {
		t.Helper()
		in := interaction(user, nil, id)
		if err := h.Interactions.Press(ctx, sdk.ComponentButton, in); err != nil {
			t.Fatal(err)
		}
		return last(t, in)
	}

	if r := press(staff, customID); !r.Ephemeral || !strings.Contains(r.Content, "Only the person thanked") {
		t.Errorf("stranger reply = %+v", r)
	}
	if r := press(bob, customID); r.Content != fmt.Sprintf("Kudos to <@%d>: thanks for the kudos!", alice) {
		t.Errorf("receiver reply = %q", r.Content)
	}

	h.GuildSettings.Set(guild, map[string]any{FieldAllowThankBack: false})
	if r := press(bob, customID); !strings.Contains(r.Content, "turned off") {
		t.Errorf("disabled reply = %q", r.Content)
	}
	h.GuildSettings.Set(guild, map[string]any{FieldAllowThankBack: true})

	unknown, _ := h.Interactions.CustomID(ButtonThankBack, "404")
	if r := press(bob, unknown); !strings.Contains(r.Content, "no longer available") {
		t.Errorf("unknown kudos reply = %q", r.Content)
	}
}

// 11. test_thank_back_button_rejects_malformed_record_ids
func TestThankBackButtonRejectsMalformedRecordIDs(t *testing.T) {
	h := started(t)
	button, _ := h.Interactions.Component(sdk.ComponentButton, ButtonThankBack)

	for _, part := range []string{"not-a-number", fmt.Sprint(uint64(1) << 63), "-1", "0", "+1", ""} {
		customID, err := h.Interactions.CustomID(ButtonThankBack, part)
		if err != nil {
			t.Fatal(err)
		}
		in := interaction(bob, nil, customID)
		if err := button.Handler(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		if r := last(t, in); !r.Ephemeral || !strings.Contains(r.Content, "no longer available") {
			t.Errorf("part %q: reply = %+v", part, r)
		}
	}
}

// 12. test_top_command_renders_an_embed
func TestTopCommandRendersAnEmbed(t *testing.T) {
	h := started(t)
	h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(bob), "reason": "a"}, caller(alice))
	in := interaction(alice, sdk.Options{"days": int64(7)}, "")

	if err := h.Interactions.RunCommand(context.Background(), "kudos.top", in); err != nil {
		t.Fatal(err)
	}

	r := last(t, in)
	if r.Embed == nil || r.Embed.Title != "Kudos, last 7 day(s)" {
		t.Fatalf("embed = %+v", r.Embed)
	}
	if want := fmt.Sprintf("<@%d> — 1", bob); !strings.Contains(r.Embed.Description, want) {
		t.Errorf("description = %q, want it to contain %q", r.Embed.Description, want)
	}
	if r.Ephemeral {
		t.Error("a non-empty board must be public")
	}
	if r.Embed.Footer != "Top 3" || !r.Embed.Timestamp {
		t.Errorf("footer %q timestamp %v", r.Embed.Footer, r.Embed.Timestamp)
	}
}

// 13. test_setup_command_proposes_a_guild_document
//
// The Python fake returned the stored document's raw values; the Go fake
// returns what the host returns — every field coerced, defaults included —
// so the proposed document pins the defaults, as it would in production.
func TestSetupCommandProposesAGuildDocument(t *testing.T) {
	h := started(t)
	in := interaction(staff, sdk.Options{"channel": uint64(777)}, "")

	if err := h.Interactions.RunCommand(context.Background(), "kudos.setup", in); err != nil {
		t.Fatal(err)
	}

	changes := h.Proposals.Changes()
	if len(changes) != 1 {
		t.Fatalf("changes = %+v, want one", changes)
	}
	change := changes[0]
	if want := fmt.Sprintf("guild:%d:%s", guild, Name); change.Target != want {
		t.Errorf("target = %q, want %q", change.Target, want)
	}
	wantContent := "---\nallow_thank_back: true\ndigest_channel_id: 777\ngiver_min_tier: \"member\"\n---\n"
	if change.Content != wantContent {
		t.Errorf("content = %q, want %q", change.Content, wantContent)
	}
	if change.Actor.UserID != staff || change.Actor.GuildID != guild || change.Actor.ChannelID != 555 {
		t.Errorf("actor = %+v", change.Actor)
	}
	if change.ExpectedRevision == "" {
		t.Error("the proposal must carry the inspected revision")
	}
	if change.Summary != "Post the kudos digest in <#777>" {
		t.Errorf("summary = %q", change.Summary)
	}
	r := last(t, in)
	if !r.Ephemeral || !strings.Contains(r.Content, change.ProposalID) {
		t.Errorf("reply = %+v, want an ephemeral reply naming %s", r, change.ProposalID)
	}
}

// 14. test_digest_posts_to_configured_channels
func TestDigestPostsToConfiguredChannels(t *testing.T) {
	h := started(t)
	h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(bob), "reason": "a"}, caller(alice))
	// A second guild without a digest channel is skipped silently.
	h.GuildSettings.Set(200, nil)

	if ran := h.Scheduler.RunDue(context.Background(), time.Unix(1e12, 0)); ran != 1 {
		t.Fatalf("RunDue ran %d jobs, want 1", ran)
	}

	calls := h.Discord.CallsFor(sdk.ActionSendMessage)
	if len(calls) != 1 {
		t.Fatalf("send_message calls = %+v, want one", calls)
	}
	if calls[0].Args[0] != uint64(900) {
		t.Errorf("channel = %v, want 900", calls[0].Args[0])
	}
	msg := calls[0].Args[1].(sdk.OutgoingMessage)
	if want := fmt.Sprintf("<@%d> — 1", bob); msg.Embed == nil || !strings.Contains(msg.Embed.Description, want) {
		t.Errorf("embed = %+v, want it to contain %q", msg.Embed, want)
	}
	digest := h.keyed(t, HealthKeyDigest)
	if digest.State != sdk.HealthHealthy || digest.Metrics["digest_posted"] != 1.0 {
		t.Errorf("digest health = %+v", digest)
	}
}

// 15. test_digest_survives_one_guild_failing
func TestDigestSurvivesOneGuildFailing(t *testing.T) {
	h := started(t)
	h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(bob), "reason": "a"}, caller(alice))
	// Undeclared actions fail; narrowing the fake simulates a guild whose
	// post fails.
	h.Discord.SetDeclared()

	h.Scheduler.RunDue(context.Background(), time.Unix(1e12, 0))

	job, _ := h.Scheduler.Job(DigestJobKey)
	if job.LastError != "" {
		t.Errorf("job error = %q: a guild failure must not fail the job", job.LastError)
	}
	// The digest concern is keyed, so the module's own unkeyed report stays
	// healthy while the host shows the worst of the two.
	if current, _ := h.Health.Current(); current.State != sdk.HealthHealthy {
		t.Errorf("unkeyed health = %+v", current)
	}
	digest := h.keyed(t, HealthKeyDigest)
	if digest.State != sdk.HealthDegraded || digest.Metrics["digest_failures"] != 1.0 || digest.Detail != "1 guild digest(s) failed" {
		t.Errorf("digest health = %+v", digest)
	}
	if h.Health.State() != sdk.HealthDegraded {
		t.Errorf("visible state = %s, want degraded", h.Health.State())
	}
}

// 16. test_member_remove_forgets_their_kudos
func TestMemberRemoveForgetsTheirKudos(t *testing.T) {
	h := started(t)
	h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(bob), "reason": "a"}, caller(alice))

	handled, err := h.Events.Deliver(context.Background(), sdk.TopicMemberRemove, sdk.MemberRemoveEvent{GuildID: guild, UserID: bob})
	if err != nil {
		t.Fatal(err)
	}

	if handled != 1 {
		t.Errorf("handled by %d handlers, want 1", handled)
	}
	if got := h.tool(t, ToolLeaderboard, nil, caller(alice)); !strings.Contains(got, "Nobody") {
		t.Errorf("board after removal = %q", got)
	}
}

// 17. test_provided_service_reads_the_same_ledger
func TestProvidedServiceReadsTheSameLedger(t *testing.T) {
	h := started(t)
	h.tool(t, ToolGive, map[string]any{"user": fmt.Sprint(bob), "reason": "a"}, caller(alice))
	handle, err := h.Services.Get(ServiceName, ServiceVersion)
	if err != nil {
		t.Fatal(err)
	}
	board, err := sdk.ServiceAs[Board](handle)
	if err != nil {
		t.Fatal(err)
	}

	entries, err := board.Leaderboard(context.Background(), guild, 1, 5)
	if err != nil {
		t.Fatal(err)
	}

	if want := []BoardEntry{{UserID: bob, Count: 1}}; !slices.Equal(entries, want) {
		t.Errorf("entries = %+v, want %+v", entries, want)
	}
	// After the provider closes, the consumer's handle is dead for good.
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := handle.Value(); !errors.Is(err, sdk.ErrServiceUnavailable) {
		t.Errorf("Value after close = %v, want ServiceUnavailableError", err)
	}
}

// 18. test_undeclared_discord_action_is_caught_by_the_fake
func TestUndeclaredDiscordActionIsCaughtByTheFake(t *testing.T) {
	h := started(t)

	_, err := h.Discord.SendDM(context.Background(), alice, "hi", nil)

	var undeclared *sdk.UndeclaredDiscordActionError
	if !errors.As(err, &undeclared) || undeclared.Action != sdk.ActionSendDM {
		t.Errorf("SendDM error = %v, want UndeclaredDiscordActionError(send_dm)", err)
	}
	if want := "module 'reference_kudos' did not declare Discord action 'send_dm'"; err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
}
