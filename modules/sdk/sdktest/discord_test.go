package sdktest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestDiscordEnforcesDeclaredActions(t *testing.T) {
	ctx := context.Background()
	d := NewFakeDiscordActions("mod", []sdk.DiscordAction{sdk.ActionSendMessage})

	ref, err := d.SendMessage(ctx, 900, sdk.OutgoingMessage{Content: "hi"})
	if err != nil || ref != (sdk.MessageRef{ChannelID: 900, MessageID: 1001}) {
		t.Errorf("send = %+v, %v", ref, err)
	}
	ref, _ = d.SendMessage(ctx, 900, sdk.OutgoingMessage{Content: "again"})
	if ref.MessageID != 1002 {
		t.Errorf("second message id = %d", ref.MessageID)
	}
	_, err = d.SendDM(ctx, 1, "hi", nil)
	var undeclared *sdk.UndeclaredDiscordActionError
	if !errors.As(err, &undeclared) || err.Error() != "module 'mod' did not declare Discord action 'send_dm'" {
		t.Errorf("undeclared send_dm = %v", err)
	}
	if calls := d.Calls(); len(calls) != 2 {
		t.Errorf("calls = %+v: refused calls must not be recorded", calls)
	}
	if c := d.CallsFor(sdk.ActionSendMessage); len(c) != 2 || c[0].Args[0] != uint64(900) || c[1].Args[1].(sdk.OutgoingMessage).Content != "again" {
		t.Errorf("send_message calls = %+v", c)
	}

	d.SetDeclared()
	if _, err := d.SendMessage(ctx, 900, sdk.OutgoingMessage{}); !errors.As(err, &undeclared) {
		t.Errorf("after narrowing to none: %v", err)
	}
}

func TestDiscordEveryActionIsRecordedAndAnsweredFromItsMap(t *testing.T) {
	ctx := context.Background()
	d := NewFakeDiscordActions("mod", nil) // nil declares all 16
	ref := sdk.MessageRef{GuildID: 1, ChannelID: 2, MessageID: 3}
	d.Messages[ref] = sdk.MessageSnapshot{Ref: ref, Content: "stored"}
	d.Members[GuildUser{1, 5}] = sdk.MemberSnapshot{GuildID: 1, UserID: 5, DisplayName: "Five"}
	d.Channels[GuildChannel{1, 2}] = sdk.ChannelSnapshot{GuildID: 1, ChannelID: 2, Kind: sdk.ChannelText}
	d.Pins[GuildChannel{1, 2}] = []sdk.MessageSnapshot{{Ref: ref}}
	d.PublicThreads[GuildChannel{1, 2}] = []sdk.ChannelSnapshot{{ChannelID: 7, Kind: sdk.ChannelThread}}
	d.Roles[1] = []sdk.RoleSnapshot{{RoleID: 9}}
	d.Invites[1] = []sdk.InviteSnapshot{{Code: "abc"}}
	d.ChannelAccess[MemberChannel{1, 5, 2}] = true

	if ok, err := d.SendDM(ctx, 5, "hi", nil); !ok || err != nil {
		t.Errorf("send_dm = %v, %v", ok, err)
	}
	if err := d.EditMessage(ctx, ref, "edited", nil); err != nil {
		t.Error(err)
	}
	if m, _ := d.FetchMessage(ctx, ref); m == nil || m.Content != "stored" {
		t.Errorf("fetch_message = %+v", m)
	}
	if err := d.DeleteMessage(ctx, ref, "spam"); err != nil {
		t.Error(err)
	}
	if m, _ := d.FetchMessage(ctx, ref); m != nil {
		t.Errorf("a deleted message is still fetched: %+v", m)
	}
	mod := sdk.Moderation{ActorID: 1, Reason: "r"}
	if err := errors.Join(d.Ban(ctx, 1, 5, mod, time.Hour), d.Kick(ctx, 1, 5, mod), d.Timeout(ctx, 1, 5, mod, time.Minute)); err != nil {
		t.Error(err)
	}
	if err := d.Timeout(ctx, 1, 5, mod, 0); err == nil || err.Error() != "timeout duration must be positive" {
		t.Errorf("zero timeout = %v", err)
	}
	if m, _ := d.FetchMember(ctx, 1, 5); m == nil || m.DisplayName != "Five" {
		t.Errorf("fetch_member = %+v", m)
	}
	if m, _ := d.FetchMember(ctx, 1, 6); m != nil {
		t.Errorf("unknown member = %+v", m)
	}
	if c, _ := d.FetchChannel(ctx, 1, 2); c == nil || c.Kind != sdk.ChannelText {
		t.Errorf("fetch_channel = %+v", c)
	}
	if c, _ := d.FetchChannel(ctx, 2, 2); c != nil {
		t.Errorf("channel of another guild = %+v", c)
	}
	if p, _ := d.FetchPins(ctx, 1, 2); len(p) != 1 {
		t.Errorf("pins = %+v", p)
	}
	if th, _ := d.FetchPublicThreads(ctx, 1, 2); len(th) != 1 || th[0].ChannelID != 7 {
		t.Errorf("threads = %+v", th)
	}
	if r, _ := d.FetchRoles(ctx, 1); len(r) != 1 {
		t.Errorf("roles = %+v", r)
	}
	if i, _ := d.FetchInvites(ctx, 1); len(i) != 1 || i[0].Code != "abc" {
		t.Errorf("invites = %+v", i)
	}
	if ok, _ := d.CanViewChannel(ctx, 1, 5, 2); !ok {
		t.Error("can_view_channel with access = false")
	}
	if ok, _ := d.CanViewChannel(ctx, 1, 6, 2); ok {
		t.Error("can_view_channel defaults to true")
	}
	var actions []sdk.DiscordAction
	for _, c := range d.Calls() {
		if !slices.Contains(actions, c.Action) {
			actions = append(actions, c.Action)
		}
	}
	if len(actions) != 14 { // all but send_message and fetch_messages, tested on their own
		t.Errorf("recorded actions = %v", actions)
	}
}

