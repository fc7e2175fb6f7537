package discord

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
)

// ingest normalizes gateway events into discord.* topics (reference §3) and
// keeps Kimi's cache up to date. Its handlers run in order on the gateway
// goroutine (SyncEvents): they only normalize and hand the payload to the
// bus, whose PublishCore never waits for a module (it queues on each
// subscriber's bounded lane, dropping the oldest when full). A handler
// that meets a malformed payload logs it at debug and drops it; a panic is
// recovered and logged, so nothing here can stop the gateway.
//
// Guild-less (DM) events are not published, nor events of a guild where
// Kimi is not active (GuildConfig.Active; a nil GuildConfig lets every
// guild through). Members are cached whatever the guild's activation, so
// trust is known the moment a guild is activated; messages only in active
// guilds.
type ingest struct {
	log    *slog.Logger
	pub    Publisher
	guilds GuildConfig
	cache  *Cache
	src    sessionSource
}

func newIngest(log *slog.Logger, pub Publisher, guilds GuildConfig, cache *Cache, src sessionSource) *ingest {
	if log == nil {
		log = slog.Default()
	}
	if cache == nil {
		cache = NewCache(CacheSizes{})
	}
	return &ingest{log: log, pub: pub, guilds: guilds, cache: cache, src: src}
}

// handlers are the discordgo handlers to add to every new session.
func (in *ingest) handlers() []any {
	return []any{
		func(s *discordgo.Session, e *discordgo.GuildCreate) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.GuildDelete) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.GuildMembersChunk) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.MessageCreate) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.MessageUpdate) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.MessageDelete) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.MessageDeleteBulk) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.InviteCreate) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.InviteDelete) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.GuildMemberAdd) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.GuildMemberRemove) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.GuildMemberUpdate) { in.handle(s, e) },
		func(s *discordgo.Session, e *discordgo.GuildAuditLogEntryCreate) { in.handle(s, e) },
	}
}

