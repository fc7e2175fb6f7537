package discord

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Table tests of the events area's normalization (reference §3): each
// topic, each payload rule, DMs and inactive guilds.

const (
	evGuild   = "100000000000000001"
	evOff     = "100000000000000002" // an inactive guild
	evChannel = "200000000000000001"
	evThread  = "200000000000000002"
	evBot     = "300000000000000001"
	evUser    = "300000000000000002"
	evRoleA   = "400000000000000001"
	evRoleB   = "400000000000000002"
	evRoleC   = "400000000000000003"
)

// evGuilds is a GuildConfig with a set of active guilds.
type evGuilds map[uint64]bool

func (g evGuilds) Active(id uint64) bool { return g[id] }
func (g evGuilds) Resolve(uint64, uint64, []uint64) sdk.TrustTier {
	return sdk.TierMember
}

// evState is a stateView over maps.
type evState struct {
	parents  map[string]uint64
	roles    map[string]string
	channels map[string]string
}

func (s evState) parentOf(c string) uint64 { return s.parents[c] }
func (s evState) roleName(_, r string) (string, bool) {
	n, ok := s.roles[r]
	return n, ok
}
func (s evState) channelName(c string) (string, bool) {
	n, ok := s.channels[c]
	return n, ok
}

var evStateDefault = evState{
	parents:  map[string]uint64{evThread: parseID(evChannel)},
	roles:    map[string]string{evRoleA: "alpha", evRoleB: "beta", evRoleC: "gamma"},
	channels: map[string]string{evChannel: "general"},
}

// evPub records published events.
type evPub struct {
	mu  sync.Mutex
	got []sdk.Event
}

func (p *evPub) PublishCore(topic string, payload any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, sdk.Event{Topic: topic, Payload: payload})
	return nil
}

// evSource is a sessionSource knowing only the bot's id.
type evSource struct{ bot uint64 }

func (s evSource) session() (*discordgo.Session, error) { return nil, ErrNotConnected }
func (s evSource) self() (uint64, uint64)               { return s.bot, 0 }

func evIngest(t *testing.T, sizes CacheSizes) (*ingest, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	in := newIngest(log, &evPub{}, evGuilds{parseID(evGuild): true}, NewCache(sizes), evSource{bot: parseID(evBot)})
	return in, &logs
}

func evUserObj(id string, bot bool) *discordgo.User {
	return &discordgo.User{ID: id, Username: "u" + id[len(id)-2:], GlobalName: "Global " + id[len(id)-2:], Bot: bot}
}

var evT0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func evMessage(guild, channel, id, author, content string, bot bool) *discordgo.Message {
	return &discordgo.Message{ID: id, GuildID: guild, ChannelID: channel, Content: content, Author: evUserObj(author, bot), Timestamp: evT0,
		Attachments: []*discordgo.MessageAttachment{{ID: "500000000000000001", Filename: "a.png", URL: "https://cdn/a.png", Size: 3, ContentType: "image/png"}}}
}

// evRun normalizes events in order and returns the last one's result.
func evRun(in *ingest, evs ...any) (string, any) {
	var topic string
	var payload any
	for _, e := range evs {
		topic, payload = in.normalize(evStateDefault, e)
	}
	return topic, payload
}

func TestEventsMessageCreate(t *testing.T) {
	in, _ := evIngest(t, CacheSizes{})
	m := evMessage(evGuild, evThread, "600000000000000001", evUser, "hello", false)
	m.Member = &discordgo.Member{Nick: "Nicky", Roles: []string{evRoleB, evRoleA}}
	topic, p := evRun(in, &discordgo.MessageCreate{Message: m})
	if topic != sdk.TopicMessage {
		t.Fatalf("topic = %q", topic)
	}
	ev := p.(sdk.MessageEvent)
	want := sdk.MessageRef{GuildID: parseID(evGuild), ChannelID: parseID(evThread), MessageID: parseID(m.ID), ParentChannelID: parseID(evChannel)}
	if ev.Message.Ref != want || ev.Message.Content != "hello" || ev.AuthorIsBot || ev.Message.AuthorDisplayName != "Nicky" {
		t.Fatalf("event = %+v", ev)
	}
	// The author's member object filled the member cache.
	if roles, ok := in.cache.MemberRoles(parseID(evGuild), parseID(evUser)); !ok || !reflect.DeepEqual(roles, []uint64{parseID(evRoleA), parseID(evRoleB)}) {
		t.Fatalf("MemberRoles = %v, %v", roles, ok)
	}
	// A bot's message: author_is_bot.
	_, p = evRun(in, &discordgo.MessageCreate{Message: evMessage(evGuild, evChannel, "600000000000000002", evBot, "beep", true)})
	if !p.(sdk.MessageEvent).AuthorIsBot || !p.(sdk.MessageEvent).Message.AuthorIsBot {
		t.Fatalf("bot message: %+v", p)
	}
}