func TestDiscordSendMessageValidatesControls(t *testing.T) {
	d := NewFakeDiscordActions("mod", nil)
	_, err := d.SendMessage(context.Background(), 1, sdk.OutgoingMessage{Components: []sdk.Component{sdk.ButtonSpec{Key: "Bad Key", Label: "x"}}})
	if err == nil || err.Error() != "invalid component key 'Bad Key'" {
		t.Errorf("invalid button = %v", err)
	}
	// A refused send never reached Discord: it is not recorded as sent.
	if calls := d.CallsFor(sdk.ActionSendMessage); len(calls) != 0 {
		t.Errorf("a refused send was recorded: %+v", calls)
	}
}

// The reference kit's paging, case by case: history ids 1..10.
func TestDiscordFetchMessagesPagesLikeTheReferenceKit(t *testing.T) {
	ctx := context.Background()
	d := NewFakeDiscordActions("mod", nil)
	key := GuildChannel{1, 2}
	for _, id := range []uint64{7, 3, 10, 1, 5, 2, 9, 4, 8, 6} { // stored unsorted
		d.Histories[key] = append(d.Histories[key], sdk.MessageSnapshot{Ref: sdk.MessageRef{GuildID: 1, ChannelID: 2, MessageID: id}})
	}
	tests := []struct {
		name    string
		q       sdk.HistoryQuery
		ids     []uint64
		cursor  uint64
		hasMore bool
	}{
		{"newest page", sdk.HistoryQuery{Limit: 3}, []uint64{8, 9, 10}, 8, true},
		{"default limit takes all", sdk.HistoryQuery{}, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 1, false},
		{"before", sdk.HistoryQuery{Before: 8, Limit: 3}, []uint64{5, 6, 7}, 5, true},
		{"before the start", sdk.HistoryQuery{Before: 3, Limit: 5}, []uint64{1, 2}, 1, false},
		{"after", sdk.HistoryQuery{After: 3, Limit: 2}, []uint64{4, 5}, 5, true},
		{"after, last page", sdk.HistoryQuery{After: 8, Limit: 5}, []uint64{9, 10}, 10, false},
		{"after the end", sdk.HistoryQuery{After: 10, Limit: 5}, nil, 0, false},
		{"limit clamped to 1", sdk.HistoryQuery{After: 1, Limit: -4}, []uint64{2}, 2, true},
	}
	for _, tt := range tests {
		page, err := d.FetchMessages(ctx, 1, 2, tt.q)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var ids []uint64
		for _, m := range page.Messages {
			ids = append(ids, m.Ref.MessageID)
		}
		if !slices.Equal(ids, tt.ids) || page.NextCursor != tt.cursor || page.HasMore != tt.hasMore {
			t.Errorf("%s: ids %v cursor %d more %v; want %v %d %v", tt.name, ids, page.NextCursor, page.HasMore, tt.ids, tt.cursor, tt.hasMore)
		}
	}
	if _, err := d.FetchMessages(ctx, 1, 2, sdk.HistoryQuery{After: 1, Before: 5}); err == nil ||
		err.Error() != "message history accepts either after or before, not both" {
		t.Errorf("after and before = %v", err)
	}
	if page, _ := d.FetchMessages(ctx, 1, 3, sdk.HistoryQuery{}); len(page.Messages) != 0 || page.HasMore {
		t.Errorf("empty channel = %+v", page)
	}
}

