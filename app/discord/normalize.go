package discord

import (
	"slices"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
)

// This file normalizes discordgo's gateway events into the SDK's discord.*
// payloads (reference §3), with Kimi's cache for what discordgo's state
// does not keep. Every function is nil-safe on the payload's optional
// parts: a malformed event yields no payload, never a panic.

// stateView is what normalization reads of discordgo's state: thread
// parents, role and channel names.
type stateView interface {
	// parentOf returns a thread's parent channel, 0 when the channel is not
	// a known thread.
	parentOf(channelID string) uint64
	// roleName returns a guild role's name.
	roleName(guildID, roleID string) (string, bool)
	// channelName returns a channel's name.
	channelName(channelID string) (string, bool)
}

// discordState is a stateView over a session's state (nil: knows nothing).
type discordState struct{ st *discordgo.State }

func (d discordState) parentOf(channelID string) uint64 {
	if d.st == nil || channelID == "" {
		return 0
	}
	c, err := d.st.Channel(channelID)
	if err != nil || c == nil || !isThread(c.Type) {
		return 0
	}
	return parseID(c.ParentID)
}

func (d discordState) roleName(guildID, roleID string) (string, bool) {
	if d.st == nil || guildID == "" || roleID == "" {
		return "", false
	}
	r, err := d.st.Role(guildID, roleID)
	if err != nil || r == nil {
		return "", false
	}
	return r.Name, true
}

func (d discordState) channelName(channelID string) (string, bool) {
	if d.st == nil || channelID == "" {
		return "", false
	}
	c, err := d.st.Channel(channelID)
	if err != nil || c == nil {
		return "", false
	}
	return c.Name, true
}

// discordEpochMS is the snowflake epoch (2015-01-01T00:00:00Z) in ms.
const discordEpochMS = 1420070400000

// snowflakeTime is when a snowflake was made (zero for 0).
func snowflakeTime(id uint64) time.Time {
	if id == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(id>>22) + discordEpochMS).UTC()
}

// memberEntry converts a gateway member of guildID for the cache; u is the
// member's user when the payload carries it apart (a message's author).
// False when the user id is missing.
func memberEntry(guildID uint64, m *discordgo.Member, u *discordgo.User) (cachedMember, bool) {
	if m == nil {
		return cachedMember{}, false
	}
	if m.User != nil {
		u = m.User
	}
	if u == nil || guildID == 0 {
		return cachedMember{}, false
	}
	id := parseID(u.ID)
	if id == 0 {
		return cachedMember{}, false
	}
	e := cachedMember{key: memberKey{guildID, id}, roles: parseIDs(m.Roles), nick: m.Nick, name: u.DisplayName(), bot: u.Bot}
	if u.Username != e.name {
		e.user = u.Username
	}
	if len(e.roles) == 0 {
		e.roles = nil
	} else {
		e.roles = slices.Clip(e.roles)
	}
	if !m.JoinedAt.IsZero() {
		e.joined = m.JoinedAt.Unix()
	}
	if m.CommunicationDisabledUntil != nil && !m.CommunicationDisabledUntil.IsZero() {
		e.timeout = m.CommunicationDisabledUntil.UnixNano()
	}
	return e, true
}

// messageEntry is what the cache keeps of a message.
func messageEntry(s sdk.MessageSnapshot) cachedMessage {
	return cachedMessage{guild: s.Ref.GuildID, channel: s.Ref.ChannelID, parent: s.Ref.ParentChannelID,
		author: s.AuthorID, authorBot: s.AuthorIsBot, content: s.Content, attachments: s.Attachments}
}

