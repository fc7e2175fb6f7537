package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// everyActionCase is one action of the port failed where it reaches
// Discord: route is the request the fault is injected on (Discord keeps
// answering 429 past every attempt; "" injects nothing: the fake's model
// answers), call makes the call and reports whether its answer is the
// empty one (nil, false, no page).
type everyActionCase struct {
	action sdk.DiscordAction
	route  string
	call   func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (empty bool, err error)
	// msg is the action's failure message; "" when the host answers the
	// failure with an empty answer and no error (the SDK's contract).
	msg   func(w *actWorld) string
	cause error // FailNext's cause; nil: the rate limit below
	check func(t *testing.T, err error)
}

const everyActionRetry = 7 * time.Millisecond

func everyActionCases() []everyActionCase {
	limited := wantRateLimit(everyActionRetry, false)
	ref := func(w *actWorld) sdk.MessageRef {
		return sdk.MessageRef{GuildID: w.guild, ChannelID: w.text, MessageID: 4711}
	}
	return []everyActionCase{
		{action: sdk.ActionSendMessage, route: postRoute, msg: fixed("sending the message failed"), check: limited,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				r, err := d.SendMessage(ctx, w.text, sdk.OutgoingMessage{Content: "x"})
				return r == sdk.MessageRef{}, err
			}},
		{action: sdk.ActionSendDM, route: "POST /users/@me/channels",
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				ok, err := d.SendDM(ctx, w.member, "x", nil)
				return !ok, err
			}},
		{action: sdk.ActionEditMessage, route: "PATCH /channels/{channel}/messages/{message}", msg: fixed("editing the message failed"), check: limited,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				return true, d.EditMessage(ctx, ref(w), "new", nil)
			}},
		{action: sdk.ActionDeleteMessage, route: "DELETE /channels/{channel}/messages/{message}", msg: fixed("deleting the message failed"), check: limited,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				return true, d.DeleteMessage(ctx, ref(w), "")
			}},
		{action: sdk.ActionBan, route: "PUT /guilds/{guild}/bans/{user}", msg: fixed("banning the member failed"), check: limited,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				return true, d.Ban(ctx, w.guild, w.member, sdk.Moderation{Reason: "spam"}, 0)
			}},
		{action: sdk.ActionKick, route: "DELETE /guilds/{guild}/members/{user}", msg: fixed("kicking the member failed"), check: limited,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				return true, d.Kick(ctx, w.guild, w.member, sdk.Moderation{Reason: "spam"})
			}},
		{action: sdk.ActionTimeout, route: "PATCH /guilds/{guild}/members/{user}", msg: fixed("timing the member out failed"), check: limited,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				return true, d.Timeout(ctx, w.guild, w.member, sdk.Moderation{Reason: "spam"}, time.Minute)
			}},
		{action: sdk.ActionFetchMessage, route: "GET /channels/{channel}/messages/{message}",
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				m, err := d.FetchMessage(ctx, ref(w))
				return m == nil, err
			}},
		{action: sdk.ActionFetchMember, route: "GET /guilds/{guild}/members/{user}",
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				m, err := d.FetchMember(ctx, w.guild, w.absent)
				return m == nil, err
			}},
		{action: sdk.ActionFetchChannel, route: "GET /channels/{channel}",
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				c, err := d.FetchChannel(ctx, w.guild, parseID(missingChan))
				return c == nil, err
			}},
		{action: sdk.ActionFetchMessages, route: "GET /channels/{channel}/messages", msg: fixed("fetching the message history failed"), check: limited,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				p, err := d.FetchMessages(ctx, w.guild, w.text, sdk.HistoryQuery{})
				return len(p.Messages) == 0, err
			}},
		{action: sdk.ActionFetchPins, route: "GET /channels/{channel}/pins", msg: fixed("fetching the pinned messages failed"), check: limited,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				p, err := d.FetchPins(ctx, w.guild, w.text)
				return p == nil, err
			}},
		// The host answers a failed thread listing with the threads it has:
		// its one failure is the parent channel gone (the model's 10003).
		{action: sdk.ActionFetchPublicThreads, msg: fixed("channel " + missingChan + " is not in an active guild"),
			cause: sdk.ErrUnknownChannel, check: wantIs(sdk.ErrUnknownChannel),
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				th, err := d.FetchPublicThreads(ctx, w.guild, parseID(missingChan))
				return th == nil, err
			}},
		{action: sdk.ActionFetchRoles, route: "GET /guilds/{guild}/roles", msg: fixed("fetching the roles failed"), check: limited,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				r, err := d.FetchRoles(ctx, w.guild)
				return r == nil, err
			}},
		{action: sdk.ActionFetchInvites, route: "GET /guilds/{guild}/invites", msg: fixed("fetching the invites failed"), check: limited,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				in, err := d.FetchInvites(ctx, w.guild)
				return in == nil, err
			}},
		{action: sdk.ActionCanViewChannel, route: "GET /guilds/{guild}/members/{user}",
			msg: func(w *actWorld) string {
				return fmt.Sprintf("the member %d of guild %d could not be fetched", w.absent, w.guild)
			}, check: limited,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) (bool, error) {
				ok, err := d.CanViewChannel(ctx, w.guild, w.absent, w.text)
				return !ok, err
			}},
	}
}