// TestDiscordRefusesRefsWithoutAGuild: as the host, a MessageRef without a
// guild is refused with the host's message and not recorded (reply_to,
// edit, delete; a fetch answers nil); SendMessage's ref carries the
// channel's guild when Channels knows it.
func TestDiscordRefusesRefsWithoutAGuild(t *testing.T) {
	ctx := context.Background()
	d := NewFakeDiscordActions("mod", nil)
	d.Channels[GuildChannel{GuildID: 1, ChannelID: 2}] = sdk.ChannelSnapshot{}
	noGuild := sdk.MessageRef{ChannelID: 2, MessageID: 3}
	d.Messages[noGuild] = sdk.MessageSnapshot{Ref: noGuild}
	for _, c := range []struct {
		name, want string
		call       func() error
	}{
		{"reply_to", "reply target is not in the destination channel", func() error {
			_, err := d.SendMessage(ctx, 2, sdk.OutgoingMessage{Content: "hi", ReplyTo: &noGuild})
			return err
		}},
		{"reply_to another guild", "reply target is not in the destination channel", func() error {
			_, err := d.SendMessage(ctx, 2, sdk.OutgoingMessage{Content: "hi", ReplyTo: &sdk.MessageRef{GuildID: 9, ChannelID: 2, MessageID: 3}})
			return err
		}},
		{"edit", "channel 2 is not in guild 0", func() error { return d.EditMessage(ctx, noGuild, "x", nil) }},
		{"delete", "channel 2 is not in guild 0", func() error { return d.DeleteMessage(ctx, noGuild, "") }},
	} {
		var re *RefusedError
		if err := c.call(); !errors.As(err, &re) || err.Error() != c.want {
			t.Errorf("%s = %v, want RefusedError %q", c.name, err, c.want)
		}
	}
	if m, err := d.FetchMessage(ctx, noGuild); m != nil || err != nil {
		t.Errorf("fetch without a guild = %+v, %v; want nil, nil", m, err)
	}
	if calls := d.Calls(); len(calls) != 0 {
		t.Fatalf("refused calls recorded: %+v", calls)
	}
	ref, err := d.SendMessage(ctx, 2, sdk.OutgoingMessage{Content: "hi"})
	if err != nil || ref.GuildID != 1 {
		t.Fatalf("send = %+v, %v; want the channel's guild 1", ref, err)
	}
	if err := d.EditMessage(ctx, ref, "edited", nil); err != nil {
		t.Fatalf("edit of a sent message's ref: %v", err)
	}
}
