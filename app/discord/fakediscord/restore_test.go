package fakediscord

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// TestRestoreMessage: messages an earlier fake held come back with their ids, authors, content,
// reply and reactions, in id order, readable over REST; the bot removes its restored reaction
// as it would any; and the fake's next id is past the restored ones even when its clock is
// behind them (a fresh fake's clock starts where the last process's ids left off, or before).
func TestRestoreMessage(t *testing.T) {
	t.Parallel()
	// The clock is a year before the restored ids' time: without the restore moving the id
	// generator on, the next message's id would be smaller than theirs.
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	w := newWorld(t, Options{Now: func() time.Time { return at }})
	f := w.fake
	snow := func(ms int64) string {
		return strconv.FormatUint(uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()+ms-discordEpoch)<<22, 10)
	}
	question, answer := snow(2), snow(3)
	// Restored out of order: the answer to the question first would fail (its reference is not
	// there yet), so the question goes first, then an older message, then the answer.
	for _, m := range []*discordgo.Message{
		{ID: question, ChannelID: w.text, Author: &discordgo.User{ID: w.alice}, Content: "<@" + f.BotID() + "> why?",
			Reactions: []*discordgo.MessageReactions{{Emoji: &discordgo.Emoji{Name: "⏳"}, Count: 2, Me: true}, {Emoji: &discordgo.Emoji{Name: "👍"}, Count: 0}}},
		{ID: snow(1), ChannelID: w.text, Author: &discordgo.User{ID: w.bob}, Content: "earlier"},
		{ID: answer, ChannelID: w.text, Author: &discordgo.User{ID: f.BotID()}, Content: "because",
			MessageReference: &discordgo.MessageReference{MessageID: question}},
	} {
		if err := f.RestoreMessage(m); err != nil {
			t.Fatalf("restore %s: %v", m.ID, err)
		}
	}
	got := f.Messages(w.text)
	if len(got) != 3 || got[0].ID != snow(1) || got[1].ID != question || got[2].ID != answer {
		t.Fatalf("messages = %v, want the three in id order", ids(got))
	}
	q, a := got[1], got[2]
	if q.Author.Username != "alice" || q.GuildID != w.guild || len(q.Mentions) != 1 || q.Mentions[0].ID != f.BotID() ||
		len(q.Reactions) != 1 || q.Reactions[0].Count != 2 || !q.Reactions[0].Me || q.Member == nil {
		t.Fatalf("question = %+v (author %+v, mentions %v, reactions %v)", q, q.Author, q.Mentions, q.Reactions)
	}
	if !a.Author.Bot || a.Type != discordgo.MessageTypeReply || a.MessageReference == nil || a.MessageReference.MessageID != question ||
		a.ReferencedMessage == nil || a.ReferencedMessage.Content != q.Content {
		t.Fatalf("answer = %+v", a)
	}
	if !snowflakeTime(question).Equal(q.Timestamp) {
		t.Fatalf("question's timestamp %v, want its snowflake's %v", q.Timestamp, snowflakeTime(question))
	}

	s := w.rest()
	hist, err := s.ChannelMessages(w.text, 10, "", "", "")
	if err != nil || len(hist) != 3 || hist[0].ID != answer {
		t.Fatalf("history = %v, %v", ids(hist), err)
	}
	if err := s.MessageReactionRemove(w.text, question, "⏳", "@me"); err != nil {
		t.Fatal(err)
	}
	if r := f.Messages(w.text)[1].Reactions; len(r) != 1 || r[0].Count != 1 || r[0].Me {
		t.Fatalf("after the bot's removal the ⏳ is %+v, want the member's alone", r)
	}
	next, err := f.PostMessage(w.text, w.bob, "later")
	if err != nil {
		t.Fatal(err)
	}
	if cmpID(next.ID, answer) <= 0 {
		t.Fatalf("the next id %s is not past the restored %s", next.ID, answer)
	}
	sent, err := s.ChannelMessageSend(w.text, "the bot's next")
	if err != nil || cmpID(sent.ID, next.ID) <= 0 {
		t.Fatalf("the bot's next message %v (%v), want an id past %s", sent, err, next.ID)
	}
	// Restoring an id again replaces the message.
	if err := f.RestoreMessage(&discordgo.Message{ID: snow(1), ChannelID: w.text, Author: &discordgo.User{ID: w.bob}, Content: "edited"}); err != nil {
		t.Fatal(err)
	}
	if got := f.Messages(w.text); len(got) != 5 || got[0].Content != "edited" {
		t.Fatalf("after restoring again: %d messages, first %q", len(got), got[0].Content)
	}
}

// TestRestoreMessageRefused: what cannot be restored is refused and leaves the channel as it was.
func TestRestoreMessageRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	alice := &discordgo.User{ID: w.alice}
	for _, tc := range []struct {
		name string
		m    *discordgo.Message
		want error
	}{
		{"an id that is no snowflake", &discordgo.Message{ID: "x1", ChannelID: w.text, Author: alice}, nil},
		{"a zero id", &discordgo.Message{ID: "0", ChannelID: w.text, Author: alice}, nil},
		{"an unknown channel", &discordgo.Message{ID: "1234", ChannelID: "99", Author: alice}, ErrUnknownChannel},
		{"no author", &discordgo.Message{ID: "1234", ChannelID: w.text}, ErrUnknownUser},
		{"an unknown author", &discordgo.Message{ID: "1234", ChannelID: w.text, Author: &discordgo.User{ID: "77"}}, ErrUnknownUser},
		{"a reply to a message the channel lacks", &discordgo.Message{ID: "1234", ChannelID: w.text, Author: alice,
			MessageReference: &discordgo.MessageReference{MessageID: "1233"}}, ErrUnknownMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := w.fake.RestoreMessage(tc.m)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if n := len(w.fake.Messages(w.text)); n != 0 {
				t.Fatalf("%d messages in the channel after a refused restore", n)
			}
		})
	}
}

func ids(ms []*discordgo.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}
