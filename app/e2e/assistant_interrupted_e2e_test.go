package e2e

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/store"
)

// TestE2EInterruptedTurnLosesItsHourglass is the state a kill -9 mid-turn
// leaves, reproduced in-process (this is not a crash of the process: the
// fake Discord of the restarted appliance is seeded with what the real
// Discord would still hold): a member's mention carrying the bot's ⏳, the
// turn's status message (Thinking...) replying to it, and its turn row
// still running with that status message recorded. At start the turn is
// marked interrupted, the bot removes its own ⏳ from the trigger once
// connected (the member's own ⏳ stays) and deletes the status message,
// the trigger gets no answer, and a new mention is answered.
func TestE2EInterruptedTurnLosesItsHourglass(t *testing.T) {
	var trigger, statusMsg string
	seed := func(f *fakediscord.Server) {
		e2eSeed(f)
		m, err := f.PostMessage(e2eChannel, e2eAnn, "<@"+f.BotID()+"> a question the crash cut short")
		if err != nil {
			t.Fatal(err)
		}
		trigger = m.ID
		for _, who := range []string{f.BotID(), e2eBob} {
			if err := f.React(e2eChannel, m.ID, who, assistant.ReactWorking); err != nil {
				t.Fatal(err)
			}
		}
		s, err := f.PostReplyNoPing(e2eChannel, f.BotID(), assistant.ThinkingText, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		statusMsg = s.ID
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	// The turn row the crash left running, written through the storage
	// API before the start (the trigger's id is the fake's, known once the
	// hook ran: the row is written from the hook, before the assistant part
	// marks running turns interrupted).
	writeTurn := func() {
		ctx := context.Background()
		st, err := store.Open(ctx, filepath.Join(dataDir, config.DBFile), store.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		conv := assistant.NewConversations(st, nil)
		msg, _ := strconv.ParseUint(trigger, 10, 64)
		tr := assistant.Trigger{Place: assistant.Place{GuildID: e2eID(t, e2eGuild), ChannelID: e2eID(t, e2eChannel)},
			Kind: assistant.KindMessage, MessageID: msg, AuthorID: e2eID(t, e2eAnn), AuthorName: "Ann", Text: "a question the crash cut short"}
		c, err := conv.Open(ctx, tr)
		if err != nil {
			t.Fatal(err)
		}
		turn, err := conv.BeginTurn(ctx, c, tr)
		if err != nil {
			t.Fatal(err)
		}
		sid, _ := strconv.ParseUint(statusMsg, 10, 64)
		if err := conv.SetStatusMessage(ctx, turn, sid); err != nil {
			t.Fatal(err)
		}
	}
	a := startE2E(t, e2eOptions{dataDir: dataDir, docs: map[guildcfg.Target]string{guildcfg.GuildTarget(e2eID(t, e2eGuild)): e2eGuildDoc},
		seed: func(f *fakediscord.Server) { seed(f); writeTurn() }})
	c := a.signIn()
	a.waitConnected(c)

	hourglass := func() (bot bool, count int) {
		for _, m := range a.Discord().Messages(e2eChannel) {
			if m.ID != trigger {
				continue
			}
			for _, r := range m.Reactions {
				if r.Emoji.Name == assistant.ReactWorking {
					return r.Me, r.Count
				}
			}
		}
		return false, 0
	}
	statusShown := func() bool {
		return slices.ContainsFunc(a.Discord().Messages(e2eChannel), func(m *discordgo.Message) bool { return m.ID == statusMsg })
	}
	a.WaitFor("the bot's ⏳ removed from the interrupted trigger and its status message deleted", func() bool {
		bot, _ := hourglass()
		return !bot && !statusShown()
	})
	if _, n := hourglass(); n != 1 {
		t.Fatalf("⏳ count on the trigger = %d, want 1 (the member's own stays)", n)
	}
	st, err := store.Open(context.Background(), filepath.Join(dataDir, config.DBFile), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var status string
	if err := st.Reader().QueryRow(`SELECT status FROM kimi_assistant_turns WHERE trigger_message_id = ?`, trigger).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status != assistant.StatusInterrupted {
		t.Fatalf("the trigger's turn is %q, want %q", status, assistant.StatusInterrupted)
	}
	next, err := a.Discord().PostMessage(e2eChannel, e2eAnn, "<@"+a.Discord().BotID()+"> are you back?")
	if err != nil {
		t.Fatal(err)
	}
	a.WaitFor("the new mention answered", func() bool {
		for _, m := range a.Discord().Messages(e2eChannel) {
			if m.Author != nil && m.Author.ID == a.Discord().BotID() && m.MessageReference != nil && m.MessageReference.MessageID == next.ID &&
				strings.Contains(m.Content, "(demo model)") {
				return true
			}
		}
		return false
	})
	for _, m := range a.Discord().Messages(e2eChannel) {
		if m.Author != nil && m.Author.ID == a.Discord().BotID() && m.MessageReference != nil && m.MessageReference.MessageID == trigger {
			t.Fatalf("the interrupted trigger got a message %q: no answer may be posted for it", m.Content)
		}
	}
	// The clean-up logs once it has deleted the status message, after the
	// fake shows the deletion; Stop waits for it.
	a.Stop()
	var line string
	for l := range strings.Lines(a.Log()) {
		if strings.Contains(l, "removed the ⏳ of the assistant turns interrupted by the last stop") {
			line = l
		}
	}
	for _, want := range []string{"removed=1", "status_messages_deleted=1", "turns=1"} {
		if !strings.Contains(line, want) {
			t.Fatalf("the removal's log line %q lacks %s; the log:\n%s", line, want, a.Log())
		}
	}
}