func TestEventsNotPublished(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   any
	}{
		{"DM message", &discordgo.MessageCreate{Message: evMessage("", evChannel, "600000000000000001", evUser, "hi", false)}},
		{"inactive guild message", &discordgo.MessageCreate{Message: evMessage(evOff, evChannel, "600000000000000001", evUser, "hi", false)}},
		{"DM edit", &discordgo.MessageUpdate{Message: evMessage("", evChannel, "600000000000000001", evUser, "hi", false)}},
		{"inactive edit", &discordgo.MessageUpdate{Message: evMessage(evOff, evChannel, "600000000000000001", evUser, "hi", false)}},
		{"DM delete", &discordgo.MessageDelete{Message: &discordgo.Message{ID: "600000000000000001", ChannelID: evChannel}}},
		{"inactive delete", &discordgo.MessageDelete{Message: &discordgo.Message{ID: "600000000000000001", ChannelID: evChannel, GuildID: evOff}}},
		{"DM bulk", &discordgo.MessageDeleteBulk{Messages: []string{"600000000000000001"}, ChannelID: evChannel}},
		{"inactive bulk", &discordgo.MessageDeleteBulk{Messages: []string{"600000000000000001"}, ChannelID: evChannel, GuildID: evOff}},
		{"inactive invite", &discordgo.InviteCreate{Invite: &discordgo.Invite{Code: "abc"}, GuildID: evOff, ChannelID: evChannel}},
		{"inactive invite delete", &discordgo.InviteDelete{Code: "abc", GuildID: evOff, ChannelID: evChannel}},
		{"inactive join", &discordgo.GuildMemberAdd{Member: &discordgo.Member{GuildID: evOff, User: evUserObj(evUser, false)}}},
		{"inactive remove", &discordgo.GuildMemberRemove{Member: &discordgo.Member{GuildID: evOff, User: evUserObj(evUser, false)}}},
		{"inactive audit", &discordgo.GuildAuditLogEntryCreate{GuildID: evOff, AuditLogEntry: &discordgo.AuditLogEntry{ID: "700000000000000001", ActionType: ptr(discordgo.AuditLogActionMemberKick)}}},
		{"unknown guild", &discordgo.MessageCreate{Message: evMessage("999", evChannel, "600000000000000001", evUser, "hi", false)}},
		{"nil author", &discordgo.MessageCreate{Message: &discordgo.Message{ID: "600000000000000001", ChannelID: evChannel, GuildID: evGuild}}},
		{"nil message", &discordgo.MessageCreate{}},
		{"nil member", &discordgo.GuildMemberAdd{}},
		{"member without user", &discordgo.GuildMemberAdd{Member: &discordgo.Member{GuildID: evGuild}}},
		{"remove without user", &discordgo.GuildMemberRemove{Member: &discordgo.Member{GuildID: evGuild}}},
		{"update without user", &discordgo.GuildMemberUpdate{Member: &discordgo.Member{GuildID: evGuild}}},
		{"audit without action", &discordgo.GuildAuditLogEntryCreate{GuildID: evGuild, AuditLogEntry: &discordgo.AuditLogEntry{ID: "700000000000000001"}}},
		{"audit without entry", &discordgo.GuildAuditLogEntryCreate{GuildID: evGuild}},
		{"delete without ids", &discordgo.MessageDelete{Message: &discordgo.Message{GuildID: evGuild}}},
		{"bulk without ids", &discordgo.MessageDeleteBulk{ChannelID: evChannel, GuildID: evGuild}},
		{"invite without code", &discordgo.InviteCreate{Invite: &discordgo.Invite{}, GuildID: evGuild}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := evIngest(t, CacheSizes{})
			if topic, p := evRun(in, tc.ev); topic != "" {
				t.Fatalf("published %q %+v", topic, p)
			}
		})
	}
}

