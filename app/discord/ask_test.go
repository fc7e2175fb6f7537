package discord

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/modules/sdk"
)

func askOpt(name string, v any) *discordgo.ApplicationCommandInteractionDataOption {
	t := discordgo.ApplicationCommandOptionString
	if _, ok := v.(bool); ok {
		t = discordgo.ApplicationCommandOptionBoolean
	}
	return &discordgo.ApplicationCommandInteractionDataOption{Name: name, Type: t, Value: v}
}

// TestAskDefersAndAnswers: /ask defers (ephemeral when private), hands the
// question to the assistant as KindAsk, and its surface edits the
// deferred response then sends follow-ups, allowed mentions the caller.
func TestAskDefersAndAnswers(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	ctx := context.Background()
	for _, private := range []bool{false, true} {
		name := "public"
		if private {
			name = "private"
		}
		t.Run(name, func(t *testing.T) {
			opts := []*discordgo.ApplicationCommandInteractionDataOption{askOpt("question", "  who has the most kudos?  ")}
			if private {
				opts = append(opts, askOpt("private", true))
			}
			id, err := w.f.RunCommand(w.general, w.alice, "ask", opts...)
			if err != nil {
				t.Fatal(err)
			}
			c := w.rec.next(t)
			if c.in.Kind != assistant.KindAsk || c.in.MessageID != parseID(id) || c.in.Text != "who has the most kudos?" || c.in.Private != private ||
				c.in.UserID != parseID(w.alice) || c.in.Place != (assistant.Place{GuildID: parseID(w.guild), ChannelID: parseID(w.general)}) {
				t.Fatalf("incoming = %+v", c.in)
			}
			st := ixAnswered(t, w.f, id)
			if st.Response.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource {
				t.Fatalf("first response = %+v, want a deferral", st.Response)
			}
			ephemeral := st.Response.Data != nil && st.Response.Data.Flags&discordgo.MessageFlagsEphemeral != 0
			if ephemeral != private {
				t.Fatalf("deferral ephemeral = %t, want %t", ephemeral, private)
			}
			if id, err := c.s.Status(ctx, "Thinking..."); err != nil || id != 0 {
				t.Fatalf("Status = %d, %v; want no message of its own (0)", id, err)
			}
			if got := w.f.Interaction(id).Original; got == nil || got.Content != "Thinking..." {
				t.Fatalf("original after Status = %+v", got)
			}
			if _, err := c.s.Deliver(ctx, "bo has 3 <@"+w.alice+"> <@"+w.bob+"> @everyone", true); err != nil {
				t.Fatal(err)
			}
			if _, err := c.s.Deliver(ctx, "(2/2)", false); err != nil {
				t.Fatal(err)
			}
			st = w.f.Interaction(id)
			if st.Original == nil || !strings.HasPrefix(st.Original.Content, "bo has 3") || st.Original.MentionEveryone ||
				len(st.Original.Mentions) != 1 || st.Original.Mentions[0].ID != w.alice {
				t.Fatalf("original = %+v, want the answer mentioning alice only", st.Original)
			}
			if len(st.Followups) != 1 || st.Followups[0].Content != "(2/2)" || (st.Followups[0].Flags&discordgo.MessageFlagsEphemeral != 0) != private {
				t.Fatalf("follow-ups = %+v", st.Followups)
			}
		})
	}
	t.Run("no model provider: unavailable at once, nothing handled", func(t *testing.T) {
		// Handle would drop it (a trigger costs nothing until a provider
		// is configured), leaving a deferred "thinking" nothing answers.
		w.rec.mu.Lock()
		w.rec.unready = true
		w.rec.mu.Unlock()
		defer func() {
			w.rec.mu.Lock()
			w.rec.unready = false
			w.rec.mu.Unlock()
		}()
		id, err := w.f.RunCommand(w.general, w.alice, "ask", askOpt("question", "hi"))
		if err != nil {
			t.Fatal(err)
		}
		st := ixAnswered(t, w.f, id)
		if st.Response.Type != discordgo.InteractionResponseChannelMessageWithSource || st.Response.Data == nil ||
			st.Response.Data.Content != replyUnavailable || st.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
			t.Fatalf("response = %+v, want the ephemeral unavailable reply", st.Response)
		}
		select {
		case c := <-w.rec.calls:
			t.Fatalf("Handle got %+v", c.in)
		default:
		}
	})
	t.Run("refused below min_tier, nothing handled", func(t *testing.T) {
		id, err := w.f.RunCommand(w.staffChan, w.alice, "ask", askOpt("question", "hi"))
		if err != nil {
			t.Fatal(err)
		}
		st := ixAnswered(t, w.f, id)
		if st.Response.Data == nil || st.Response.Data.Content != replyNotAllowed || st.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
			t.Fatalf("response = %+v", st.Response)
		}
		w.sentinel(t)
	})
}

