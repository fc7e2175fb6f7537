package discord

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
)

// Assistant tests: the real Bot against fakediscord over a real SQLite
// store and guild configuration, with a recording Assistant.

// asstCall is one Handle the recording assistant saw.
type asstCall struct {
	in assistant.Incoming
	s  assistant.Surface
}

// recAssistant records Handle and answers Cancel with running turns
// stopped, whose cleanup has ended unless unfinished; Ready is false while
// unready is set.
type recAssistant struct {
	mu         sync.Mutex
	calls      chan asstCall
	cancels    [][2]uint64
	running    int
	unfinished bool
	unready    bool
}

func (r *recAssistant) Ready() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.unready
}

func newRecAssistant() *recAssistant { return &recAssistant{calls: make(chan asstCall, 64)} }

func (r *recAssistant) Handle(_ context.Context, in assistant.Incoming, s assistant.Surface) {
	r.calls <- asstCall{in, s}
}

func (r *recAssistant) Cancel(userID, channelID uint64) assistant.Stopped {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancels = append(r.cancels, [2]uint64{userID, channelID})
	done := !r.unfinished
	return assistant.Stopped{N: r.running, Wait: func(context.Context) bool { return done }}
}

var _ Responder = (*recAssistant)(nil)

// next waits for the next Handle.
func (r *recAssistant) next(t *testing.T) asstCall {
	t.Helper()
	select {
	case c := <-r.calls:
		return c
	case <-time.After(connWait):
		t.Fatal("Handle was not called")
		return asstCall{}
	}
}

// asstAlice is alice's id (the DM setting lists it before the bot starts).
const asstAlice = "500000000000000001"

// asstWorld is the fake with its guilds and the bot.
type asstWorld struct {
	f   *fakediscord.Server
	st  *store.Store
	b   *Bot
	rec *recAssistant

	guild, general, other, thread, staffGuild, staffChan, offGuild, offChan, inactive, inactiveChan, muteGuild, muteChan string
	alice, bob, otherBot, role                                                                                           string
}

type asstOpts struct {
	messageContent bool
	dmUsers        string // the DM setting's user ids ("" DMs off)
	owner          string // KIMI_OWNER_USER_ID ("" unset)
	noAssistant    bool   // attach no assistant
	// name is the configured assistant name's source (nil: "Ava").
	name func() string
}