func TestEventsMessageEdit(t *testing.T) {
	in, _ := evIngest(t, CacheSizes{})
	m := evMessage(evGuild, evThread, "600000000000000001", evUser, "before", false)
	evRun(in, &discordgo.MessageCreate{Message: m})

	edited := evMessage(evGuild, evThread, m.ID, evUser, "after", false)
	edited.EditedTimestamp = ptr(evT0.Add(time.Minute))
	topic, p := evRun(in, &discordgo.MessageUpdate{Message: edited})
	ev := p.(sdk.MessageEditEvent)
	if topic != sdk.TopicMessageEdit || ev.BeforeContent == nil || *ev.BeforeContent != "before" || ev.AfterContent == nil || *ev.AfterContent != "after" ||
		ev.AuthorID != parseID(evUser) || !ev.EditedAt.Equal(evT0.Add(time.Minute)) || ev.Ref.ParentChannelID != parseID(evChannel) {
		t.Fatalf("cached edit = %q %+v", topic, ev)
	}
	// A second edit sees the first edit's content as before-content.
	again := evMessage(evGuild, evThread, m.ID, evUser, "third", false)
	_, p = evRun(in, &discordgo.MessageUpdate{Message: again})
	if ev := p.(sdk.MessageEditEvent); *ev.BeforeContent != "after" {
		t.Fatalf("second edit before = %q", *ev.BeforeContent)
	}
	// An uncached raw partial edit: no author, no content, no before.
	_, p = evRun(in, &discordgo.MessageUpdate{Message: &discordgo.Message{ID: "600000000000000009", GuildID: evGuild, ChannelID: evChannel}})
	ev = p.(sdk.MessageEditEvent)
	if ev.AuthorID != 0 || ev.BeforeContent != nil || ev.AfterContent != nil || ev.Ref.MessageID != parseID("600000000000000009") {
		t.Fatalf("uncached partial edit = %+v", ev)
	}
	// An uncached full edit: author and new content, no before.
	_, p = evRun(in, &discordgo.MessageUpdate{Message: evMessage(evGuild, evChannel, "600000000000000008", evUser, "new", false)})
	ev = p.(sdk.MessageEditEvent)
	if ev.AuthorID != parseID(evUser) || ev.BeforeContent != nil || ev.AfterContent == nil || *ev.AfterContent != "new" {
		t.Fatalf("uncached full edit = %+v", ev)
	}
}

func TestEventsMessageDelete(t *testing.T) {
	in, _ := evIngest(t, CacheSizes{})
	m := evMessage(evGuild, evThread, "600000000000000001", evUser, "secret", false)
	evRun(in, &discordgo.MessageCreate{Message: m})
	del := func(id string) sdk.MessageDeleteEvent {
		topic, p := evRun(in, &discordgo.MessageDelete{Message: &discordgo.Message{ID: id, ChannelID: evThread, GuildID: evGuild}})
		if topic != sdk.TopicMessageDelete {
			t.Fatalf("topic = %q", topic)
		}
		return p.(sdk.MessageDeleteEvent)
	}
	ev := del(m.ID)
	if ev.CachedContent == nil || *ev.CachedContent != "secret" || ev.AuthorID != parseID(evUser) || ev.AuthorIsBot == nil || *ev.AuthorIsBot ||
		len(ev.CachedAttachments) != 1 || ev.CachedAttachments[0].Filename != "a.png" || ev.Ref.ParentChannelID != parseID(evChannel) {
		t.Fatalf("cached delete = %+v", ev)
	}
	// Deleted once: the second delete of the same id is uncached.
	ev = del(m.ID)
	if ev.AuthorID != 0 || ev.CachedContent != nil || ev.AuthorIsBot != nil || ev.CachedAttachments != nil || ev.Ref.MessageID != parseID(m.ID) {
		t.Fatalf("uncached delete = %+v", ev)
	}
	// A cached bot message with empty content: author_is_bot true, content nil.
	evRun(in, &discordgo.MessageCreate{Message: evMessage(evGuild, evThread, "600000000000000002", evBot, "", true)})
	if ev = del("600000000000000002"); ev.AuthorIsBot == nil || !*ev.AuthorIsBot || ev.CachedContent != nil {
		t.Fatalf("bot delete = %+v", ev)
	}
}

