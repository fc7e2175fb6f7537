package discord

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// Ids of failWorld's limited guild: the bot holds no role permission
// beyond @everyone's (view, send, read history, react).
const (
	limitedGuild  = "880000000000000001"
	limitedOpen   = "880000000000000002" // the bot may send, not embed
	limitedNoSend = "880000000000000003" // @everyone may not send
	missingChan   = "880000000000000099" // no such channel
)

// failWorld is an actWorld with the limited guild active and in the
// session state.
func failWorld(t *testing.T) *actWorld {
	t.Helper()
	// A short route window: a 429 is waited out to the bucket's reset.
	w := newActWorld(t, fakediscord.Options{RouteWindow: 20 * time.Millisecond})
	seen := make(chan struct{}, 1)
	remove := w.s.AddHandler(func(_ *discordgo.Session, c *discordgo.ChannelCreate) {
		if c.ID == limitedNoSend {
			seen <- struct{}{}
		}
	})
	defer remove()
	none := int64(0)
	w.f.AddGuild(fakediscord.GuildSpec{ID: limitedGuild, Name: "limited", BotPermissions: &none})
	w.f.AddChannel(fakediscord.ChannelSpec{ID: limitedOpen, GuildID: limitedGuild, Name: "open"})
	w.f.AddChannel(fakediscord.ChannelSpec{ID: limitedNoSend, GuildID: limitedGuild, Name: "announcements", Overwrites: []*discordgo.PermissionOverwrite{
		{ID: limitedGuild, Type: discordgo.PermissionOverwriteTypeRole, Deny: discordgo.PermissionSendMessages},
	}})
	select {
	case <-seen: // the state applies an event before its handlers run
	case <-time.After(actBound):
		t.Fatal("the session never saw the limited guild's channels")
	}
	w.cfg.active[parseID(limitedGuild)] = true
	return w
}

// failCase is one way Discord fails a module's action, run through the
// real bot against the fake Discord and through sdktest's fake.
type failCase struct {
	name   string
	action sdk.DiscordAction
	call   func(ctx context.Context, w *actWorld, d sdk.DiscordActions) error
	inject func(w *actWorld) // the fault in the fake Discord (nil: the model answers it)
	cause  error             // what sdktest's FailNext is given
	msg    func(w *actWorld) string
	check  func(t *testing.T, err error)
}

func sendTo(channel string, msg sdk.OutgoingMessage) func(context.Context, *actWorld, sdk.DiscordActions) error {
	return func(ctx context.Context, w *actWorld, d sdk.DiscordActions) error {
		id := w.text
		if channel != "" {
			id = parseID(channel)
		}
		_, err := d.SendMessage(ctx, id, msg)
		return err
	}
}

func fixed(s string) func(*actWorld) string { return func(*actWorld) string { return s } }

func wantRateLimit(retry time.Duration, global bool) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var rl *sdk.RateLimitError
		if !errors.Is(err, sdk.ErrRateLimited) || !errors.As(err, &rl) || rl.RetryAfter != retry || rl.Global != global {
			t.Fatalf("err = %v (%+v), want rate limited, retry after %s, global %v", err, rl, retry, global)
		}
	}
}

func wantPermission(p string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var mp *sdk.MissingPermissionError
		if !errors.Is(err, sdk.ErrMissingPermission) || !errors.As(err, &mp) || mp.Permission != p {
			t.Fatalf("err = %v (%+v), want missing permission %s", err, mp, p)
		}
	}
}

func wantIs(target error) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Fatalf("err = %v, want %v", err, target)
		}
	}
}

func wantUncertain(status int) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var u *sdk.UncertainDeliveryError
		if !errors.Is(err, sdk.ErrUncertainDelivery) || !errors.As(err, &u) || u.Status != status {
			t.Fatalf("err = %v, want an uncertain delivery with status %d", err, status)
		}
	}
}