func newAsstWorld(t *testing.T, o asstOpts) *asstWorld {
	t.Helper()
	ctx := context.Background()
	w := &asstWorld{f: newFake(t, fakediscord.Options{}), rec: newRecAssistant()}
	f := w.f
	w.guild = f.AddGuild(fakediscord.GuildSpec{Name: "home"}).ID
	w.general = f.AddChannel(fakediscord.ChannelSpec{GuildID: w.guild, Name: "general"}).ID
	w.other = f.AddChannel(fakediscord.ChannelSpec{GuildID: w.guild, Name: "other"}).ID
	w.thread = f.AddChannel(fakediscord.ChannelSpec{GuildID: w.guild, Name: "a thread", Type: discordgo.ChannelTypeGuildPublicThread, ParentID: w.general}).ID
	w.role = f.AddRole(w.guild, discordgo.Role{Name: "crew"}).ID
	w.staffGuild = f.AddGuild(fakediscord.GuildSpec{Name: "staffy"}).ID
	w.staffChan = f.AddChannel(fakediscord.ChannelSpec{GuildID: w.staffGuild, Name: "s"}).ID
	w.offGuild = f.AddGuild(fakediscord.GuildSpec{Name: "off"}).ID
	w.offChan = f.AddChannel(fakediscord.ChannelSpec{GuildID: w.offGuild, Name: "o"}).ID
	w.inactive = f.AddGuild(fakediscord.GuildSpec{Name: "inactive"}).ID
	w.inactiveChan = f.AddChannel(fakediscord.ChannelSpec{GuildID: w.inactive, Name: "i"}).ID
	noAdmin := int64(discordgo.PermissionViewChannel)
	w.muteGuild = f.AddGuild(fakediscord.GuildSpec{Name: "mute", BotPermissions: &noAdmin}).ID
	w.muteChan = f.AddChannel(fakediscord.ChannelSpec{GuildID: w.muteGuild, Name: "m", Overwrites: []*discordgo.PermissionOverwrite{
		{ID: f.BotID(), Type: discordgo.PermissionOverwriteTypeMember, Deny: discordgo.PermissionSendMessages}}}).ID
	w.alice = f.AddUser(discordgo.User{ID: asstAlice, Username: "alice"}).ID
	w.bob = f.AddUser(discordgo.User{ID: "500000000000000002", Username: "bob"}).ID
	w.otherBot = f.AddUser(discordgo.User{Username: "robot", Bot: true}).ID
	for _, g := range []string{w.guild, w.staffGuild, w.offGuild, w.inactive, w.muteGuild} {
		f.AddMember(g, w.alice)
		f.AddMember(g, w.bob)
		f.AddMember(g, w.otherBot)
	}

	w.st = connStore(t)
	guilds, err := guildcfg.New(ctx, w.st, guildcfg.Options{Logger: slog.New(slog.DiscardHandler),
		Trust: guildcfg.TrustSettings{OwnerUserID: parseID(o.owner)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(guilds.Close)
	for g, doc := range map[string]string{
		w.guild:      "---\nbot_active: true\nallowed_channel_ids: [" + w.general + "]\n---\n",
		w.staffGuild: "---\nbot_active: true\nstaff_user_ids: [" + w.bob + "]\nassistant:\n  min_tier: staff\n  daily_tokens: 400000\n---\n",
		w.offGuild:   "---\nbot_active: true\nassistant:\n  enabled: false\n---\n",
		w.inactive:   "---\nbot_active: false\n---\n",
		w.muteGuild:  "---\nbot_active: true\n---\n",
	} {
		target := guildcfg.GuildTarget(parseID(g))
		cur, err := guilds.Document(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := guilds.Write(ctx, target, doc, cur.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI}); err != nil {
			t.Fatal(err)
		}
	}
	who := settings.Actor{Name: "test", IP: "127.0.0.1"}
	if err := settings.SaveDiscordToken(ctx, w.st, "Bot "+f.Token(), who); err != nil {
		t.Fatal(err)
	}
	if o.messageContent {
		if err := settings.SaveDiscordIntents(ctx, w.st, false, true, who); err != nil {
			t.Fatal(err)
		}
	}
	if o.dmUsers != "" {
		if _, err := settings.SaveAssistantBehaviour(ctx, w.st, settings.AssistantBehaviourUpdate{DMMode: settings.DMUsers, DMUserIDs: o.dmUsers,
			TurnDeadline: settings.DefaultTurnDeadline, IterationCap: settings.DefaultIterationCap}, who); err != nil {
			t.Fatal(err)
		}
	}
	w.b, err = New(Options{Store: w.st, Guilds: guilds, Logger: slog.New(slog.DiscardHandler), Transport: f.Transport(), Dialer: f.Dialer(),
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.b.Close() })
	h, err := host.New(ctx, host.Options{Store: w.st, Guilds: guilds, Logger: slog.New(slog.DiscardHandler), SelectionSet: true, Discord: w.b,
		CallbackTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	w.b.Attach(h)
	if !o.noAssistant {
		name := o.name
		if name == nil {
			name = func() string { return "Ava" }
		}
		w.b.AttachAssistant(ResponderPort{Assistant: w.rec, Policies: guilds, Name: name, Usage: newUsageReader(t, w.st, guilds, h)})
	}
	w.b.Start(ctx)
	connWaitFor(t, "the guilds", func() bool { st := w.b.Status(); return st.State == StateConnected && len(st.Guilds) == 5 })
	if o.noAssistant {
		connWaitFor(t, "the command sync", func() bool { return w.b.ix.fullSyncs.Load() > 0 })
		return w
	}
	connWaitFor(t, "/ask synced", func() bool {
		return slices.ContainsFunc(f.Commands(""), func(c *discordgo.ApplicationCommand) bool { return c.Name == "ask" })
	})
	return w
}

// sentinel posts a mention in general and returns its Handle: every
// message posted before it was taken first (the gateway's order).
func (w *asstWorld) sentinel(t *testing.T) asstCall {
	t.Helper()
	m, err := w.f.PostMessage(w.general, w.alice, "<@"+w.f.BotID()+"> sentinel")
	if err != nil {
		t.Fatal(err)
	}
	c := w.rec.next(t)
	if c.in.MessageID != parseID(m.ID) {
		t.Fatalf("Handle got %+v before the sentinel %s", c.in, m.ID)
	}
	return c
}

func (w *asstWorld) mention() string { return "<@" + w.f.BotID() + ">" }

// answer posts a mention and delivers an answer through the surface
// Handle got; it returns the answer's message.
func (w *asstWorld) answer(t *testing.T) *discordgo.Message {
	t.Helper()
	if _, err := w.f.PostMessage(w.general, w.alice, w.mention()+" first"); err != nil {
		t.Fatal(err)
	}
	c := w.rec.next(t)
	id, err := c.s.Deliver(context.Background(), "the answer", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range w.f.Messages(w.general) {
		if m.ID == idString(id) {
			return m
		}
	}
	t.Fatalf("delivered message %d not in the channel", id)
	return nil
}

func TestAssistantTriggersWithMessageContentOff(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	ans := w.answer(t)
	cases := []struct {
		name     string
		post     func() (*discordgo.Message, error)
		wantText string // "" : Handle not called
		replyTo  bool
	}{
		{"a mention carries its text without the intent", func() (*discordgo.Message, error) {
			return w.f.PostMessage(w.general, w.alice, w.mention()+"  what's up")
		}, "what's up", false},
		{"the <@!id> form", func() (*discordgo.Message, error) {
			return w.f.PostMessage(w.general, w.alice, "<@!"+w.f.BotID()+"> nick form")
		}, "nick form", false},
		{"a pinged reply to Kimi's answer", func() (*discordgo.Message, error) {
			return w.f.PostReply(w.general, w.alice, "and then?", ans.ID)
		}, "and then?", true},
		{"an unpinged reply arrives blank: nothing happens", func() (*discordgo.Message, error) {
			return w.f.PostReplyNoPing(w.general, w.alice, "and then?", ans.ID)
		}, "", false},
		{"a text invocation needs the intent", func() (*discordgo.Message, error) {
			return w.f.PostMessage(w.general, w.alice, "hey Kimi what time is it")
		}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.post()
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantText == "" {
				w.sentinel(t)
				return
			}
			c := w.rec.next(t)
			if c.in.MessageID != parseID(m.ID) || c.in.Text != tc.wantText || c.in.Kind != assistant.KindMessage || c.in.UserID != parseID(w.alice) ||
				c.in.Place != (assistant.Place{GuildID: parseID(w.guild), ChannelID: parseID(w.general)}) || c.in.GuildName != "home" || c.in.ChannelName != "general" {
				t.Fatalf("incoming = %+v", c.in)
			}
			if tc.replyTo && (c.in.ReplyToID != parseID(ans.ID) || c.in.ReplyTo == nil || !c.in.ReplyTo.FromBot || c.in.ReplyTo.Text != "the answer") {
				t.Fatalf("reply = %d %+v", c.in.ReplyToID, c.in.ReplyTo)
			}
			if c.in.ContinuationOnly {
				t.Fatal("a mention (a pinged reply too) is a trigger of its own, not ContinuationOnly")
			}
		})
	}
}

func TestAssistantTriggersWithMessageContentOn(t *testing.T) {
	w := newAsstWorld(t, asstOpts{messageContent: true})
	ans := w.answer(t)
	cases := []struct {
		name, content string
		replyTo       string
		wantText      string
	}{
		{"hey <configured name>", "hey Ava, what time is it", "", "what time is it"},
		{"hi <bot user's name> with ! and case", "HI KIMI! hello", "", "hello"},
		{"<name> help keeps help", "ava: help me out", "", "help me out"},
		{"a bare invocation", "hey kimi", "", ""},
		{"help not after the name", "kimi, what help", "", ""},
		{"a role mention is no mention", "<@&" + w.role + "> kimi", "", ""},
		{"an unpinged reply continues", "more please", ans.ID, "more please"},
		{"a name inside a word is not one", "hey kimiko hi", "", ""},
		{"no trigger", "just chatting", "", ""},
		{"@everyone is no mention", "@everyone look", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m *discordgo.Message
			var err error
			if tc.replyTo != "" {
				m, err = w.f.PostReplyNoPing(w.general, w.alice, tc.content, tc.replyTo)
			} else {
				m, err = w.f.PostMessage(w.general, w.alice, tc.content)
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantText == "" {
				w.sentinel(t)
				return
			}
			c := w.rec.next(t)
			if c.in.MessageID != parseID(m.ID) || c.in.Text != tc.wantText {
				t.Fatalf("incoming = %+v, want text %q", c.in, tc.wantText)
			}
			if tc.replyTo != "" && c.in.ReplyToID != parseID(tc.replyTo) {
				t.Fatalf("ReplyToID = %d", c.in.ReplyToID)
			}
			// Only an unpinged reply is left for the assistant's routing to
			// decide (a reply to a module's post is not addressed to it).
			if want := tc.replyTo != ""; c.in.ContinuationOnly != want {
				t.Fatalf("ContinuationOnly = %v, want %v", c.in.ContinuationOnly, want)
			}
		})
	}
}

// TestAssistantNameIsReadPerMessage: the configured name is read on every
// message, so a rename answers to the new name at once (and no longer to
// the old one), and no name leaves the bot user's own names.
func TestAssistantNameIsReadPerMessage(t *testing.T) {
	var name atomic.Pointer[string]
	set := func(n string) { name.Store(&n) }
	set("Ava")
	w := newAsstWorld(t, asstOpts{messageContent: true, name: func() string { return *name.Load() }})
	for _, tc := range []struct {
		name, content, want string
	}{
		{"Ava", "hey ava, one", "one"},
		{"Bo", "hey ava, two", ""},
		{"Bo", "hi bo: three", "three"},
		{"", "hi bo: four", ""},
		{"", "hey kimi five", "five"},
	} {
		set(tc.name)
		m, err := w.f.PostMessage(w.general, w.alice, tc.content)
		if err != nil {
			t.Fatal(err)
		}
		if tc.want == "" {
			w.sentinel(t)
			continue
		}
		if c := w.rec.next(t); c.in.MessageID != parseID(m.ID) || c.in.Text != tc.want {
			t.Fatalf("name %q, %q: incoming %+v, want text %q", tc.name, tc.content, c.in, tc.want)
		}
	}
}

// TestAssistantReplyContextNamesItsAuthor: the replied-to message is
// quoted as Kimi's own (FromBot) only when Kimi wrote it; another bot's
// (or a webhook's) message is quoted under its own name, not passed off
// to the model as something Kimi said.
func TestAssistantReplyContextNamesItsAuthor(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	ans := w.answer(t)
	botMsg, err := w.f.PostMessage(w.general, w.otherBot, "beep: the build is red")
	if err != nil {
		t.Fatal(err)
	}
	bobMsg, err := w.f.PostMessage(w.general, w.bob, "lunch?")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, replyTo string
		fromBot       bool
		author        string
	}{
		{name: "Kimi's answer", replyTo: ans.ID, fromBot: true},
		{name: "another bot's message", replyTo: botMsg.ID, author: "robot"},
		{name: "a member's message", replyTo: bobMsg.ID, author: "bob"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := w.f.PostReplyNoPing(w.general, w.alice, w.mention()+" what does it mean?", tc.replyTo)
			if err != nil {
				t.Fatal(err)
			}
			c := w.rec.next(t)
			q := c.in.ReplyTo
			if c.in.MessageID != parseID(m.ID) || q == nil || c.in.ReplyToID != parseID(tc.replyTo) {
				t.Fatalf("incoming = %+v", c.in)
			}
			if q.FromBot != tc.fromBot || (!tc.fromBot && q.DisplayName != tc.author) {
				t.Fatalf("quoted = %+v, want FromBot %v, author %q", q, tc.fromBot, tc.author)
			}
		})
	}
}

// TestAssistantStopWordInAnUnpingedReply: an unpinged reply is no trigger
// of its own, so a stop word in one stops the author's running work but,
// with nothing running, gets no "couldn't find" answer (a member's
// "cancel" under one of Kimi's posts is not addressed to the assistant)
// and is not handed on as a question either.
func TestAssistantStopWordInAnUnpingedReply(t *testing.T) {
	w := newAsstWorld(t, asstOpts{messageContent: true})
	post := w.answer(t)
	reply, err := w.f.PostReplyNoPing(w.general, w.bob, "cancel", post.ID)
	if err != nil {
		t.Fatal(err)
	}
	w.sentinel(t)
	// A later STOP that is answered: the reply's answer, had there been
	// one, was sent first.
	ab, err := w.f.PostMessage(w.general, w.bob, w.mention()+" abort")
	if err != nil {
		t.Fatal(err)
	}
	answered := func(id string) bool {
		return slices.ContainsFunc(w.f.Messages(w.general), func(x *discordgo.Message) bool {
			return x.Content == assistant.StopNoneText && x.MessageReference != nil && x.MessageReference.MessageID == id
		})
	}
	connWaitFor(t, "the triggered stop's answer", func() bool { return answered(ab.ID) })
	if answered(reply.ID) {
		t.Fatal("an unpinged \"cancel\" with nothing running was answered")
	}
	// With work running, the same reply stops it.
	w.rec.mu.Lock()
	w.rec.running = 1
	w.rec.mu.Unlock()
	stop, err := w.f.PostReplyNoPing(w.general, w.bob, "cancel", post.ID)
	if err != nil {
		t.Fatal(err)
	}
	connWaitFor(t, "the stop's summary", func() bool {
		return slices.ContainsFunc(w.f.Messages(w.general), func(x *discordgo.Message) bool {
			return x.Content == (assistant.Stopped{N: 1, Wait: func(context.Context) bool { return true }}).Reply(context.Background()) && x.MessageReference != nil && x.MessageReference.MessageID == stop.ID
		})
	})
}