func TestEventsMessageBulkDelete(t *testing.T) {
	in, _ := evIngest(t, CacheSizes{})
	evRun(in,
		&discordgo.MessageCreate{Message: evMessage(evGuild, evChannel, "600000000000000003", evBot, "mine", true)},
		&discordgo.MessageCreate{Message: evMessage(evGuild, evChannel, "600000000000000001", evUser, "theirs", false)},
	)
	in.cache.rememberBotMessage(parseID("600000000000000005")) // sent by the actions area, never seen on the gateway
	topic, p := evRun(in, &discordgo.MessageDeleteBulk{GuildID: evGuild, ChannelID: evChannel,
		Messages: []string{"600000000000000005", "600000000000000003", "600000000000000001", "600000000000000004"}})
	ev := p.(sdk.MessageBulkDeleteEvent)
	var ids []uint64
	for _, r := range ev.Refs {
		ids = append(ids, r.MessageID)
		if r.GuildID != parseID(evGuild) || r.ChannelID != parseID(evChannel) {
			t.Fatalf("ref %+v", r)
		}
	}
	if topic != sdk.TopicMessageBulkDelete || !reflect.DeepEqual(ids, []uint64{parseID("600000000000000001"), parseID("600000000000000003"), parseID("600000000000000004"), parseID("600000000000000005")}) {
		t.Fatalf("refs not sorted by id: %v", ids)
	}
	if !reflect.DeepEqual(ev.BotMessageIDs, []uint64{parseID("600000000000000003"), parseID("600000000000000005")}) {
		t.Fatalf("bot_message_ids = %v", ev.BotMessageIDs)
	}
	if _, ok := in.cache.message(parseID("600000000000000001")); ok {
		t.Fatal("bulk-deleted message still cached")
	}
}

func TestEventsInvites(t *testing.T) {
	in, _ := evIngest(t, CacheSizes{})
	created := &discordgo.InviteCreate{GuildID: evGuild, ChannelID: evChannel, Invite: &discordgo.Invite{Code: "abc", Inviter: evUserObj(evUser, false),
		MaxAge: 3600, MaxUses: 5, Temporary: true, CreatedAt: evT0}}
	topic, p := evRun(in, created)
	ev := p.(sdk.InviteCreateEvent)
	if topic != sdk.TopicInviteCreate || ev.Invite.Code != "abc" || ev.Invite.ChannelID != parseID(evChannel) || ev.Invite.InviterID != parseID(evUser) ||
		ev.Invite.MaxUses == nil || *ev.Invite.MaxUses != 5 || !ev.Invite.ExpiresAt.Equal(evT0.Add(time.Hour)) || ev.Invite.GuildID != parseID(evGuild) {
		t.Fatalf("invite create = %q %+v", topic, ev)
	}
	topic, p = evRun(in, &discordgo.InviteDelete{GuildID: evGuild, ChannelID: evChannel, Code: "abc"})
	want := sdk.InviteDeleteEvent{Invite: sdk.InviteSnapshot{GuildID: parseID(evGuild), Code: "abc", ChannelID: parseID(evChannel)}}
	if topic != sdk.TopicInviteDelete || !reflect.DeepEqual(p, want) {
		t.Fatalf("invite delete = %q %+v", topic, p)
	}
}