// TestEveryActionFailureCarriesItsCause: each of the port's 16 actions,
// failed where it reaches Discord, answers as the SDK documents — its safe
// message over the typed cause (errors.Is, errors.As), or the empty answer
// the contract gives that action — through the real bot against the fake
// Discord, and sdktest's FailNext given the same cause answers the same.
func TestEveryActionFailureCarriesItsCause(t *testing.T) {
	cases := everyActionCases()
	covered := map[sdk.DiscordAction]bool{}
	for _, tc := range cases {
		covered[tc.action] = true
	}
	for _, a := range sdk.AllDiscordActions() {
		if !covered[a] {
			t.Errorf("no case for %s", a)
		}
	}
	w := failWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), actBound)
	defer cancel()
	for _, tc := range cases {
		t.Run(string(tc.action), func(t *testing.T) {
			before := len(statuses(w.f, tc.route))
			if tc.route != "" {
				w.f.InjectFault(fakediscord.Fault{Route: tc.route, Status: http.StatusTooManyRequests, RetryAfter: everyActionRetry, Times: maxAttempts})
			}
			answer := func(who string, empty bool, err error) {
				t.Helper()
				if !empty {
					t.Errorf("%s: a failed %s answered something", who, tc.action)
				}
				if tc.msg == nil {
					if err != nil {
						t.Fatalf("%s: err = %v, want the empty answer alone", who, err)
					}
					return
				}
				if err == nil || err.Error() != tc.msg(w) {
					t.Fatalf("%s: err = %v, want %q", who, err, tc.msg(w))
				}
				tc.check(t, err)
			}
			empty, err := tc.call(ctx, w, w.mod("kudos"))
			answer("bot", empty, err)
			if tc.route != "" {
				if got := statuses(w.f, tc.route)[before:]; len(got) != maxAttempts {
					t.Fatalf("%s answered %v, want the %d 429s of every attempt", tc.route, got, maxAttempts)
				}
			}

			fake := sdktest.NewFakeDiscordActions("kudos", nil)
			cause := tc.cause
			if cause == nil {
				cause = &sdk.RateLimitError{RetryAfter: everyActionRetry}
			}
			fake.FailNext(tc.action, cause)
			empty, err = tc.call(ctx, w, fake)
			answer("sdktest", empty, err)
			if n := len(fake.CallsFor(tc.action)); n != 1 {
				t.Fatalf("sdktest recorded %d calls, want the failed one", n)
			}
		})
	}
}

// TestUncertainPostsAreNotRetried: a 5xx on each POST the port makes (the
// send, the DM's channel and its message) reaches Discord once; the send
// says its delivery is uncertain, the DM answers false.
func TestUncertainPostsAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name  string
		route string
		call  func(ctx context.Context, w *actWorld) error
	}{
		{"send", postRoute, func(ctx context.Context, w *actWorld) error {
			_, err := w.mod("kudos").SendMessage(ctx, w.text, sdk.OutgoingMessage{Content: "once"})
			if !errors.Is(err, sdk.ErrUncertainDelivery) {
				return fmt.Errorf("err = %v, want an uncertain delivery", err)
			}
			return nil
		}},
		{"DM channel", "POST /users/@me/channels", func(ctx context.Context, w *actWorld) error {
			if ok, err := w.mod("kudos").SendDM(ctx, w.member, "once", nil); ok || err != nil {
				return fmt.Errorf("SendDM = %v, %v; want false, nil", ok, err)
			}
			return nil
		}},
		{"DM message", postRoute, func(ctx context.Context, w *actWorld) error {
			if ok, err := w.mod("kudos").SendDM(ctx, w.member, "once", nil); ok || err != nil {
				return fmt.Errorf("SendDM = %v, %v; want false, nil", ok, err)
			}
			return nil
		}},
	} {
		for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, status), func(t *testing.T) {
				w := newActWorld(t, fakediscord.Options{})
				ctx, cancel := context.WithTimeout(context.Background(), actBound)
				defer cancel()
				// A retry would meet the fault again and be counted.
				w.f.InjectFault(fakediscord.Fault{Route: tc.route, Status: status, Times: 5})
				if err := tc.call(ctx, w); err != nil {
					t.Fatal(err)
				}
				if got := statuses(w.f, tc.route); len(got) != 1 || got[0] != status {
					t.Fatalf("%s answered %v, want the one %d", tc.route, got, status)
				}
			})
		}
	}
}