// handle normalizes one event and publishes its payload, under recover.
func (in *ingest) handle(s *discordgo.Session, ev any) {
	defer func() {
		if p := recover(); p != nil {
			in.log.Error("gateway event handler panicked; event dropped", "event", fmt.Sprintf("%T", ev),
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	var st stateView = discordState{}
	if s != nil {
		st = discordState{st: s.State}
	}
	topic, payload := in.normalize(st, ev)
	if topic == "" || in.pub == nil {
		return
	}
	if err := in.pub.PublishCore(topic, payload); err != nil {
		in.log.Warn("publish a gateway event", "topic", topic, "err", err)
	}
}

// active reports whether guildID's events are published.
func (in *ingest) active(guildID uint64) bool {
	if guildID == 0 {
		return false
	}
	return in.guilds == nil || in.guilds.Active(guildID)
}

func (in *ingest) botID() uint64 {
	if in.src == nil {
		return 0
	}
	id, _ := in.src.self()
	return id
}

// drop logs an event dropped as malformed.
func (in *ingest) drop(event, why string) {
	in.log.Debug("gateway event dropped", "event", event, "reason", why)
}

// normalize updates the cache from ev and returns the topic and payload to
// publish ("" when nothing is published).
func (in *ingest) normalize(st stateView, ev any) (string, any) {
	switch e := ev.(type) {
	case *discordgo.GuildCreate:
		in.guildCreate(e)
	case *discordgo.GuildDelete:
		if e != nil && e.Guild != nil && !e.Unavailable {
			if id := parseID(e.ID); id != 0 {
				in.cache.dropGuild(id)
			}
		}
	case *discordgo.GuildMembersChunk:
		if e != nil {
			in.putMembers(parseID(e.GuildID), e.Members)
		}
	case *discordgo.MessageCreate:
		return in.messageCreate(st, e)
	case *discordgo.MessageUpdate:
		return in.messageUpdate(st, e)
	case *discordgo.MessageDelete:
		return in.messageDelete(st, e)
	case *discordgo.MessageDeleteBulk:
		return in.messageDeleteBulk(st, e)
	case *discordgo.InviteCreate:
		return in.inviteCreate(e)
	case *discordgo.InviteDelete:
		return in.inviteDelete(e)
	case *discordgo.GuildMemberAdd:
		return in.memberAdd(e)
	case *discordgo.GuildMemberRemove:
		return in.memberRemove(e)
	case *discordgo.GuildMemberUpdate:
		return in.memberUpdate(st, e)
	case *discordgo.GuildAuditLogEntryCreate:
		return in.auditEntry(st, e)
	}
	return "", nil
}

func (in *ingest) guildCreate(e *discordgo.GuildCreate) {
	if e == nil || e.Guild == nil {
		return
	}
	in.putMembers(parseID(e.ID), e.Members)
}

func (in *ingest) putMembers(guildID uint64, ms []*discordgo.Member) {
	if guildID == 0 {
		return
	}
	for _, m := range ms {
		if c, ok := memberEntry(guildID, m, nil); ok {
			in.cache.putMember(c)
		}
	}
}

func (in *ingest) messageCreate(st stateView, e *discordgo.MessageCreate) (string, any) {
	if e == nil || e.Message == nil {
		return "", nil
	}
	m := e.Message
	guildID := parseID(m.GuildID)
	if guildID == 0 {
		return "", nil // a DM
	}
	if m.Author == nil || parseID(m.ID) == 0 || parseID(m.ChannelID) == 0 {
		in.drop("MESSAGE_CREATE", "no author or ids")
		return "", nil
	}
	if c, ok := memberEntry(guildID, m.Member, m.Author); ok {
		in.cache.putMember(c)
	}
	if !in.active(guildID) {
		return "", nil
	}
	snap := messageSnapshot(m, guildID, st.parentOf(m.ChannelID))
	bot := in.botID()
	in.cache.putMessage(snap.Ref.MessageID, messageEntry(snap), bot != 0 && snap.AuthorID == bot)
	return sdk.TopicMessage, sdk.MessageEvent{Message: snap, AuthorIsBot: m.Author.Bot}
}

func (in *ingest) messageUpdate(st stateView, e *discordgo.MessageUpdate) (string, any) {
	if e == nil || e.Message == nil {
		return "", nil
	}
	m := e.Message
	guildID := parseID(m.GuildID)
	if guildID == 0 {
		return "", nil
	}
	id := parseID(m.ID)
	if id == 0 || parseID(m.ChannelID) == 0 {
		in.drop("MESSAGE_UPDATE", "no ids")
		return "", nil
	}
	if !in.active(guildID) {
		return "", nil
	}
	ev := sdk.MessageEditEvent{Ref: messageRef(st, m.GuildID, m.ChannelID, m.ID)}
	if m.EditedTimestamp != nil {
		ev.EditedAt = *m.EditedTimestamp
	}
	before, cached := in.cache.message(id)
	if cached {
		ev.BeforeContent = ptr(before.content)
		ev.AuthorID = before.author
		ev.Ref.ParentChannelID = cmpOrID(ev.Ref.ParentChannelID, before.parent)
	}
	if m.Author != nil {
		// A full message: its content is the new content (even empty).
		snap := messageSnapshot(m, guildID, ev.Ref.ParentChannelID)
		ev.AuthorID = snap.AuthorID
		ev.AfterContent = ptr(m.Content)
		bot := in.botID()
		in.cache.putMessage(id, messageEntry(snap), bot != 0 && snap.AuthorID == bot)
	} else if m.Content != "" {
		ev.AfterContent = ptr(m.Content)
		if cached {
			before.content = m.Content
			in.cache.putMessage(id, before, false)
		}
	}
	return sdk.TopicMessageEdit, ev
}

func cmpOrID(a, b uint64) uint64 {
	if a != 0 {
		return a
	}
	return b
}

func (in *ingest) messageDelete(st stateView, e *discordgo.MessageDelete) (string, any) {
	if e == nil || e.Message == nil {
		return "", nil
	}
	m := e.Message
	guildID := parseID(m.GuildID)
	if guildID == 0 {
		return "", nil
	}
	id := parseID(m.ID)
	if id == 0 || parseID(m.ChannelID) == 0 {
		in.drop("MESSAGE_DELETE", "no ids")
		return "", nil
	}
	c, cached, _ := in.cache.takeMessage(id)
	if !in.active(guildID) {
		return "", nil
	}
	ev := sdk.MessageDeleteEvent{Ref: messageRef(st, m.GuildID, m.ChannelID, m.ID)}
	if cached {
		ev.Ref.ParentChannelID = cmpOrID(c.parent, ev.Ref.ParentChannelID)
		ev.AuthorID = c.author
		if c.content != "" {
			ev.CachedContent = ptr(c.content)
		}
		ev.CachedAttachments = c.attachments
		ev.AuthorIsBot = ptr(c.authorBot)
	}
	return sdk.TopicMessageDelete, ev
}

func (in *ingest) messageDeleteBulk(st stateView, e *discordgo.MessageDeleteBulk) (string, any) {
	if e == nil {
		return "", nil
	}
	guildID := parseID(e.GuildID)
	if guildID == 0 {
		return "", nil
	}
	channelID := parseID(e.ChannelID)
	if channelID == 0 {
		in.drop("MESSAGE_DELETE_BULK", "no channel id")
		return "", nil
	}
	ids := parseIDs(e.Messages)
	ids = slices.Compact(ids)
	parent := st.parentOf(e.ChannelID)
	ev := sdk.MessageBulkDeleteEvent{Refs: make([]sdk.MessageRef, 0, len(ids))}
	for _, id := range ids {
		c, cached, own := in.cache.takeMessage(id)
		ref := sdk.MessageRef{GuildID: guildID, ChannelID: channelID, MessageID: id, ParentChannelID: parent}
		if cached {
			ref.ParentChannelID = cmpOrID(c.parent, parent)
		}
		ev.Refs = append(ev.Refs, ref)
		if own {
			ev.BotMessageIDs = append(ev.BotMessageIDs, id)
		}
	}
	if len(ev.Refs) == 0 {
		in.drop("MESSAGE_DELETE_BULK", "no message ids")
		return "", nil
	}
	if !in.active(guildID) {
		return "", nil
	}
	return sdk.TopicMessageBulkDelete, ev
}

func (in *ingest) inviteCreate(e *discordgo.InviteCreate) (string, any) {
	if e == nil || e.Invite == nil {
		return "", nil
	}
	guildID := parseID(e.GuildID)
	if guildID == 0 || e.Code == "" {
		return "", nil
	}
	if !in.active(guildID) {
		return "", nil
	}
	s := inviteSnapshot(guildID, e.Invite)
	if s.ChannelID == 0 {
		s.ChannelID = parseID(e.ChannelID)
	}
	return sdk.TopicInviteCreate, sdk.InviteCreateEvent{Invite: s}
}

func (in *ingest) inviteDelete(e *discordgo.InviteDelete) (string, any) {
	if e == nil {
		return "", nil
	}
	guildID := parseID(e.GuildID)
	if guildID == 0 || e.Code == "" {
		return "", nil
	}
	if !in.active(guildID) {
		return "", nil
	}
	return sdk.TopicInviteDelete, sdk.InviteDeleteEvent{Invite: sdk.InviteSnapshot{GuildID: guildID, Code: e.Code, ChannelID: parseID(e.ChannelID)}}
}

func (in *ingest) memberAdd(e *discordgo.GuildMemberAdd) (string, any) {
	if e == nil || e.Member == nil {
		return "", nil
	}
	guildID := parseID(e.GuildID)
	c, ok := memberEntry(guildID, e.Member, nil)
	if !ok {
		in.drop("GUILD_MEMBER_ADD", "no guild or user id")
		return "", nil
	}
	in.cache.putMember(c)
	if !in.active(guildID) {
		return "", nil
	}
	s := memberSnapshot(guildID, e.Member)
	return sdk.TopicMemberJoin, sdk.MemberJoinEvent{Member: s, AccountCreatedAt: snowflakeTime(s.UserID)}
}

func (in *ingest) memberRemove(e *discordgo.GuildMemberRemove) (string, any) {
	if e == nil || e.Member == nil || e.User == nil {
		in.drop("GUILD_MEMBER_REMOVE", "no member")
		return "", nil
	}
	guildID, userID := parseID(e.GuildID), parseID(e.User.ID)
	if guildID == 0 || userID == 0 {
		in.drop("GUILD_MEMBER_REMOVE", "no guild or user id")
		return "", nil
	}
	c, cached := in.cache.takeMember(guildID, userID)
	if !in.active(guildID) {
		return "", nil
	}
	ev := sdk.MemberRemoveEvent{GuildID: guildID, UserID: userID, RolesAtRemoval: []uint64{}, DisplayName: e.User.DisplayName(), IsBot: e.User.Bot}
	if cached {
		if c.roles != nil {
			ev.RolesAtRemoval = c.roles
		}
		if c.nick != "" {
			ev.DisplayName = c.nick
		} else if ev.DisplayName == "" {
			ev.DisplayName = c.name
		}
		ev.IsBot = ev.IsBot || c.bot
	}
	return sdk.TopicMemberRemove, ev
}

func (in *ingest) memberUpdate(st stateView, e *discordgo.GuildMemberUpdate) (string, any) {
	if e == nil || e.Member == nil {
		return "", nil
	}
	guildID := parseID(e.GuildID)
	after, ok := memberEntry(guildID, e.Member, nil)
	if !ok {
		in.drop("GUILD_MEMBER_UPDATE", "no guild or user id")
		return "", nil
	}
	before, cached := in.cache.peekMember(guildID, after.key.user)
	if !cached && e.BeforeUpdate != nil {
		before, cached = memberEntry(guildID, e.BeforeUpdate, e.Member.User)
	}
	in.cache.putMember(after)
	if !cached {
		// As the original (discord.py drops an update of an unknown member):
		// without the before-state there are no deltas to report.
		in.log.Debug("member update of an uncached member; cached, not published", "guild_id", guildID)
		return "", nil
	}
	if !in.active(guildID) {
		return "", nil
	}
	ev := sdk.MemberUpdateEvent{
		GuildID: guildID, UserID: after.key.user,
		RolesAdded:   sortedDiff(after.roles, before.roles),
		RolesRemoved: sortedDiff(before.roles, after.roles),
		DisplayName:  after.displayName(), IsBot: after.bot,
		RoleNames: map[uint64]string{},
	}
	if t := before.timedOutUntil(); !t.IsZero() {
		ev.TimedOutUntilBefore = &t
	}
	if t := after.timedOutUntil(); !t.IsZero() {
		ev.TimedOutUntilAfter = &t
	}
	if before.nick != "" {
		ev.NicknameBefore = ptr(before.nick)
	}
	if after.nick != "" {
		ev.NicknameAfter = ptr(after.nick)
	}
	for _, ids := range [][]uint64{ev.RolesAdded, ev.RolesRemoved} {
		for _, id := range ids {
			if name, ok := st.roleName(e.GuildID, idString(id)); ok {
				ev.RoleNames[id] = name
			}
		}
	}
	return sdk.TopicMemberUpdate, ev
}

func (in *ingest) auditEntry(st stateView, e *discordgo.GuildAuditLogEntryCreate) (string, any) {
	if e == nil || e.AuditLogEntry == nil {
		return "", nil
	}
	guildID, entryID := parseID(e.GuildID), parseID(e.ID)
	if guildID == 0 || entryID == 0 || e.ActionType == nil {
		in.drop("GUILD_AUDIT_LOG_ENTRY_CREATE", "no guild, entry id or action")
		return "", nil
	}
	if !in.active(guildID) {
		return "", nil
	}
	ev := sdk.AuditLogEntryEvent{
		GuildID: guildID, EntryID: entryID,
		Action: auditAction(*e.ActionType), RawAction: auditRawAction(*e.ActionType),
		ActorID: parseID(e.UserID), TargetID: parseID(e.TargetID),
		CreatedAt: snowflakeTime(entryID),
	}
	if e.Reason != "" {
		ev.Reason = ptr(e.Reason)
	}
	var until *time.Time
	var timeoutChanged bool
	ev.Changes, until, timeoutChanged = auditChanges(e.Changes)
	if ev.Action == sdk.AuditMemberUpdate && timeoutChanged {
		if until != nil {
			ev.Action, ev.Until = sdk.AuditTimeout, *until
		} else {
			ev.Action = sdk.AuditTimeoutCleared
		}
	}
	if ev.TargetID != 0 {
		if m, ok := in.cache.peekMember(guildID, ev.TargetID); ok && m.displayName() != "" {
			ev.TargetDisplayName = ptr(m.displayName())
		} else if n, ok := st.roleName(e.GuildID, e.TargetID); ok {
			ev.TargetDisplayName = ptr(n)
		} else if n, ok := st.channelName(e.TargetID); ok {
			ev.TargetDisplayName = ptr(n)
		}
	}
	bot := in.botID()
	ev.ActorIsSelf = bot != 0 && ev.ActorID == bot
	return sdk.TopicAuditLogEntry, ev
}
