package discord

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/modules/sdk"
)

// evWait bounds every wait of the end-to-end tests (generous: the machine
// is shared; a hang must not hang the run).
const evWait = 30 * time.Second

const evIntents = discordgo.IntentsGuilds | discordgo.IntentGuildMembers | discordgo.IntentGuildMessages |
	discordgo.IntentMessageContent | discordgo.IntentGuildModeration | discordgo.IntentGuildInvites

// evE2E is a fake Discord, a real discordgo session carrying the ingest's
// handlers, and a real bus with one module subscribed to discord.*.
type evE2E struct {
	f     *fakediscord.Server
	s     *discordgo.Session
	cache *Cache
	got   chan sdk.Event
	held  []sdk.Event // events next skipped, in arrival order
}

func newEvE2E(t *testing.T, seed func(f *fakediscord.Server)) *evE2E {
	t.Helper()
	f := newFake(t, fakediscord.Options{})
	seed(f)
	bus := events.New(events.Options{Workers: 1, QueueSize: 4096, Logger: discardLogger()})
	t.Cleanup(func() { bus.Close(5 * time.Second) })
	mod := bus.Module(context.Background(), "evmod", sdk.Permissions{EventTopics: []string{"discord.*"}}, nil)
	e := &evE2E{f: f, cache: NewCache(CacheSizes{}), got: make(chan sdk.Event, 4096)}
	if _, err := mod.Subscribe("discord.*", func(_ context.Context, ev sdk.Event) error {
		e.got <- ev
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	src := newTestSource(f, nil)
	in := newIngest(discardLogger(), bus, evGuilds{parseID(evGuild): true}, e.cache, src)
	e.s = openSession(t, f, evIntents, in.handlers()...)
	src.mu.Lock()
	src.s = e.s
	src.mu.Unlock()
	return e
}

// next returns the oldest event of topic not yet returned; events of other
// topics are held for later calls.
func (e *evE2E) next(t *testing.T, topic string) sdk.Event {
	t.Helper()
	for i, ev := range e.held {
		if ev.Topic == topic {
			e.held = append(e.held[:i], e.held[i+1:]...)
			return ev
		}
	}
	deadline := time.After(evWait)
	for {
		select {
		case ev := <-e.got:
			if ev.Topic == topic {
				return ev
			}
			e.held = append(e.held, ev)
		case <-deadline:
			t.Fatalf("no %s event", topic)
			return sdk.Event{}
		}
	}
}

// waitMember waits until the cache holds a member (GUILD_CREATE arrived).
func (e *evE2E) waitMember(t *testing.T, guild, user string) {
	t.Helper()
	for end := time.Now().Add(evWait); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if _, ok := e.cache.MemberRoles(parseID(guild), parseID(user)); ok {
			return
		}
	}
	t.Fatalf("member %s of %s never cached", user, guild)
}

func TestEventsEndToEnd(t *testing.T) {
	const other = "300000000000000005"
	e := newEvE2E(t, func(f *fakediscord.Server) {
		f.AddGuild(fakediscord.GuildSpec{ID: evGuild})
		f.AddRole(evGuild, discordgo.Role{ID: evRoleA, Name: "alpha"})
		f.AddRole(evGuild, discordgo.Role{ID: evRoleB, Name: "beta"})
		f.AddChannel(fakediscord.ChannelSpec{ID: evChannel, GuildID: evGuild, Name: "general"})
		f.AddUser(discordgo.User{ID: evUser, Username: "ann"})
		f.AddUser(discordgo.User{ID: other, Username: "bob"})
		f.AddMember(evGuild, evUser, evRoleA)
	})
	e.waitMember(t, evGuild, evUser)
	ctx := context.Background()

	// A post, then its edit with the before-content from Kimi's cache.
	posted, err := e.f.PostMessage(evChannel, evUser, "hello")
	if err != nil {
		t.Fatal(err)
	}
	msg := e.next(t, sdk.TopicMessage).Payload.(sdk.MessageEvent)
	if msg.Message.Content != "hello" || msg.Message.Ref.MessageID != parseID(posted.ID) || msg.AuthorIsBot {
		t.Fatalf("message = %+v", msg)
	}
	if err := e.f.EditAsUser(evChannel, posted.ID, "hello, edited"); err != nil {
		t.Fatal(err)
	}
	edit := e.next(t, sdk.TopicMessageEdit).Payload.(sdk.MessageEditEvent)
	if edit.BeforeContent == nil || *edit.BeforeContent != "hello" || edit.AfterContent == nil || *edit.AfterContent != "hello, edited" || edit.AuthorID != parseID(evUser) || edit.EditedAt.IsZero() {
		t.Fatalf("edit = %+v", edit)
	}
	// A delete carries the cached (edited) content.
	if err := e.f.DeleteAsUser(evChannel, posted.ID); err != nil {
		t.Fatal(err)
	}
	del := e.next(t, sdk.TopicMessageDelete).Payload.(sdk.MessageDeleteEvent)
	if del.CachedContent == nil || *del.CachedContent != "hello, edited" || del.AuthorID != parseID(evUser) || del.AuthorIsBot == nil || *del.AuthorIsBot {
		t.Fatalf("delete = %+v", del)
	}

	// A bulk delete of a user's message and the bot's own: bot_message_ids.
	second, err := e.f.PostMessage(evChannel, evUser, "second")
	if err != nil {
		t.Fatal(err)
	}
	e.next(t, sdk.TopicMessage)
	mine, err := e.s.ChannelMessageSend(evChannel, "from the bot", discordgo.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if own := e.next(t, sdk.TopicMessage).Payload.(sdk.MessageEvent); !own.AuthorIsBot || own.Message.AuthorID != parseID(e.f.BotID()) {
		t.Fatalf("bot's message = %+v", own)
	}
	if err := e.s.ChannelMessagesBulkDelete(evChannel, []string{mine.ID, second.ID}, discordgo.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	bulk := e.next(t, sdk.TopicMessageBulkDelete).Payload.(sdk.MessageBulkDeleteEvent)
	if len(bulk.Refs) != 2 || bulk.Refs[0].MessageID != parseID(second.ID) || bulk.Refs[1].MessageID != parseID(mine.ID) ||
		!reflect.DeepEqual(bulk.BotMessageIDs, []uint64{parseID(mine.ID)}) {
		t.Fatalf("bulk = %+v", bulk)
	}

	// A join, a role added (member update with the role's name, and the
	// bot's audit-log entry), a leave with the roles at removal.
	if _, err := e.f.JoinGuild(evGuild, other); err != nil {
		t.Fatal(err)
	}
	join := e.next(t, sdk.TopicMemberJoin).Payload.(sdk.MemberJoinEvent)
	if join.Member.UserID != parseID(other) || join.AccountCreatedAt.IsZero() {
		t.Fatalf("join = %+v", join)
	}
	if err := e.s.GuildMemberRoleAdd(evGuild, other, evRoleB, discordgo.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	upd := e.next(t, sdk.TopicMemberUpdate).Payload.(sdk.MemberUpdateEvent)
	if !reflect.DeepEqual(upd.RolesAdded, []uint64{parseID(evRoleB)}) || upd.RoleNames[parseID(evRoleB)] != "beta" || len(upd.RolesRemoved) != 0 {
		t.Fatalf("member update = %+v", upd)
	}
	audit := e.next(t, sdk.TopicAuditLogEntry).Payload.(sdk.AuditLogEntryEvent)
	if audit.RawAction == "message_bulk_delete" { // the bot's bulk delete above
		audit = e.next(t, sdk.TopicAuditLogEntry).Payload.(sdk.AuditLogEntryEvent)
	}
	if audit.RawAction != "member_role_update" || audit.Action != sdk.AuditOther || !audit.ActorIsSelf || audit.TargetID != parseID(other) {
		t.Fatalf("audit = %+v", audit)
	}
	if err := e.f.LeaveGuild(evGuild, other); err != nil {
		t.Fatal(err)
	}
	rm := e.next(t, sdk.TopicMemberRemove).Payload.(sdk.MemberRemoveEvent)
	if !reflect.DeepEqual(rm.RolesAtRemoval, []uint64{parseID(evRoleB)}) || rm.UserID != parseID(other) || rm.DisplayName != "bob" {
		t.Fatalf("member remove = %+v", rm)
	}

	// A moderator's timeout as Discord reports it in the audit log.
	key := discordgo.AuditLogChangeKey("communication_disabled_until")
	action := discordgo.AuditLogActionMemberUpdate
	if err := e.f.Dispatch(evGuild, "GUILD_AUDIT_LOG_ENTRY_CREATE", discordgo.GuildAuditLogEntryCreate{GuildID: evGuild, AuditLogEntry: &discordgo.AuditLogEntry{
		ID: "700000000000000009", UserID: evUser, TargetID: other, ActionType: &action, Reason: "calm down",
		Changes: []*discordgo.AuditLogChange{{Key: &key, NewValue: "2030-01-01T00:00:00+00:00"}}}}); err != nil {
		t.Fatal(err)
	}
	to := e.next(t, sdk.TopicAuditLogEntry).Payload.(sdk.AuditLogEntryEvent)
	if to.Action != sdk.AuditTimeout || !to.Until.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) || to.ActorIsSelf || to.Reason == nil || *to.Reason != "calm down" {
		t.Fatalf("timeout audit = %+v", to)
	}
}

// TestEventsEndToEndInactiveGuild: a guild Kimi is not active in publishes
// nothing, though its members are cached.
func TestEventsEndToEndInactiveGuild(t *testing.T) {
	e := newEvE2E(t, func(f *fakediscord.Server) {
		f.AddGuild(fakediscord.GuildSpec{ID: evOff})
		f.AddChannel(fakediscord.ChannelSpec{ID: evChannel, GuildID: evOff})
		f.AddUser(discordgo.User{ID: evUser, Username: "ann"})
		f.AddMember(evOff, evUser)
		f.AddGuild(fakediscord.GuildSpec{ID: evGuild})
		f.AddChannel(fakediscord.ChannelSpec{ID: evThread, GuildID: evGuild})
		f.AddMember(evGuild, evUser)
	})
	e.waitMember(t, evOff, evUser)
	if _, err := e.f.PostMessage(evChannel, evUser, "ignored"); err != nil {
		t.Fatal(err)
	}
	// A message in the active guild afterwards: it is the first event the
	// module sees, so nothing of the inactive guild was published before it.
	if _, err := e.f.PostMessage(evThread, evUser, "seen"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-e.got:
		if m, ok := ev.Payload.(sdk.MessageEvent); !ok || m.Message.Content != "seen" {
			t.Fatalf("first event = %s %+v", ev.Topic, ev.Payload)
		}
	case <-time.After(evWait):
		t.Fatal("no event from the active guild")
	}
}
