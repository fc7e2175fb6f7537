package sdktest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestFailNextAnswersAsTheHost: an injected cause fails one declared call
// of its action with the host's answer for that action (its message over
// the cause, or the nil/false answer the host gives every failure of
// theirs); causes queue, and a call after them succeeds.
func TestFailNextAnswersAsTheHost(t *testing.T) {
	ctx := context.Background()
	ref := sdk.MessageRef{GuildID: 1, ChannelID: 2, MessageID: 3}
	limited := &sdk.RateLimitError{RetryAfter: time.Second}
	for _, tc := range []struct {
		name    string
		action  sdk.DiscordAction
		cause   error
		call    func(d *FakeDiscordActions) (any, error)
		want    any    // the answer
		wantErr string // "": no error
	}{
		{"send", sdk.ActionSendMessage, limited, func(d *FakeDiscordActions) (any, error) {
			return d.SendMessage(ctx, 2, sdk.OutgoingMessage{Content: "x"})
		}, sdk.MessageRef{}, "sending the message failed"},
		{"send to a channel gone", sdk.ActionSendMessage, sdk.ErrUnknownChannel, func(d *FakeDiscordActions) (any, error) {
			return d.SendMessage(ctx, 2, sdk.OutgoingMessage{Content: "x"})
		}, sdk.MessageRef{}, "channel 2 is not in an active guild"},
		{"delete a message gone", sdk.ActionDeleteMessage, sdk.ErrUnknownMessage, func(d *FakeDiscordActions) (any, error) {
			return nil, d.DeleteMessage(ctx, ref, "")
		}, nil, ""},
		{"delete refused", sdk.ActionDeleteMessage, &sdk.MissingPermissionError{Permission: "MANAGE_MESSAGES"}, func(d *FakeDiscordActions) (any, error) {
			return nil, d.DeleteMessage(ctx, ref, "")
		}, nil, "deleting the message failed"},
		{"timeout", sdk.ActionTimeout, limited, func(d *FakeDiscordActions) (any, error) {
			return nil, d.Timeout(ctx, 1, 5, sdk.Moderation{}, time.Minute)
		}, nil, "timing the member out failed"},
		{"history", sdk.ActionFetchMessages, limited, func(d *FakeDiscordActions) (any, error) {
			p, err := d.FetchMessages(ctx, 1, 2, sdk.HistoryQuery{})
			return p.Messages, err
		}, []sdk.MessageSnapshot(nil), "fetching the message history failed"},
		{"can view: the member", sdk.ActionCanViewChannel, limited, func(d *FakeDiscordActions) (any, error) {
			return d.CanViewChannel(ctx, 1, 5, 2)
		}, false, "the member 5 of guild 1 could not be fetched"},
		{"fetch message: nil", sdk.ActionFetchMessage, sdk.ErrUnknownMessage, func(d *FakeDiscordActions) (any, error) {
			return d.FetchMessage(ctx, ref)
		}, (*sdk.MessageSnapshot)(nil), ""},
		{"fetch member: nil", sdk.ActionFetchMember, sdk.ErrUnknownMember, func(d *FakeDiscordActions) (any, error) {
			return d.FetchMember(ctx, 1, 5)
		}, (*sdk.MemberSnapshot)(nil), ""},
		{"DM: false", sdk.ActionSendDM, sdk.ErrUnknownUser, func(d *FakeDiscordActions) (any, error) {
			return d.SendDM(ctx, 5, "x", nil)
		}, false, ""},
		{"public threads: the parent gone", sdk.ActionFetchPublicThreads, sdk.ErrUnknownChannel, func(d *FakeDiscordActions) (any, error) {
			return d.FetchPublicThreads(ctx, 1, 2)
		}, []sdk.ChannelSnapshot(nil), "channel 2 is not in an active guild"},
		{"public threads: what it has", sdk.ActionFetchPublicThreads, limited, func(d *FakeDiscordActions) (any, error) {
			return d.FetchPublicThreads(ctx, 1, 2)
		}, []sdk.ChannelSnapshot{{GuildID: 1, ChannelID: 9}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewFakeDiscordActions("mod", nil)
			d.Messages[ref] = sdk.MessageSnapshot{Ref: ref}
			d.Members[GuildUser{1, 5}] = sdk.MemberSnapshot{GuildID: 1, UserID: 5}
			d.PublicThreads[GuildChannel{1, 2}] = []sdk.ChannelSnapshot{{GuildID: 1, ChannelID: 9}}
			d.FailNext(tc.action, tc.cause)
			d.FailNext(tc.action, tc.cause) // queued: the second call fails too
			for i := range 2 {
				got, err := tc.call(d)
				if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
					t.Fatalf("call %d: err = %v, want %q", i, err, tc.wantErr)
				}
				if err != nil && !errors.Is(err, tc.cause) {
					t.Fatalf("call %d: err = %v does not wrap %v", i, err, tc.cause)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("call %d: answer = %v, want %v", i, got, tc.want)
				}
			}
			if n := len(d.CallsFor(tc.action)); n != 2 {
				t.Fatalf("recorded %d calls, want both failed ones", n)
			}
			if _, err := tc.call(d); err != nil {
				t.Fatalf("a third call = %v, want the queue spent", err)
			}
		})
	}
}

// TestFailNextWaitsForADeclaredCall: an undeclared call fails with the
// contract error and leaves the injected cause for the next declared one.
func TestFailNextWaitsForADeclaredCall(t *testing.T) {
	ctx := context.Background()
	d := NewFakeDiscordActions("mod", []sdk.DiscordAction{sdk.ActionFetchRoles})
	d.FailNext(sdk.ActionSendMessage, sdk.ErrUnknownChannel)
	if _, err := d.SendMessage(ctx, 2, sdk.OutgoingMessage{Content: "x"}); !errors.Is(err, sdk.ErrContract) || errors.Is(err, sdk.ErrUnknownChannel) {
		t.Fatalf("undeclared send = %v, want the contract error alone", err)
	}
	d.SetDeclared(sdk.ActionSendMessage)
	if _, err := d.SendMessage(ctx, 2, sdk.OutgoingMessage{Content: "x"}); !errors.Is(err, sdk.ErrUnknownChannel) {
		t.Fatalf("declared send = %v, want the injected unknown channel", err)
	}
}