// TestAskEndingWithoutAnAnswer: a /ask turn that ends before any answer
// (stopped, or failed before it could run) replaces its "Thinking..."
// status with the ending's emoji, which would otherwise stand for good;
// once an answer is delivered the ending's reactions leave it alone.
func TestAskEndingWithoutAnAnswer(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	ctx := context.Background()
	cases := []struct {
		name    string
		deliver bool
		emoji   string
		want    string
	}{
		{name: "stopped", emoji: assistant.ReactStopped, want: assistant.ReactStopped},
		{name: "failed before running", emoji: assistant.ReactFailed, want: assistant.ReactFailed},
		{name: "the working reaction changes nothing", emoji: assistant.ReactWorking, want: "Thinking..."},
		{name: "answered, then done", deliver: true, emoji: assistant.ReactDone, want: "the answer"},
		{name: "answered, then stopped", deliver: true, emoji: assistant.ReactStopped, want: "the answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, err := w.f.RunCommand(w.general, w.alice, "ask", askOpt("question", "hi"))
			if err != nil {
				t.Fatal(err)
			}
			s := w.rec.next(t).s
			if _, err := s.Status(ctx, "Thinking..."); err != nil {
				t.Fatal(err)
			}
			if c.deliver {
				if _, err := s.Deliver(ctx, "the answer", true); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.React(ctx, c.emoji); err != nil {
				t.Fatal(err)
			}
			if err := s.Unreact(ctx, assistant.ReactWorking); err != nil {
				t.Fatal(err)
			}
			if got := w.f.Interaction(id).Original; got == nil || got.Content != c.want {
				t.Fatalf("original = %+v, want %q", got, c.want)
			}
		})
	}
}

// TestAskStoppedShowsStop: an /ask turn stopped before its answer shows
// 🛑 in place of its status; once an answer chunk is out, 🛑 leaves it.
func TestAskStoppedShowsStop(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		deliver bool
		want    string
	}{
		{"stopped before the answer", false, "🛑"},
		{"stopped after the first chunk", true, "the first chunk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := w.f.RunCommand(w.general, w.alice, "ask", askOpt("question", "long one"))
			if err != nil {
				t.Fatal(err)
			}
			c := w.rec.next(t)
			ixAnswered(t, w.f, id)
			if _, err := c.s.Status(ctx, "Thinking..."); err != nil {
				t.Fatal(err)
			}
			if tc.deliver {
				if _, err := c.s.Deliver(ctx, "the first chunk", true); err != nil {
					t.Fatal(err)
				}
			}
			for _, e := range []string{"⏳", "🛑", "✅"} {
				if err := c.s.React(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.s.Status(ctx, "Still thinking… (30s)"); err != nil {
				t.Fatal(err)
			}
			if got := w.f.Interaction(id).Original; got == nil || got.Content != tc.want {
				t.Fatalf("original = %+v, want %q", got, tc.want)
			}
		})
	}
}

