package discord

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/settings"
)

// TestAssistantGates: a gated message never reaches Handle (each case is
// followed by a sentinel mention that must be the next Handle).
func TestAssistantGates(t *testing.T) {
	w := newAsstWorld(t, asstOpts{messageContent: true})
	cases := []struct {
		name, channel, user, content string
	}{
		{"another bot", w.general, w.otherBot, w.mention() + " hi"},
		{"a channel outside allowed_channel_ids", w.other, w.alice, w.mention() + " hi"},
		{"below the guild's min_tier", w.staffChan, w.alice, w.mention() + " hi"},
		{"the assistant disabled in the guild", w.offChan, w.alice, w.mention() + " hi"},
		{"an inactive guild", w.inactiveChan, w.alice, w.mention() + " hi"},
		{"Kimi cannot send there", w.muteChan, w.alice, w.mention() + " hi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := w.f.PostMessage(tc.channel, tc.user, tc.content); err != nil {
				t.Fatal(err)
			}
			w.sentinel(t)
		})
	}
	t.Run("a thread is allowed by its parent", func(t *testing.T) {
		m, err := w.f.PostMessage(w.thread, w.bob, w.mention()+" in a thread")
		if err != nil {
			t.Fatal(err)
		}
		c := w.rec.next(t)
		if c.in.MessageID != parseID(m.ID) || c.in.Place != (assistant.Place{GuildID: parseID(w.guild), ChannelID: parseID(w.thread), ParentID: parseID(w.general)}) {
			t.Fatalf("incoming = %+v", c.in)
		}
	})
	t.Run("a DM is dropped silently when DMs are off", func(t *testing.T) {
		if _, err := w.f.PostDM(w.alice, "hello?"); err != nil {
			t.Fatal(err)
		}
		w.sentinel(t)
		if ch := w.f.DMChannel(w.alice); len(w.f.Messages(ch)) != 1 || len(w.f.Messages(ch)[0].Reactions) != 0 {
			t.Fatalf("DM channel = %+v", w.f.Messages(ch))
		}
	})
}

// TestAssistantDMsWhenAllowed: the setting adds the DM intent; a listed
// user's DM needs no trigger, a stranger's is dropped.
func TestAssistantDMsWhenAllowed(t *testing.T) {
	w := newAsstWorldDM(t)
	if w.b.requestedIntents().Gateway()&discordgo.IntentDirectMessages == 0 {
		t.Fatal("the DM intent was not identified")
	}
	if _, err := w.f.PostDM(w.bob, "stranger"); err != nil {
		t.Fatal(err)
	}
	m, err := w.f.PostDM(w.alice, "what is up")
	if err != nil {
		t.Fatal(err)
	}
	c := w.rec.next(t)
	if c.in.MessageID != parseID(m.ID) || c.in.Text != "what is up" || c.in.Place.GuildID != 0 || c.in.Place.DMUserID != parseID(w.alice) || c.in.Place.ChannelID != parseID(m.ChannelID) {
		t.Fatalf("incoming = %+v (the stranger's DM must not come first)", c.in)
	}
	// "stop" in a DM with nothing running is a question; with work running, a STOP.
	if _, err := w.f.PostDM(w.alice, "stop"); err != nil {
		t.Fatal(err)
	}
	if c := w.rec.next(t); c.in.Text != "stop" {
		t.Fatalf("incoming = %+v", c.in)
	}
	w.rec.mu.Lock()
	w.rec.running = 1
	w.rec.mu.Unlock()
	if _, err := w.f.PostDM(w.alice, "stop"); err != nil {
		t.Fatal(err)
	}
	connWaitFor(t, "the DM stop's summary", func() bool {
		return slices.ContainsFunc(w.f.Messages(m.ChannelID), func(x *discordgo.Message) bool { return x.Content == "Stopped 1 active response. Cleanup is complete." })
	})
}

func newAsstWorldDM(t *testing.T) *asstWorld {
	t.Helper()
	return newAsstWorld(t, asstOpts{dmUsers: asstAlice})
}