func TestEventsMemberJoinRemove(t *testing.T) {
	in, _ := evIngest(t, CacheSizes{})
	joined := &discordgo.Member{GuildID: evGuild, User: evUserObj(evUser, false), JoinedAt: evT0, Roles: []string{evRoleB, evRoleA}}
	topic, p := evRun(in, &discordgo.GuildMemberAdd{Member: joined})
	ev := p.(sdk.MemberJoinEvent)
	if topic != sdk.TopicMemberJoin || ev.Member.UserID != parseID(evUser) || !reflect.DeepEqual(ev.Member.RoleIDs, []uint64{parseID(evRoleA), parseID(evRoleB)}) ||
		!ev.AccountCreatedAt.Equal(snowflakeTime(parseID(evUser))) || ev.AccountCreatedAt.IsZero() {
		t.Fatalf("join = %q %+v", topic, ev)
	}
	// 300000000000000002 >> 22 = 71525573730 ms after the Discord epoch.
	if got, want := ev.AccountCreatedAt, time.UnixMilli(1420070400000+71525573730).UTC(); !got.Equal(want) {
		t.Fatalf("account_created_at = %v, want %v", got, want)
	}
	evRun(in, &discordgo.GuildMemberUpdate{Member: &discordgo.Member{GuildID: evGuild, User: evUserObj(evUser, false), Nick: "Nick", Roles: []string{evRoleC, evRoleA}}})

	// The gateway's remove carries only the user; the roles come from Kimi's cache.
	topic, p = evRun(in, &discordgo.GuildMemberRemove{Member: &discordgo.Member{GuildID: evGuild, User: evUserObj(evUser, false)}})
	rm := p.(sdk.MemberRemoveEvent)
	want := sdk.MemberRemoveEvent{GuildID: parseID(evGuild), UserID: parseID(evUser), RolesAtRemoval: []uint64{parseID(evRoleA), parseID(evRoleC)}, DisplayName: "Nick"}
	if topic != sdk.TopicMemberRemove || !reflect.DeepEqual(rm, want) {
		t.Fatalf("remove = %q %+v, want %+v", topic, rm, want)
	}
	if _, ok := in.cache.MemberRoles(parseID(evGuild), parseID(evUser)); ok {
		t.Fatal("removed member still cached")
	}
	// An uncached member's removal: no roles, the payload's name and bot flag.
	_, p = evRun(in, &discordgo.GuildMemberRemove{Member: &discordgo.Member{GuildID: evGuild, User: evUserObj(evBot, true)}})
	rm = p.(sdk.MemberRemoveEvent)
	if len(rm.RolesAtRemoval) != 0 || rm.DisplayName != "Global 01" || !rm.IsBot {
		t.Fatalf("uncached remove = %+v", rm)
	}
}

func TestEventsMemberUpdate(t *testing.T) {
	in, _ := evIngest(t, CacheSizes{})
	until := evT0.Add(time.Hour)
	evRun(in, &discordgo.GuildCreate{Guild: &discordgo.Guild{ID: evGuild, Members: []*discordgo.Member{
		{User: evUserObj(evUser, false), Roles: []string{evRoleA, evRoleB}, Nick: "Old"},
	}}})
	topic, p := evRun(in, &discordgo.GuildMemberUpdate{Member: &discordgo.Member{GuildID: evGuild, User: evUserObj(evUser, false),
		Roles: []string{evRoleC, evRoleA}, CommunicationDisabledUntil: &until}})
	ev := p.(sdk.MemberUpdateEvent)
	if topic != sdk.TopicMemberUpdate || !reflect.DeepEqual(ev.RolesAdded, []uint64{parseID(evRoleC)}) || !reflect.DeepEqual(ev.RolesRemoved, []uint64{parseID(evRoleB)}) ||
		ev.TimedOutUntilBefore != nil || ev.TimedOutUntilAfter == nil || !ev.TimedOutUntilAfter.Equal(until) ||
		ev.NicknameBefore == nil || *ev.NicknameBefore != "Old" || ev.NicknameAfter != nil || ev.DisplayName != "Global 02" ||
		!reflect.DeepEqual(ev.RoleNames, map[uint64]string{parseID(evRoleB): "beta", parseID(evRoleC): "gamma"}) {
		t.Fatalf("update = %q %+v", topic, ev)
	}
	// Next update: the timeout is lifted, a nickname set.
	_, p = evRun(in, &discordgo.GuildMemberUpdate{Member: &discordgo.Member{GuildID: evGuild, User: evUserObj(evUser, false), Roles: []string{evRoleA, evRoleC}, Nick: "New"}})
	ev = p.(sdk.MemberUpdateEvent)
	if ev.TimedOutUntilBefore == nil || !ev.TimedOutUntilBefore.Equal(until) || ev.TimedOutUntilAfter != nil || *ev.NicknameAfter != "New" ||
		ev.NicknameBefore != nil || len(ev.RolesAdded)+len(ev.RolesRemoved) != 0 || ev.DisplayName != "New" {
		t.Fatalf("second update = %+v", ev)
	}
	// An update of a member neither cache knows is cached, not published.
	other := &discordgo.Member{GuildID: evGuild, User: evUserObj("300000000000000009", false), Roles: []string{evRoleA}}
	if topic, _ := evRun(in, &discordgo.GuildMemberUpdate{Member: other}); topic != "" {
		t.Fatalf("uncached update published %q", topic)
	}
	if roles, ok := in.cache.MemberRoles(parseID(evGuild), parseID("300000000000000009")); !ok || len(roles) != 1 {
		t.Fatalf("uncached update not cached: %v %v", roles, ok)
	}
	// discordgo's BeforeUpdate serves when Kimi's cache has been outgrown.
	third := &discordgo.Member{GuildID: evGuild, User: evUserObj("300000000000000008", false), Roles: []string{evRoleA, evRoleB}}
	topic, p = evRun(in, &discordgo.GuildMemberUpdate{Member: third, BeforeUpdate: &discordgo.Member{Roles: []string{evRoleA}}})
	if topic == "" || !reflect.DeepEqual(p.(sdk.MemberUpdateEvent).RolesAdded, []uint64{parseID(evRoleB)}) {
		t.Fatalf("BeforeUpdate fallback = %q %+v", topic, p)
	}
}