func failCases() []failCase {
	embed := &sdk.OutgoingEmbed{Title: "t", Description: "d"}
	forbidden := func(route string) func(*actWorld) {
		return func(w *actWorld) {
			w.f.InjectFault(fakediscord.Fault{Route: route, Status: http.StatusForbidden, Code: fakediscord.CodeMissingPermissions})
		}
	}
	return []failCase{
		{name: "429 past every attempt: the route's wait", action: sdk.ActionSendMessage,
			call: sendTo("", sdk.OutgoingMessage{Content: "x"}),
			inject: func(w *actWorld) {
				w.f.InjectFault(fakediscord.Fault{Route: postRoute, Status: 429, RetryAfter: 7 * time.Millisecond, Times: maxAttempts})
			},
			cause: &sdk.RateLimitError{RetryAfter: 7 * time.Millisecond},
			msg:   fixed("sending the message failed"), check: wantRateLimit(7*time.Millisecond, false)},
		{name: "429 past every attempt: the global limit", action: sdk.ActionSendMessage,
			call: sendTo("", sdk.OutgoingMessage{Content: "x"}),
			inject: func(w *actWorld) {
				w.f.InjectFault(fakediscord.Fault{Route: postRoute, Status: 429, RetryAfter: 9 * time.Millisecond, Global: true, Times: maxAttempts})
			},
			cause: &sdk.RateLimitError{RetryAfter: 9 * time.Millisecond, Global: true},
			msg:   fixed("sending the message failed"), check: wantRateLimit(9*time.Millisecond, true)},
		{name: "403 where @everyone may not send", action: sdk.ActionSendMessage,
			call: sendTo(limitedNoSend, sdk.OutgoingMessage{Content: "x"}), inject: forbidden(postRoute),
			cause: &sdk.MissingPermissionError{Permission: "SEND_MESSAGES"},
			msg:   fixed("sending the message failed"), check: wantPermission("SEND_MESSAGES")},
		{name: "403 on an embed without embed links", action: sdk.ActionSendMessage,
			call: sendTo(limitedOpen, sdk.OutgoingMessage{Embed: embed}), inject: forbidden(postRoute),
			cause: &sdk.MissingPermissionError{Permission: "EMBED_LINKS"},
			msg:   fixed("sending the message failed"), check: wantPermission("EMBED_LINKS")},
		{name: "403 though the state grants all: the send's own", action: sdk.ActionSendMessage,
			call: sendTo("", sdk.OutgoingMessage{Content: "x"}), inject: forbidden(postRoute),
			cause: &sdk.MissingPermissionError{Permission: "SEND_MESSAGES"},
			msg:   fixed("sending the message failed"), check: wantPermission("SEND_MESSAGES")},
		{name: "403 missing access", action: sdk.ActionSendMessage,
			call: sendTo("", sdk.OutgoingMessage{Content: "x"}),
			inject: func(w *actWorld) {
				w.f.InjectFault(fakediscord.Fault{Route: postRoute, Status: http.StatusForbidden, Code: fakediscord.CodeMissingAccess})
			},
			cause: &sdk.MissingPermissionError{Permission: "VIEW_CHANNEL"},
			msg:   fixed("sending the message failed"), check: wantPermission("VIEW_CHANNEL")},
		{name: "403 on a ban", action: sdk.ActionBan,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) error {
				return d.Ban(ctx, w.guild, w.member, sdk.Moderation{Reason: "spam"}, 0)
			},
			inject: forbidden("PUT /guilds/{guild}/bans/{user}"),
			cause:  &sdk.MissingPermissionError{Permission: "BAN_MEMBERS"},
			msg:    fixed("banning the member failed"), check: wantPermission("BAN_MEMBERS")},
		{name: "unknown channel", action: sdk.ActionSendMessage,
			call: sendTo(missingChan, sdk.OutgoingMessage{Content: "x"}), cause: sdk.ErrUnknownChannel,
			msg: fixed("channel " + missingChan + " is not in an active guild"), check: wantIs(sdk.ErrUnknownChannel)},
		{name: "unknown message", action: sdk.ActionEditMessage,
			call: func(ctx context.Context, w *actWorld, d sdk.DiscordActions) error {
				return d.EditMessage(ctx, sdk.MessageRef{GuildID: w.guild, ChannelID: w.text, MessageID: 4711}, "new", nil)
			},
			cause: sdk.ErrUnknownMessage,
			msg:   fixed("editing the message failed"), check: wantIs(sdk.ErrUnknownMessage)},
		{name: "5xx after the message was created", action: sdk.ActionSendMessage,
			call: sendTo("", sdk.OutgoingMessage{Content: "x"}),
			inject: func(w *actWorld) {
				w.f.InjectFault(fakediscord.Fault{Route: postRoute, Status: http.StatusInternalServerError, AfterHandling: true})
			},
			cause: &sdk.UncertainDeliveryError{Status: 500},
			msg:   fixed("sending the message failed"), check: wantUncertain(500)},
		{name: "5xx before anything was created", action: sdk.ActionSendMessage,
			call: sendTo("", sdk.OutgoingMessage{Content: "x"}),
			inject: func(w *actWorld) {
				w.f.InjectFault(fakediscord.Fault{Route: postRoute, Status: http.StatusServiceUnavailable})
			},
			cause: &sdk.UncertainDeliveryError{Status: 503},
			msg:   fixed("sending the message failed"), check: wantUncertain(503)},
	}
}

