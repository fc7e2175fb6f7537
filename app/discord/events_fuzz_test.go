package discord

import (
	"encoding/json"
	"log/slog"
	"slices"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// evFuzzEvents are the gateway events the ingest handles, by name, each
// with discordgo's type (as discordgo's event providers build them).
var evFuzzEvents = []struct {
	name string
	new  func() any
	seed string
}{
	{"GUILD_CREATE", func() any { return new(discordgo.GuildCreate) },
		`{"id":"100000000000000001","members":[{"user":{"id":"300000000000000002"},"roles":["400000000000000001"]},{"roles":null},null]}`},
	{"GUILD_DELETE", func() any { return new(discordgo.GuildDelete) }, `{"id":"100000000000000001"}`},
	{"GUILD_MEMBERS_CHUNK", func() any { return new(discordgo.GuildMembersChunk) },
		`{"guild_id":"100000000000000001","members":[{"user":{"id":"300000000000000002","bot":true},"nick":"n"}]}`},
	{"MESSAGE_CREATE", func() any { return new(discordgo.MessageCreate) },
		`{"id":"600000000000000001","guild_id":"100000000000000001","channel_id":"200000000000000002","content":"x","author":{"id":"300000000000000002"},"member":{"roles":["400000000000000001"]},"attachments":[null,{"id":"1"}],"embeds":[null,{"image":{}}],"message_reference":{}}`},
	{"MESSAGE_UPDATE", func() any { return new(discordgo.MessageUpdate) },
		`{"id":"600000000000000001","guild_id":"100000000000000001","channel_id":"200000000000000001","content":"y","edited_timestamp":"2025-06-01T12:00:00Z"}`},
	{"MESSAGE_DELETE", func() any { return new(discordgo.MessageDelete) },
		`{"id":"600000000000000001","guild_id":"100000000000000001","channel_id":"200000000000000001"}`},
	{"MESSAGE_DELETE_BULK", func() any { return new(discordgo.MessageDeleteBulk) },
		`{"ids":["600000000000000002","600000000000000001","x","600000000000000001"],"guild_id":"100000000000000001","channel_id":"200000000000000001"}`},
	{"INVITE_CREATE", func() any { return new(discordgo.InviteCreate) },
		`{"code":"abc","guild_id":"100000000000000001","channel_id":"200000000000000001","max_age":60,"inviter":{"id":"1"}}`},
	{"INVITE_DELETE", func() any { return new(discordgo.InviteDelete) }, `{"code":"abc","guild_id":"100000000000000001"}`},
	{"GUILD_MEMBER_ADD", func() any { return new(discordgo.GuildMemberAdd) },
		`{"guild_id":"100000000000000001","user":{"id":"300000000000000002"},"roles":[],"joined_at":"2025-06-01T12:00:00Z"}`},
	{"GUILD_MEMBER_REMOVE", func() any { return new(discordgo.GuildMemberRemove) },
		`{"guild_id":"100000000000000001","user":{"id":"300000000000000002"}}`},
	{"GUILD_MEMBER_UPDATE", func() any { return new(discordgo.GuildMemberUpdate) },
		`{"guild_id":"100000000000000001","user":{"id":"300000000000000002"},"roles":["400000000000000002"],"communication_disabled_until":"2025-06-01T13:00:00Z"}`},
	{"GUILD_AUDIT_LOG_ENTRY_CREATE", func() any { return new(discordgo.GuildAuditLogEntryCreate) },
		`{"guild_id":"100000000000000001","id":"700000000000000001","action_type":24,"user_id":"300000000000000001","target_id":"300000000000000002",` +
			`"changes":[{"key":"communication_disabled_until","new_value":"2025-06-01T13:00:00Z"},{"key":"$add","new_value":[{"id":"4"},null,"x"]},{"key":"$remove","new_value":7},{"key":"nick","old_value":1},null,{"key":null}]}`},
}

// FuzzNormalizeEvents feeds raw JSON for each event type into discordgo's
// type and through normalization (after a warm-up that fills the caches),
// checking that nothing panics and that what is published is well formed.
func FuzzNormalizeEvents(f *testing.F) {
	for i, e := range evFuzzEvents {
		f.Add(uint8(i), []byte(e.seed))
		f.Add(uint8(i), []byte(`{}`))
		f.Add(uint8(i), []byte(`null`))
	}
	f.Fuzz(func(t *testing.T, kind uint8, raw []byte) {
		e := evFuzzEvents[int(kind)%len(evFuzzEvents)]
		in := newIngest(nil, &evPub{}, evGuilds{parseID(evGuild): true}, NewCache(CacheSizes{Messages: 8, Members: 8}), evSource{bot: parseID(evBot)})
		in.log = discardLogger()
		// Warm-up: every seed once, so cached paths are exercised too.
		for _, w := range evFuzzEvents {
			ev := w.new()
			if json.Unmarshal([]byte(w.seed), ev) == nil {
				in.normalize(evStateDefault, ev)
			}
		}
		ev := e.new()
		if err := json.Unmarshal(raw, ev); err != nil {
			return
		}
		topic, payload := in.normalize(evStateDefault, ev)
		if topic == "" {
			return
		}
		if g := hostkit.EventGuildID(payload); g != parseID(evGuild) {
			t.Fatalf("%s published %s for guild %d: %+v", e.name, topic, g, payload)
		}
		switch p := payload.(type) {
		case sdk.MessageBulkDeleteEvent:
			if !slices.IsSortedFunc(p.Refs, func(a, b sdk.MessageRef) int { return cmpU64(a.MessageID, b.MessageID) }) || !slices.IsSorted(p.BotMessageIDs) {
				t.Fatalf("bulk delete not sorted: %+v", p)
			}
		case sdk.MemberUpdateEvent:
			if !slices.IsSorted(p.RolesAdded) || !slices.IsSorted(p.RolesRemoved) || p.UserID == 0 {
				t.Fatalf("member update: %+v", p)
			}
		case sdk.AuditLogEntryEvent:
			if p.EntryID == 0 || p.RawAction == "" || (p.Action == sdk.AuditTimeout && p.Until.IsZero()) {
				t.Fatalf("audit entry: %+v", p)
			}
			if _, err := json.Marshal(p.Changes); err != nil {
				t.Fatalf("audit changes are not JSON-able: %v", err)
			}
		}
	})
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