func evAudit(action discordgo.AuditLogAction, user, target, reason string, changes ...*discordgo.AuditLogChange) *discordgo.GuildAuditLogEntryCreate {
	return &discordgo.GuildAuditLogEntryCreate{GuildID: evGuild, AuditLogEntry: &discordgo.AuditLogEntry{
		ID: "700000000000000001", ActionType: &action, UserID: user, TargetID: target, Reason: reason, Changes: changes}}
}

func evChange(key, old, new any) *discordgo.AuditLogChange {
	k := discordgo.AuditLogChangeKey(key.(string))
	return &discordgo.AuditLogChange{Key: &k, OldValue: old, NewValue: new}
}

func TestEventsAuditLogEntry(t *testing.T) {
	until := "2025-06-01T13:00:00.000000+00:00"
	untilT := time.Date(2025, 6, 1, 13, 0, 0, 0, time.UTC)
	roleList := func(ids ...string) []any {
		var out []any
		for _, id := range ids {
			out = append(out, map[string]any{"id": id, "name": "r"})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		ev      *discordgo.GuildAuditLogEntryCreate
		action  sdk.AuditAction
		raw     string
		changes []sdk.AuditChange
		until   time.Time
		self    bool
		reason  *string
		target  *string
	}{
		{name: "ban by the bot", ev: evAudit(22, evBot, evUser, "spam"), action: sdk.AuditBan, raw: "ban", self: true, reason: ptr("spam"), target: ptr("Nick")},
		{name: "unban", ev: evAudit(23, evUser, evUser, ""), action: sdk.AuditUnban, raw: "unban", target: ptr("Nick")},
		{name: "kick", ev: evAudit(20, evUser, "300000000000000007", ""), action: sdk.AuditKick, raw: "kick"},
		{name: "timeout", ev: evAudit(24, evBot, evUser, "", evChange("communication_disabled_until", nil, until)), action: sdk.AuditTimeout, raw: "member_update",
			changes: []sdk.AuditChange{{Attribute: "timed_out_until", Old: nil, New: float64(untilT.Unix())}}, until: untilT, self: true, target: ptr("Nick")},
		{name: "timeout cleared", ev: evAudit(24, evUser, evUser, "", evChange("communication_disabled_until", until, nil)), action: sdk.AuditTimeoutCleared, raw: "member_update",
			changes: []sdk.AuditChange{{Attribute: "timed_out_until", Old: float64(untilT.Unix()), New: nil}}, target: ptr("Nick")},
		{name: "member update: nick, deaf, mute", ev: evAudit(24, evUser, evUser, "", evChange("mute", false, true), evChange("nick", "a", "b"), evChange("deaf", true, false), evChange("avatar_hash", "x", "y")),
			action: sdk.AuditMemberUpdate, raw: "member_update", target: ptr("Nick"),
			changes: []sdk.AuditChange{{Attribute: "nick", Old: "a", New: "b"}, {Attribute: "deaf", Old: true, New: false}, {Attribute: "mute", Old: false, New: true}}},
		{name: "role update is other", ev: evAudit(25, evUser, evUser, "", evChange("$add", nil, roleList(evRoleA, evRoleB)), evChange("$remove", nil, roleList(evRoleC))),
			action: sdk.AuditOther, raw: "member_role_update", target: ptr("Nick"),
			changes: []sdk.AuditChange{{Attribute: "roles", Old: []uint64{parseID(evRoleC)}, New: []uint64{parseID(evRoleA), parseID(evRoleB)}}}},
		{name: "roles added only", ev: evAudit(25, evUser, evUser, "", evChange("$add", nil, roleList(evRoleA))), action: sdk.AuditOther, raw: "member_role_update", target: ptr("Nick"),
			changes: []sdk.AuditChange{{Attribute: "roles", Old: []uint64{}, New: []uint64{parseID(evRoleA)}}}},
		{name: "channel target named from the state", ev: evAudit(10, evUser, evChannel, ""), action: sdk.AuditOther, raw: "channel_create", target: ptr("general")},
		{name: "role target", ev: evAudit(30, evUser, evRoleA, ""), action: sdk.AuditOther, raw: "role_create", target: ptr("alpha")},
		{name: "unknown action", ev: evAudit(255, "", "", ""), action: sdk.AuditOther, raw: "unknown_255"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := evIngest(t, CacheSizes{})
			in.cache.putMember(cachedMember{key: memberKey{parseID(evGuild), parseID(evUser)}, nick: "Nick"})
			topic, p := evRun(in, tc.ev)
			if topic != sdk.TopicAuditLogEntry {
				t.Fatalf("topic = %q", topic)
			}
			ev := p.(sdk.AuditLogEntryEvent)
			want := sdk.AuditLogEntryEvent{GuildID: parseID(evGuild), EntryID: parseID("700000000000000001"), Action: tc.action, RawAction: tc.raw,
				ActorID: parseID(tc.ev.UserID), TargetID: parseID(tc.ev.TargetID), Reason: tc.reason, Changes: tc.changes,
				CreatedAt: snowflakeTime(parseID("700000000000000001")), TargetDisplayName: tc.target, Until: tc.until, ActorIsSelf: tc.self}
			if !reflect.DeepEqual(ev, want) {
				t.Fatalf("audit =\n %+v\nwant\n %+v", ev, want)
			}
		})
	}
}

