package discord

import (
	"context"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
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
			if err := c.s.Status(ctx, "Thinking..."); err != nil {
				t.Fatal(err)
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
			if err := s.Status(ctx, "Thinking..."); err != nil {
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

// TestStopCommandCancels: /stop calls Cancel for the caller in the
// channel and answers ephemerally with the summary.
func TestStopCommandCancels(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	for _, tc := range []struct {
		running int
		want    string
	}{{0, stopNone}, {2, "🛑 " + stopDone(2)}} {
		w.rec.mu.Lock()
		w.rec.running, w.rec.cancels = tc.running, nil
		w.rec.mu.Unlock()
		id, err := w.f.RunCommand(w.general, w.bob, "stop")
		if err != nil {
			t.Fatal(err)
		}
		st := ixAnswered(t, w.f, id)
		if st.Response.Data == nil || st.Response.Data.Content != tc.want || st.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
			t.Fatalf("running %d: response = %+v", tc.running, st.Response)
		}
		w.rec.mu.Lock()
		got := w.rec.cancels
		w.rec.mu.Unlock()
		if len(got) != 1 || got[0] != [2]uint64{parseID(w.bob), parseID(w.general)} {
			t.Fatalf("cancels = %v", got)
		}
	}
}

// TestAskNotSyncedWithoutAssistant: without an attached assistant /ask
// and /stop are not registered, and an empty port attaches nothing.
func TestAskNotSyncedWithoutAssistant(t *testing.T) {
	w := newAsstWorld(t, asstOpts{noAssistant: true})
	for _, c := range w.f.Commands("") {
		if c.Name == "ask" || c.Name == "stop" {
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

// TestInvocationForms: the text invocation's separators, case and
// longest-name-first rule.
func TestInvocationForms(t *testing.T) {
	names := []string{"Kimi", "", "Kimi Bot"}
	for _, tc := range []struct {
		text, want string
		ok         bool
	}{
		{"hey kimi bot do x", "do x", true},
		{"hey-kimi:do it", "do it", true},
		{"Hi\tKIMI", "", true},
		{"kimi bot help", "help", true},
		{"Kimi;help with this", "help with this", true},
		{"kimi helpful", "", false},
		{"hello kimi", "", false},
		{"hey kimiko", "", false},
		{"hey", "", false},
	} {
		got, ok := invocation(tc.text, names)
		if got != tc.want || ok != tc.ok {
			t.Errorf("invocation(%q) = %q, %t; want %q, %t", tc.text, got, ok, tc.want, tc.ok)
		}
	}
}