// TestActionFailuresCarryTheirCause: every way Discord fails a module's
// action reaches the module as the action's safe message over the SDK's
// typed cause (errors.Is the category, errors.As the wait, the permission,
// the status), through the real bot against the fake Discord's faults,
// and sdktest's fake given the same cause answers the same.
func TestActionFailuresCarryTheirCause(t *testing.T) {
	w := failWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), actBound)
	defer cancel()
	for _, tc := range failCases() {
		t.Run(tc.name, func(t *testing.T) {
			if tc.inject != nil {
				tc.inject(w)
			}
			err := tc.call(ctx, w, w.mod("kudos"))
			if err == nil || err.Error() != tc.msg(w) {
				t.Fatalf("bot: err = %v, want %q", err, tc.msg(w))
			}
			tc.check(t, err)

			fake := sdktest.NewFakeDiscordActions("kudos", nil)
			fake.FailNext(tc.action, tc.cause)
			err = tc.call(ctx, w, fake)
			if err == nil || err.Error() != tc.msg(w) {
				t.Fatalf("sdktest: err = %v, want %q", err, tc.msg(w))
			}
			tc.check(t, err)
			if n := len(fake.CallsFor(tc.action)); n != 1 {
				t.Fatalf("sdktest recorded %d calls, want the failed one", n)
			}
		})
	}
}

// TestUncertainSendIsNotRetried: a 5xx on the send's POST reaches Discord
// once, whether the message was created (it stays, once) or not.
func TestUncertainSendIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   fakediscord.Fault
		created int
	}{
		{"5xx after the create", fakediscord.Fault{Route: postRoute, Status: http.StatusInternalServerError, AfterHandling: true}, 1},
		{"502 before it", fakediscord.Fault{Route: postRoute, Status: http.StatusBadGateway}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newActWorld(t, fakediscord.Options{})
			ctx, cancel := context.WithTimeout(context.Background(), actBound)
			defer cancel()
			tc.fault.Times = 5 // a retry would meet the fault again and be counted
			w.f.InjectFault(tc.fault)
			_, err := w.mod("kudos").SendMessage(ctx, w.text, sdk.OutgoingMessage{Content: "once"})
			if !errors.Is(err, sdk.ErrUncertainDelivery) {
				t.Fatalf("err = %v, want an uncertain delivery", err)
			}
			if got := statuses(w.f, postRoute); len(got) != 1 || got[0] != tc.fault.Status {
				t.Fatalf("statuses = %v, want the one %d", got, tc.fault.Status)
			}
			if n := len(w.f.Messages(idString(w.text))); n != tc.created {
				t.Fatalf("messages = %d, want %d", n, tc.created)
			}
		})
	}
}

// TestIdempotentFailuresAreNotUncertainDeliveries: a 5xx on an edit (a
// PATCH, safe to repeat) keeps its safe message and is no uncertain
// delivery; a 404 on a delete is a message already gone.
func TestIdempotentFailuresAreNotUncertainDeliveries(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), actBound)
	defer cancel()
	ref, err := w.mod("kudos").SendMessage(ctx, w.text, sdk.OutgoingMessage{Content: "x"})
	if err != nil {
		t.Fatal(err)
	}
	w.f.InjectFault(fakediscord.Fault{Route: "PATCH /channels/{channel}/messages/{message}", Status: http.StatusInternalServerError})
	err = w.mod("kudos").EditMessage(ctx, ref, "y", nil)
	if err == nil || err.Error() != "editing the message failed" || errors.Is(err, sdk.ErrUncertainDelivery) {
		t.Fatalf("edit err = %v, want the safe message, not an uncertain delivery", err)
	}
	gone := sdk.MessageRef{GuildID: w.guild, ChannelID: w.text, MessageID: 4711}
	if err := w.mod("kudos").DeleteMessage(ctx, gone, ""); err != nil {
		t.Fatalf("deleting a message already gone = %v, want nil", err)
	}
}