// TestStopTextsOnBothLanes: a stop message and /stop cancel the caller's
// work in the channel with the same texts, the original's exactly (one
// definition, assistant.Stopped.Reply): 🛑 as the stop message's reaction,
// at the start of /stop's ephemeral answer (which waits for the cleanup
// behind a deferral).
func TestStopTextsOnBothLanes(t *testing.T) {
	w := newAsstWorld(t, asstOpts{messageContent: true})
	for _, tc := range []struct {
		name       string
		running    int
		unfinished bool
		want       string
	}{
		{"nothing running", 0, false, "I couldn't find active work to stop here."},
		{"one stopped, cleanup complete", 1, false, "Stopped 1 active response. Cleanup is complete."},
		{"two stopped, cleanup complete", 2, false, "Stopped 2 active responses. Cleanup is complete."},
		{"one stopped, cleanup still running", 1, true, "Stopped 1 active response. Cleanup is still finishing in the background."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.rec.mu.Lock()
			w.rec.running, w.rec.unfinished, w.rec.cancels = tc.running, tc.unfinished, nil
			w.rec.mu.Unlock()

			// The message lane ("@Kimi stop" is answered with nothing running too).
			m, err := w.f.PostMessage(w.general, w.bob, w.mention()+" stop")
			if err != nil {
				t.Fatal(err)
			}
			connWaitFor(t, "the stop message's answer", func() bool {
				return slices.ContainsFunc(w.f.Messages(w.general), func(x *discordgo.Message) bool {
					return x.MessageReference != nil && x.MessageReference.MessageID == m.ID
				})
			})
			var answer *discordgo.Message
			for _, x := range w.f.Messages(w.general) {
				if x.MessageReference != nil && x.MessageReference.MessageID == m.ID {
					answer = x
				}
			}
			if answer.Content != tc.want || len(answer.Mentions) != 0 {
				t.Errorf("stop message answered %q (mentions %v), want %q", answer.Content, answer.Mentions, tc.want)
			}
			if tc.running > 0 {
				connWaitFor(t, "🛑 on the stop message", func() bool {
					for _, x := range w.f.Messages(w.general) {
						if x.ID == m.ID {
							return slices.ContainsFunc(x.Reactions, func(r *discordgo.MessageReactions) bool { return r.Me && r.Emoji.Name == "🛑" })
						}
					}
					return false
				})
			}

			// /stop.
			id, err := w.f.RunCommand(w.general, w.bob, "stop")
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if tc.running > 0 {
				want = "🛑 " + tc.want
			}
			var got string
			ixEventually(t, "/stop answered", func() bool {
				st := w.f.Interaction(id)
				switch {
				case st == nil || st.Response == nil:
					return false
				case st.Response.Type == discordgo.InteractionResponseChannelMessageWithSource:
					got = st.Response.Data.Content
				case st.Original != nil:
					got = st.Original.Content
				}
				return got != ""
			})
			if st := w.f.Interaction(id); got != want || st.Response.Data == nil || st.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
				t.Errorf("/stop answered %q (response %+v), want %q, ephemeral", got, st.Response, want)
			}
			w.rec.mu.Lock()
			cancels := slices.Clone(w.rec.cancels)
			w.rec.mu.Unlock()
			who := [2]uint64{parseID(w.bob), parseID(w.general)}
			if len(cancels) != 2 || cancels[0] != who || cancels[1] != who {
				t.Fatalf("cancels = %v, want bob's in general twice", cancels)
			}
		})
	}
}

// TestAskNotSyncedWithoutAssistant: without an attached assistant /ask,
// /stop and /forget are not registered, and an empty port attaches nothing.
func TestAskNotSyncedWithoutAssistant(t *testing.T) {
	w := newAsstWorld(t, asstOpts{noAssistant: true})
	for _, c := range w.f.Commands("") {
		if c.Name == "ask" || c.Name == "stop" || c.Name == "forget" {
			t.Fatalf("/%s synced without an assistant", c.Name)
		}
	}
	w.b.AttachAssistant(ResponderPort{Assistant: w.rec})
	if w.b.ix.assistantPort() != nil {
		t.Fatal("a port without policies attached an assistant")
	}
}