// TestAssistantMessageSurface: the Surface's calls reach the fake —
// reactions, the status message (mentions off) edited then deleted, the
// answer a reply with allowed mentions the caller only, Busy.
func TestAssistantMessageSurface(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	ctx := context.Background()
	trig, err := w.f.PostMessage(w.general, w.alice, w.mention()+" go")
	if err != nil {
		t.Fatal(err)
	}
	s := w.rec.next(t).s
	if err := s.React(ctx, "⏳"); err != nil {
		t.Fatal(err)
	}
	sent, err := s.Status(ctx, "Thinking... @everyone <@"+w.bob+">")
	if err != nil {
		t.Fatal(err)
	}
	edited, err := s.Status(ctx, "Giving kudos...")
	if err != nil {
		t.Fatal(err)
	}
	msgs := w.f.Messages(w.general)
	status := msgs[len(msgs)-1]
	if status.Content != "Giving kudos..." || status.MessageReference == nil || status.MessageReference.MessageID != trig.ID || len(status.Mentions) != 0 {
		t.Fatalf("status = %+v", status)
	}
	if idString(sent) != status.ID || edited != sent {
		t.Fatalf("Status reported %d, then %d; the status message is %s", sent, edited, status.ID)
	}
	id, err := s.Deliver(ctx, "done <@"+w.alice+"> <@"+w.bob+"> @everyone <@&"+w.role+">", true)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := s.Deliver(ctx, "(2/2)", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ClearStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Unreact(ctx, "⏳"); err != nil {
		t.Fatal(err)
	}
	if err := s.React(ctx, "✅"); err != nil {
		t.Fatal(err)
	}
	if err := s.Busy(ctx, "I'm handling as many requests as I can right now. Please try again in a moment."); err != nil {
		t.Fatal(err)
	}
	byID := map[string]*discordgo.Message{}
	for _, m := range w.f.Messages(w.general) {
		byID[m.ID] = m
	}
	if byID[status.ID] != nil {
		t.Error("the status message was not deleted")
	}
	ans := byID[idString(id)]
	if ans == nil || ans.MessageReference == nil || ans.MessageReference.MessageID != trig.ID || ans.MentionEveryone || len(ans.MentionRoles) != 0 ||
		len(ans.Mentions) != 1 || ans.Mentions[0].ID != w.alice {
		t.Fatalf("answer = %+v, want a reply mentioning alice only", ans)
	}
	if second := byID[idString(id2)]; second == nil || second.MessageReference != nil {
		t.Fatalf("second chunk = %+v", second)
	}
	var reactions []string
	for _, r := range byID[trig.ID].Reactions {
		if r.Me {
			reactions = append(reactions, r.Emoji.Name)
		}
	}
	if !slices.Equal(reactions, []string{"✅"}) {
		t.Errorf("the bot's reactions = %v, want ✅ only", reactions)
	}
	// The payloads: the answer's allowed mentions are the caller only.
	var sawAnswer bool
	for _, r := range w.f.RequestsTo("POST /channels/{channel}/messages") {
		var body struct {
			Content         string                            `json:"content"`
			AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		am := body.AllowedMentions
		if am == nil || len(am.Parse) != 0 || len(am.Roles) != 0 || am.RepliedUser {
			t.Errorf("message %q sent with allowed mentions %+v", body.Content, am)
			continue
		}
		if strings.HasPrefix(body.Content, "done") {
			sawAnswer = true
			if !slices.Equal(am.Users, []string{w.alice}) {
				t.Errorf("the answer's allowed users = %v", am.Users)
			}
		} else if len(am.Users) != 0 && !strings.HasPrefix(body.Content, "(2/2)") {
			t.Errorf("message %q may mention %v", body.Content, am.Users)
		}
	}
	if !sawAnswer {
		t.Error("the answer's request was not recorded")
	}
}

// TestAssistantStopLane: a message exactly stop/cancel/abort cancels the
// author's work in the channel (before any turn) with 🛑 and the
// summary; with nothing running a non-trigger stop is ignored and a
// triggered one answered "couldn't find".
func TestAssistantStopLane(t *testing.T) {
	w := newAsstWorld(t, asstOpts{messageContent: true})
	w.rec.mu.Lock()
	w.rec.running = 1
	w.rec.mu.Unlock()
	m, err := w.f.PostMessage(w.general, w.alice, "Stop")
	if err != nil {
		t.Fatal(err)
	}
	connWaitFor(t, "the stop's 🛑 and summary", func() bool {
		var reacted, answered bool
		for _, x := range w.f.Messages(w.general) {
			if x.ID == m.ID {
				reacted = slices.ContainsFunc(x.Reactions, func(r *discordgo.MessageReactions) bool { return r.Me && r.Emoji.Name == "🛑" })
			}
			answered = answered || (x.Content == "Stopped 1 active response. Cleanup is complete." && x.MessageReference != nil && x.MessageReference.MessageID == m.ID)
		}
		return reacted && answered
	})
	w.rec.mu.Lock()
	got := slices.Clone(w.rec.cancels)
	w.rec.running = 0
	w.rec.mu.Unlock()
	if len(got) != 1 || got[0] != [2]uint64{parseID(w.alice), parseID(w.general)} {
		t.Fatalf("cancels = %v", got)
	}
	// Nothing running: a plain "cancel" is ordinary chat; "@Kimi abort" is answered.
	if _, err := w.f.PostMessage(w.general, w.bob, "cancel"); err != nil {
		t.Fatal(err)
	}
	ab, err := w.f.PostMessage(w.general, w.bob, w.mention()+" abort")
	if err != nil {
		t.Fatal(err)
	}
	w.sentinel(t)
	connWaitFor(t, "the none-running answer", func() bool {
		return slices.ContainsFunc(w.f.Messages(w.general), func(x *discordgo.Message) bool {
			return x.Content == assistant.StopNoneText && x.MessageReference != nil && x.MessageReference.MessageID == ab.ID
		})
	})
}

// TestDMIntentAtTheNextReconnect: the Direct messages setting adds the
// DM intent to the next Identify (the payload the fake records), not to
// the session already open (saving does not reconnect, and a DM does not
// reach that session), and turning it off drops the intent at the next
// Identify again.
func TestDMIntentAtTheNextReconnect(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	ctx := context.Background()
	hasDM := func(i discordgo.Intent) bool { return i&discordgo.IntentDirectMessages != 0 }
	for i, step := range []struct {
		name   string
		mode   settings.DMMode
		users  string
		wantDM bool
	}{
		{"on for alice", settings.DMUsers, asstAlice, true},
		{"the owner only, with no owner known", settings.DMOwner, "", true},
		{"off", settings.DMOff, "", false},
	} {
		before := w.f.IdentifyIntents()
		if _, err := settings.SaveAssistantBehaviour(ctx, w.st, settings.AssistantBehaviourUpdate{DMMode: step.mode, DMUserIDs: step.users,
			TurnDeadline: settings.DefaultTurnDeadline, IterationCap: settings.DefaultIterationCap}, settings.Actor{Name: "test"}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// On, but the open session was identified without the intent:
			// alice's DM does not reach Kimi until it reconnects.
			if _, err := w.f.PostDM(w.alice, "before the reconnect"); err != nil {
				t.Fatal(err)
			}
		}
		w.sentinel(t)
		if got := w.f.IdentifyIntents(); len(got) != len(before) || (i == 0 && hasDM(got[len(got)-1])) {
			t.Fatalf("%s: identifies %v before the reconnect (was %v): saving reconnected or the intent changed", step.name, got, before)
		}
		w.b.Reconnect()
		connWaitFor(t, "the next Identify", func() bool { return len(w.f.IdentifyIntents()) == len(before)+1 })
		connWaitFor(t, "connected again", func() bool { st := w.b.Status(); return st.State == StateConnected && len(st.Guilds) == 5 })
		got := w.f.IdentifyIntents()
		if last := got[len(got)-1]; hasDM(last) != step.wantDM || last&baseIntents != baseIntents {
			t.Fatalf("%s: the next Identify asked for %b (DM intent %t, want %t)", step.name, last, hasDM(last), step.wantDM)
		}
		if i == 0 {
			m, err := w.f.PostDM(w.alice, "after the reconnect")
			if err != nil {
				t.Fatal(err)
			}
			if c := w.rec.next(t); c.in.MessageID != parseID(m.ID) || c.in.Place.GuildID != 0 {
				t.Fatalf("incoming = %+v, want the DM after the reconnect (not the one before)", c.in)
			}
		}
	}
}

// TestAssistantOwnerIsTheConfiguredOne: with KIMI_OWNER_USER_ID set, the
// assistant's owner is that user, not the application's owner: with DMs
// for the owner only, the configured owner's DM is answered as the
// owner's, the application owner's is dropped.
func TestAssistantOwnerIsTheConfiguredOne(t *testing.T) {
	w := newAsstWorld(t, asstOpts{owner: "500000000000000002"}) // bob
	ctx := context.Background()
	if _, err := settings.SaveAssistantBehaviour(ctx, w.st, settings.AssistantBehaviourUpdate{DMMode: settings.DMOwner,
		TurnDeadline: settings.DefaultTurnDeadline, IterationCap: settings.DefaultIterationCap}, settings.Actor{Name: "test"}); err != nil {
		t.Fatal(err)
	}
	before := len(w.f.IdentifyIntents())
	w.b.Reconnect()
	connWaitFor(t, "connected again", func() bool {
		return len(w.f.IdentifyIntents()) == before+1 && w.b.Status().State == StateConnected && w.b.OwnerID() != 0
	})
	if w.b.Owner() != parseID(w.bob) || w.b.OwnerID() == parseID(w.bob) {
		t.Fatalf("owner %d, application owner %d: want bob (%s) configured, the application's another", w.b.Owner(), w.b.OwnerID(), w.bob)
	}
	appOwner := idString(w.b.OwnerID())
	if _, err := w.f.PostDM(appOwner, "from the application's owner"); err != nil {
		t.Fatal(err)
	}
	m, err := w.f.PostDM(w.bob, "from the configured owner")
	if err != nil {
		t.Fatal(err)
	}
	if c := w.rec.next(t); c.in.MessageID != parseID(m.ID) || !c.in.Owner {
		t.Fatalf("incoming = %+v, want bob's DM as the owner's (the application owner's dropped)", c.in)
	}
}