// messageRef is a message's ref from its payload ids.
func messageRef(st stateView, guildID, channelID, messageID string) sdk.MessageRef {
	return sdk.MessageRef{GuildID: parseID(guildID), ChannelID: parseID(channelID), MessageID: parseID(messageID), ParentChannelID: st.parentOf(channelID)}
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// auditActionNames are discord.py's AuditLogAction names, which the
// original publishes as raw_action (an unknown value is "unknown_<n>").
var auditActionNames = map[discordgo.AuditLogAction]string{
	1:  "guild_update",
	10: "channel_create", 11: "channel_update", 12: "channel_delete",
	13: "overwrite_create", 14: "overwrite_update", 15: "overwrite_delete",
	20: "kick", 21: "member_prune", 22: "ban", 23: "unban", 24: "member_update",
	25: "member_role_update", 26: "member_move", 27: "member_disconnect", 28: "bot_add",
	30: "role_create", 31: "role_update", 32: "role_delete",
	40: "invite_create", 41: "invite_update", 42: "invite_delete",
	50: "webhook_create", 51: "webhook_update", 52: "webhook_delete",
	60: "emoji_create", 61: "emoji_update", 62: "emoji_delete",
	72: "message_delete", 73: "message_bulk_delete", 74: "message_pin", 75: "message_unpin",
	80: "integration_create", 81: "integration_update", 82: "integration_delete",
	83: "stage_instance_create", 84: "stage_instance_update", 85: "stage_instance_delete",
	90: "sticker_create", 91: "sticker_update", 92: "sticker_delete",
	100: "scheduled_event_create", 101: "scheduled_event_update", 102: "scheduled_event_delete",
	110: "thread_create", 111: "thread_update", 112: "thread_delete",
	121: "app_command_permission_update",
	130: "soundboard_sound_create", 131: "soundboard_sound_update", 132: "soundboard_sound_delete",
	140: "automod_rule_create", 141: "automod_rule_update", 142: "automod_rule_delete",
	143: "automod_block_message", 144: "automod_flag_message", 145: "automod_timeout_member",
	146: "automod_quarantine_user",
	150: "creator_monetization_request_created", 151: "creator_monetization_terms_accepted",
	163: "onboarding_prompt_create", 164: "onboarding_prompt_update", 165: "onboarding_prompt_delete",
	166: "onboarding_create", 167: "onboarding_update",
	190: "home_settings_create", 191: "home_settings_update",
}

// auditRawAction is Discord's action as the original names it.
func auditRawAction(a discordgo.AuditLogAction) string {
	if n, ok := auditActionNames[a]; ok {
		return n
	}
	return "unknown_" + strconv.Itoa(int(a))
}

// auditAction maps Discord's action to the SDK's (before the timeout rule).
func auditAction(a discordgo.AuditLogAction) sdk.AuditAction {
	switch a {
	case discordgo.AuditLogActionMemberBanAdd:
		return sdk.AuditBan
	case discordgo.AuditLogActionMemberBanRemove:
		return sdk.AuditUnban
	case discordgo.AuditLogActionMemberKick:
		return sdk.AuditKick
	case discordgo.AuditLogActionMemberUpdate:
		return sdk.AuditMemberUpdate
	}
	return sdk.AuditOther
}

// auditAttributes are the changes the original reports, in its order, and
// the Discord change keys each comes from (roles: $remove is the old side,
// $add the new, as discord.py reads them).
var auditAttributes = []string{"timed_out_until", "roles", "nick", "deaf", "mute"}

// auditChanges extracts the considered attributes' changes with JSON-able
// values: times as unix seconds (float64), role lists as ids, nick as a
// string, deaf and mute as bools; an attribute absent on both sides is
// left out. The second result is the new timed_out_until (nil when absent
// or cleared) and whether the attribute changed at all.
func auditChanges(cs []*discordgo.AuditLogChange) (out []sdk.AuditChange, until *time.Time, timeoutChanged bool) {
	type sides struct {
		old, new any
		seen     bool
	}
	var got [5]sides
	for _, c := range cs {
		if c == nil || c.Key == nil {
			continue
		}
		switch *c.Key {
		case "communication_disabled_until":
			got[0] = sides{old: jsonTime(c.OldValue), new: jsonTime(c.NewValue), seen: true}
			if t, ok := parseTime(c.NewValue); ok {
				until = &t
			}
		case "$add":
			got[1].new = roleIDs(c.NewValue)
			if !got[1].seen {
				got[1].old = []uint64{}
			}
			got[1].seen = true
		case "$remove":
			got[1].old = roleIDs(c.NewValue)
			if !got[1].seen {
				got[1].new = []uint64{}
			}
			got[1].seen = true
		case "nick":
			got[2] = sides{old: jsonString(c.OldValue), new: jsonString(c.NewValue), seen: true}
		case "deaf":
			got[3] = sides{old: jsonBool(c.OldValue), new: jsonBool(c.NewValue), seen: true}
		case "mute":
			got[4] = sides{old: jsonBool(c.OldValue), new: jsonBool(c.NewValue), seen: true}
		}
	}
	for i, s := range got {
		if !s.seen || (s.old == nil && s.new == nil) {
			continue
		}
		if i == 0 {
			timeoutChanged = true
		}
		out = append(out, sdk.AuditChange{Attribute: auditAttributes[i], Old: s.old, New: s.new})
	}
	return out, until, timeoutChanged
}

func parseTime(v any) (time.Time, bool) {
	s, ok := v.(string)
	if !ok || s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// jsonTime is a Discord timestamp as unix seconds (nil when absent or
// unparsable).
func jsonTime(v any) any {
	t, ok := parseTime(v)
	if !ok {
		return nil
	}
	return float64(t.UnixNano()) / 1e9
}

func jsonString(v any) any {
	if s, ok := v.(string); ok {
		return s
	}
	return nil
}

func jsonBool(v any) any {
	if b, ok := v.(bool); ok {
		return b
	}
	return nil
}

// roleIDs reads a $add/$remove value: a list of {"id", "name"} objects.
func roleIDs(v any) []uint64 {
	list, _ := v.([]any)
	out := make([]uint64, 0, len(list))
	for _, it := range list {
		obj, _ := it.(map[string]any)
		if id, _ := obj["id"].(string); parseID(id) != 0 {
			out = append(out, parseID(id))
		}
	}
	return out
}

// sortedDiff returns the ids of a not in b (both sorted), sorted.
func sortedDiff(a, b []uint64) []uint64 {
	var out []uint64
	for _, id := range a {
		if _, found := slices.BinarySearch(b, id); !found {
			out = append(out, id)
		}
	}
	return out
}