// TestIntentsNameTheAssistant: /discord's Message Content row says what
// the assistant needs it for; the DM intent is added only when asked.
func TestIntentsNameTheAssistant(t *testing.T) {
	for _, in := range PrivilegedIntents() {
		if in.Key == "message_content" && (!strings.Contains(in.Enables, "reply continuation") || !strings.Contains(in.Enables, "text invocation")) {
			t.Errorf("message content row = %q", in.Enables)
		}
	}
	for _, tc := range []struct {
		in   Intents
		want bool
	}{{Intents{}, false}, {Intents{DirectMessages: true}, true}, {Intents{MessageContent: true}, false}} {
		if got := tc.in.Gateway()&discordgo.IntentDirectMessages != 0; got != tc.want {
			t.Errorf("%+v: DM intent %t, want %t", tc.in, got, tc.want)
		}
	}
}

// TestInvocationForms: the text invocation's separators (whitespace or
// ,!:;-), case, and the names — the configured assistant name first, then
// the bot user's global and user names — tried longest first, so an
// overlapping longer name wins and a name inside a word is none.
func TestInvocationForms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string // configured, global name, username
		text  string
		want  string
		ok    bool
	}{
		{"hey and the longer bot name", []string{"", "Kimi", "Kimi Bot"}, "hey kimi bot do x", "do x", true},
		{"- and : separators", []string{"", "Kimi", "Kimi Bot"}, "hey-kimi:do it", "do it", true},
		{"a tab, upper case, nothing after", []string{"", "Kimi", "Kimi Bot"}, "Hi\tKIMI", "", true},
		{"<name> help keeps help", []string{"", "Kimi", "Kimi Bot"}, "kimi bot help", "help", true},
		{"; before help", []string{"", "Kimi", "Kimi Bot"}, "Kimi;help with this", "help with this", true},
		{"help inside a word", []string{"", "Kimi", "Kimi Bot"}, "kimi helpful", "", false},
		{"hello is not hey", []string{"", "Kimi", "Kimi Bot"}, "hello kimi", "", false},
		{"a name inside a word", []string{"", "Kimi", "Kimi Bot"}, "hey kimiko", "", false},
		{"hey alone", []string{"", "Kimi", "Kimi Bot"}, "hey", "", false},

		{"the configured name", []string{"Ava", "Kimi", "kimi"}, "hey ava, what's up", "what's up", true},
		{"the configured name, ! and upper case", []string{"Ava", "Kimi", "kimi"}, "HI AVA! tell me", "tell me", true},
		{"the bot's name still works beside it", []string{"Ava", "Kimi", "kimi"}, "hi kimi; hello", "hello", true},
		{"configured <name> help", []string{"Ava", "Kimi", "kimi"}, "Ava - help me", "help me", true},
		{"a longer configured name wins over the bot's", []string{"Kimi Helper", "Kimi", "kimi"}, "hey kimi helper, list kudos", "list kudos", true},
		{"the longer configured name with help", []string{"Kimi Helper", "Kimi", "kimi"}, "kimi helper help", "help", true},
		{"a shorter bot name where the longer does not match", []string{"Kimi Helper", "Kimi", "kimi"}, "hey kimi, helper?", "helper?", true},
		{"a longer bot name wins over a shorter configured one", []string{"Ava", "Ava Bot", "avabot"}, "hey ava bot: go", "go", true},
		{"a configured name with punctuation is literal", []string{"K.I.M.I", "Kimi", "kimi"}, "hey k.i.m.i go", "go", true},
		{"its dots are not wildcards", []string{"K.I.M.I", "Kimi", "kimi"}, "hey kxixmxi go", "", false},
		{"the configured name inside a word", []string{"Ava", "Kimi", "kimi"}, "hey avalanche", "", false},
		{"another name", []string{"Ava", "Kimi", "kimi"}, "hey bob, hi", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := invocation(tc.text, tc.names)
			if got != tc.want || ok != tc.ok {
				t.Errorf("invocation(%q, %q) = %q, %t; want %q, %t", tc.text, tc.names, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestCoreCommandContexts: /ask and /stop are registered for guilds only
// (contexts [GUILD] in the PUT the fake receives at command sync), /forget
// and /usage for guilds and the DM with the bot ([GUILD, BOT_DM]); a
// module's command keeps Discord's default (no contexts sent); the list
// Discord returns hashes as Kimi's, so a reconnect syncs nothing; and the
// fake offers /forget in a DM, not /ask.
func TestCoreCommandContexts(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	// The commands are synced once the connection is up, not before the
	// world is returned.
	connWaitFor(t, "the global PUT recorded", func() bool { return len(w.f.RequestsTo(globalPUT)) > 0 })
	puts := w.f.RequestsTo(globalPUT)
	if len(puts) != 1 {
		t.Fatalf("%d global PUTs, want 1", len(puts))
	}
	var sent []struct {
		Name     string          `json:"name"`
		Contexts json.RawMessage `json:"contexts"`
	}
	if err := json.Unmarshal(puts[0].Body, &sent); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range sent {
		got[c.Name] = string(c.Contexts)
	}
	want := map[string]string{"ask": "[0]", "stop": "[0]", "forget": "[0,1]", "usage": "[0,1]"}
	for name, ctxs := range want {
		if got[name] != ctxs {
			t.Errorf("/%s sent with contexts %s, want %s", name, got[name], ctxs)
		}
	}
	for _, c := range w.f.Commands("") {
		if ctxs, core := want[c.Name]; core {
			var reg []discordgo.InteractionContextType
			if c.Contexts != nil {
				reg = *c.Contexts
			}
			if b, _ := json.Marshal(reg); string(b) != ctxs {
				t.Errorf("/%s registered with contexts %s, want %s", c.Name, b, ctxs)
			}
		}
	}
	syncs := w.b.ix.fullSyncs.Load()
	w.b.Reconnect()
	connWaitFor(t, "the next READY's sync", func() bool { return w.b.ix.fullSyncs.Load() > syncs })
	if n := len(w.f.RequestsTo(globalPUT)); n != 1 {
		t.Fatalf("%d global PUTs after a reconnect, want 1 (the registered list matches)", n)
	}
	dm, err := w.f.OpenDM(w.alice)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.f.RunCommand(dm, w.alice, "ask", askOpt("question", "hi")); !errors.Is(err, fakediscord.ErrNotInContext) {
		t.Errorf("/ask in a DM: %v, want ErrNotInContext", err)
	}
	if _, err := w.f.RunCommand(dm, w.alice, "forget"); err != nil {
		t.Errorf("/forget in a DM: %v", err)
	}

	out := commandsOut(append([]sdk.CommandSpec{{Name: "kudos", Description: "k"}, {Name: "give", Group: "tag", Description: "g"}}, coreCommandSpecs()...))
	for _, c := range out {
		b, _ := json.Marshal(c.Contexts)
		if ctxs, core := want[c.Name]; (core && string(b) != ctxs) || (!core && c.Contexts != nil) {
			t.Errorf("/%s: contexts %s", c.Name, b)
		}
	}
}

// TestRemoteContextsMatchKimis: a listed command's contexts hash as Kimi
// sent them: Discord's default (every context) as none.
func TestRemoteContextsMatchKimis(t *testing.T) {
	type ctxs = []discordgo.InteractionContextType
	for _, tc := range []struct {
		name     string
		in, want ctxs
	}{
		{"none", nil, nil},
		{"every context is the default", ctxs{0, 1, 2}, nil},
		{"every context in another order", ctxs{2, 0, 1}, nil},
		{"guild only stays", ctxs{0}, ctxs{0}},
		{"guild and bot DM stays", ctxs{0, 1}, ctxs{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := remoteContexts(tc.in); !slices.Equal(got, tc.want) || (tc.want == nil) != (got == nil) {
				t.Errorf("remoteContexts(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}