// TestEventsHandlerRecovers: a panic in normalization is logged, never
// propagated to the gateway goroutine.
func TestEventsHandlerRecovers(t *testing.T) {
	in, logs := evIngest(t, CacheSizes{})
	in.guilds = panicGuilds{}
	in.handle(nil, &discordgo.MessageCreate{Message: evMessage(evGuild, evChannel, "600000000000000001", evUser, "hi", false)})
	if !strings.Contains(logs.String(), "panicked") {
		t.Fatalf("panic not logged:\n%s", logs)
	}
	if got := in.pub.(*evPub).got; len(got) != 0 {
		t.Fatalf("published after a panic: %+v", got)
	}
}

type panicGuilds struct{}

func (panicGuilds) Active(uint64) bool                             { panic("boom") }
func (panicGuilds) Resolve(uint64, uint64, []uint64) sdk.TrustTier { return sdk.TierMember }

func TestEventsGuildDeleteDropsCaches(t *testing.T) {
	in, _ := evIngest(t, CacheSizes{})
	evRun(in, &discordgo.MessageCreate{Message: evMessage(evGuild, evChannel, "600000000000000001", evUser, "x", false)},
		&discordgo.GuildMemberAdd{Member: &discordgo.Member{GuildID: evGuild, User: evUserObj(evUser, false)}},
		&discordgo.GuildMemberAdd{Member: &discordgo.Member{GuildID: evOff, User: evUserObj(evUser, false)}})
	// An outage (unavailable) keeps everything.
	evRun(in, &discordgo.GuildDelete{Guild: &discordgo.Guild{ID: evGuild, Unavailable: true}})
	if _, ok := in.cache.MemberRoles(parseID(evGuild), parseID(evUser)); !ok {
		t.Fatal("an unavailable guild dropped its members")
	}
	evRun(in, &discordgo.GuildDelete{Guild: &discordgo.Guild{ID: evGuild}})
	if _, ok := in.cache.MemberRoles(parseID(evGuild), parseID(evUser)); ok {
		t.Fatal("members of a left guild still cached")
	}
	if _, ok := in.cache.message(parseID("600000000000000001")); ok {
		t.Fatal("messages of a left guild still cached")
	}
	if _, ok := in.cache.MemberRoles(parseID(evOff), parseID(evUser)); !ok {
		t.Fatal("another guild's member was dropped")
	}
}
