package assistant

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// clock is a controllable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openStoreAt(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

func newConversations(t *testing.T) (*Conversations, *store.Store, *clock) {
	t.Helper()
	st := openStoreAt(t, filepath.Join(t.TempDir(), "kimi.db"))
	t.Cleanup(func() { st.Close() })
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	return NewConversations(st, clk.now), st, clk
}

var guildPlace = Place{GuildID: 10, ChannelID: 100}

func trigger(msg, author uint64, text string) Trigger {
	return Trigger{Place: guildPlace, Kind: KindMessage, MessageID: msg, AuthorID: author, AuthorName: "Bo", Text: text}
}

// answer runs a whole turn of conv answering t: begin, finish with reply,
// and the reply delivered as message delivered.
func answer(t *testing.T, c *Conversations, conv Conversation, tr Trigger, reply string, delivered uint64) {
	t.Helper()
	ctx := context.Background()
	turn, err := c.BeginTurn(ctx, conv, tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RecordDelivered(ctx, conv, tr.Place.ChannelID, delivered); err != nil {
		t.Fatal(err)
	}
	if err := c.FinishTurn(ctx, turn, Finish{Status: StatusDone, Reply: reply, BotID: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRoutesRepliesToDeliveredMessages: a reply to a message Kimi
// delivered continues its conversation in the same channel only; an
// owner-only root continues only for its owner; /ask, a reply to an
// unknown message and a plain mention start roots; the same trigger
// opened twice finds the same root.
func TestOpenRoutesRepliesToDeliveredMessages(t *testing.T) {
	ctx := context.Background()
	c, _, _ := newConversations(t)
	shared, err := c.Open(ctx, trigger(1000, 7, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if shared.Continued || shared.OwnerID != 7 || shared.RootMessageID != 1000 {
		t.Fatalf("new root: %+v", shared)
	}
	answer(t, c, shared, trigger(1000, 7, "hi"), "hello", 1001)
	priv := Trigger{Place: guildPlace, Kind: KindAsk, MessageID: 2000, AuthorID: 7, AuthorName: "Bo", Text: "secret", OwnerOnly: true}
	private, err := c.Open(ctx, priv)
	if err != nil {
		t.Fatal(err)
	}
	answer(t, c, private, priv, "ok", 2001)

	for _, tt := range []struct {
		name     string
		tr       Trigger
		want     int64 // 0: a new root
		wantRoot uint64
	}{
		{"reply to a delivered message", Trigger{Place: guildPlace, Kind: KindMessage, MessageID: 3000, ReplyTo: 1001, AuthorID: 8, Text: "more"}, shared.ID, 1000},
		{"reply in another channel", Trigger{Place: Place{GuildID: 10, ChannelID: 101}, Kind: KindMessage, MessageID: 3001, ReplyTo: 1001, AuthorID: 8, Text: "x"}, 0, 3001},
		{"reply to an unknown message", Trigger{Place: guildPlace, Kind: KindMessage, MessageID: 3002, ReplyTo: 999, AuthorID: 8, Text: "x"}, 0, 3002},
		{"owner-only root, its owner", Trigger{Place: guildPlace, Kind: KindMessage, MessageID: 3003, ReplyTo: 2001, AuthorID: 7, Text: "x"}, private.ID, 2000},
		{"owner-only root, someone else", Trigger{Place: guildPlace, Kind: KindMessage, MessageID: 3004, ReplyTo: 2001, AuthorID: 8, Text: "x"}, 0, 3004},
		{"/ask replying starts a root", Trigger{Place: guildPlace, Kind: KindAsk, MessageID: 3005, ReplyTo: 1001, AuthorID: 7, Text: "x"}, 0, 3005},
		{"the first trigger again", trigger(1000, 7, "hi"), shared.ID, 1000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Open(ctx, tt.tr)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != 0 && got.ID != tt.want {
				t.Errorf("conversation %d, want %d", got.ID, tt.want)
			}
			if tt.want == 0 && (got.ID == shared.ID || got.ID == private.ID || got.OwnerID != tt.tr.AuthorID) {
				t.Errorf("got %+v, want a new root owned by %d", got, tt.tr.AuthorID)
			}
			if got.RootMessageID != tt.wantRoot {
				t.Errorf("root message %d, want %d", got.RootMessageID, tt.wantRoot)
			}
		})
	}
}

// TestOpenRefusesInvalidTriggers: the store's boundary names what is
// wrong with a trigger and writes nothing.
func TestOpenRefusesInvalidTriggers(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newConversations(t)
	ok := trigger(1, 2, "x")
	for _, tt := range []struct {
		name, want string
		edit       func(*Trigger)
	}{
		{"no channel", "no channel", func(t *Trigger) { t.Place.ChannelID = 0 }},
		{"no guild nor DM user", "neither a guild nor a DM user", func(t *Trigger) { t.Place.GuildID = 0 }},
		{"guild and DM user", "both a guild and a DM user", func(t *Trigger) { t.Place.DMUserID = 5 }},
		{"DM with a parent", "a DM has no parent", func(t *Trigger) { t.Place = Place{ChannelID: 3, DMUserID: 2, ParentID: 4} }},
		{"unknown kind", `unknown trigger kind "slash"`, func(t *Trigger) { t.Kind = "slash" }},
		{"no message", "no trigger message id", func(t *Trigger) { t.MessageID = 0 }},
		{"no author", "no author id", func(t *Trigger) { t.AuthorID = 0 }},
		{"text too long", "at most 100000", func(t *Trigger) { t.Text = strings.Repeat("x", maxContent+1) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := ok
			tt.edit(&tr)
			_, err := c.Open(ctx, tr)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "assistant: open conversation: ") {
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
		})
	}
	if n := count(t, st, `SELECT count(*) FROM kimi_assistant_conversations`); n != 0 {
		t.Errorf("%d conversations written", n)
	}
}

func count(t *testing.T, st *store.Store, q string, args ...any) int {
	t.Helper()
	var n int
	if err := st.Reader().QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// TestOneRunningTurnPerRoot: a second turn on a root with one running is
// refused with ErrTurnRunning (and the SQL index refuses it too, whatever
// the caller); another root runs in parallel; once the first finishes the
// root takes a turn again.
func TestOneRunningTurnPerRoot(t *testing.T) {
	ctx := context.Background()
	c, st, clk := newConversations(t)
	a, _ := c.Open(ctx, trigger(1, 7, "a"))
	b, _ := c.Open(ctx, trigger(2, 8, "b"))
	first, err := c.BeginTurn(ctx, a, trigger(1, 7, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.BeginTurn(ctx, a, trigger(3, 7, "again")); !errors.Is(err, ErrTurnRunning) {
		t.Fatalf("second turn on a running root: %v, want ErrTurnRunning", err)
	}
	if _, err := st.Writer().Exec(`INSERT INTO kimi_assistant_turns (conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms) VALUES (?, 'message', 4, 7, 10, 100, 'running', 1)`, a.ID); err == nil {
		t.Fatal("the schema accepted a second running turn")
	}
	if _, err := c.BeginTurn(ctx, b, trigger(2, 8, "b")); err != nil {
		t.Fatalf("another root: %v", err)
	}
	clk.add(1500 * time.Millisecond)
	if err := c.FinishTurn(ctx, first, Finish{Status: StatusDone, Reply: "done", BotID: 1}); err != nil {
		t.Fatal(err)
	}
	if got := count(t, st, `SELECT duration_ms FROM kimi_assistant_turns WHERE id = ?`, int64(first)); got != 1500 {
		t.Errorf("duration %d ms, want 1500", got)
	}
	if err := c.FinishTurn(ctx, first, Finish{Status: StatusDone}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("finishing a finished turn: %v, want ErrNotFound", err)
	}
	if _, err := c.BeginTurn(ctx, a, trigger(3, 7, "again")); err != nil {
		t.Fatalf("after the first finished: %v", err)
	}
	if n := count(t, st, `SELECT count(*) FROM kimi_assistant_messages WHERE conversation_id = ?`, a.ID); n != 3 {
		t.Errorf("%d transcript rows, want 3 (trigger, reply, trigger; the refused turn left none)", n)
	}
}

// TestTurnRecordsUsageAndToolCalls: usage adds up per response (tokens,
// iterations, the last model served); tool calls keep their order and
// clip their excerpts to MaxExcerpt bytes at a code point boundary; bad
// records are refused with a reason.
func TestTurnRecordsUsageAndToolCalls(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newConversations(t)
	conv, _ := c.Open(ctx, trigger(1, 7, "a"))
	turn, err := c.BeginTurn(ctx, conv, trigger(1, 7, "a"))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []Usage{{Model: "m1", PromptTokens: 100, CompletionTokens: 10, CachedTokens: 50}, {PromptTokens: 200, CompletionTokens: 20, CachedTokens: 150}} {
		if err := c.RecordUsage(ctx, turn, u); err != nil {
			t.Fatal(err)
		}
	}
	var iters, p, comp, cached int
	var model string
	if err := st.Reader().QueryRow(`SELECT iterations, prompt_tokens, completion_tokens, cached_tokens, model_served FROM kimi_assistant_turns WHERE id = ?`, int64(turn)).Scan(&iters, &p, &comp, &cached, &model); err != nil {
		t.Fatal(err)
	}
	if iters != 2 || p != 300 || comp != 30 || cached != 200 || model != "m1" {
		t.Errorf("usage: %d iterations, %d/%d/%d tokens, model %q", iters, p, comp, cached, model)
	}
	if err := c.RecordUsage(ctx, 999, Usage{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("usage of no turn: %v", err)
	}
	long := strings.Repeat("é", MaxExcerpt) // 2 bytes each
	if err := c.RecordToolCall(ctx, turn, ToolCall{Seq: 1, Tool: "give_kudos", Module: "kudos", Outcome: OutcomeOK, Duration: 42 * time.Millisecond, Arguments: long, Result: `{"ok":true}`}); err != nil {
		t.Fatal(err)
	}
	var args string
	var dur int
	if err := st.Reader().QueryRow(`SELECT arguments, duration_ms FROM kimi_assistant_tool_calls WHERE turn_id = ? AND seq = 1`, int64(turn)).Scan(&args, &dur); err != nil {
		t.Fatal(err)
	}
	if len(args) != MaxExcerpt || !strings.HasPrefix(long, args) || dur != 42 {
		t.Errorf("excerpt of %d bytes (want %d, a prefix), duration %d", len(args), MaxExcerpt, dur)
	}
	for _, tt := range []struct {
		name string
		call ToolCall
		want string
	}{
		{"sequence 0", ToolCall{Tool: "x", Outcome: OutcomeOK}, "sequence 0"},
		{"no tool", ToolCall{Seq: 2, Outcome: OutcomeOK}, "tool name of 0 bytes"},
		{"bad outcome", ToolCall{Seq: 2, Tool: "x", Outcome: "fine"}, `unknown outcome "fine"`},
		{"same sequence", ToolCall{Seq: 1, Tool: "x", Outcome: OutcomeOK}, "UNIQUE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.RecordToolCall(ctx, turn, tt.call); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if err := c.FinishTurn(ctx, turn, Finish{Status: StatusRunning}); err == nil || !strings.Contains(err.Error(), `status "running"`) {
		t.Errorf("finish as running: %v", err)
	}
}

// TestActivatedToolsPersistPerConversation: browse_tools' load is kept
// per conversation, deduplicated, and does not leak to another root.
func TestActivatedToolsPersistPerConversation(t *testing.T) {
	ctx := context.Background()
	c, _, _ := newConversations(t)
	a, _ := c.Open(ctx, trigger(1, 7, "a"))
	b, _ := c.Open(ctx, trigger(2, 7, "b"))
	if err := c.ActivateTools(ctx, a, "kudos_leaderboard", "hello_member", "kudos_leaderboard"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.ActivatedTools(ctx, a); strings.Join(got, ",") != "hello_member,kudos_leaderboard" {
		t.Errorf("a: %q", got)
	}
	if got, _ := c.ActivatedTools(ctx, b); len(got) != 0 {
		t.Errorf("b: %q", got)
	}
	if err := c.ActivateTools(ctx, a, ""); err == nil {
		t.Error("an empty tool name was activated")
	}
}

// TestCrashLeavesTurnsToMarkInterrupted: a turn running when the process
// dies (the store closed without finishing it) is, after reopening the
// file, marked interrupted by MarkInterrupted, which returns its channel,
// trigger (for the ⏳) and status message (to delete; no later one is
// recorded for it); the delivered-message map survives, so a reply
// still continues the conversation; a late FinishTurn changes nothing.
func TestCrashLeavesTurnsToMarkInterrupted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kimi.db")
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	st := openStoreAt(t, path)
	c := NewConversations(st, clk.now)
	conv, _ := c.Open(ctx, trigger(1000, 7, "first"))
	answer(t, c, conv, trigger(1000, 7, "first"), "answer", 1001)
	next := Trigger{Place: guildPlace, Kind: KindMessage, MessageID: 1002, ReplyTo: 1001, AuthorID: 7, Text: "second"}
	cont, _ := c.Open(ctx, next)
	turn, err := c.BeginTurn(ctx, cont, next)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetStatusMessage(ctx, turn, 1005); err != nil {
		t.Fatal(err)
	}
	st.Close() // the crash: nothing after the status message's commit

	clk.add(5 * time.Second)
	st = openStoreAt(t, path)
	defer st.Close()
	c = NewConversations(st, clk.now)
	got, err := c.MarkInterrupted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (Interrupted{Turn: turn, Kind: KindMessage, ChannelID: 100, TriggerMessageID: 1002, StatusMessageID: 1005}) {
		t.Fatalf("interrupted: %+v", got)
	}
	if err := c.SetStatusMessage(ctx, turn, 1006); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an interrupted turn's status message recorded: %v", err)
	}
	var status string
	var dur int
	if err := st.Reader().QueryRow(`SELECT status, duration_ms FROM kimi_assistant_turns WHERE id = ?`, int64(turn)).Scan(&status, &dur); err != nil {
		t.Fatal(err)
	}
	if status != StatusInterrupted || dur != 5000 {
		t.Errorf("status %q, duration %d", status, dur)
	}
	if again, _ := c.MarkInterrupted(ctx); len(again) != 0 {
		t.Errorf("marked twice: %+v", again)
	}
	if err := c.FinishTurn(ctx, turn, Finish{Status: StatusDone, Reply: "late"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("late finish: %v", err)
	}
	reply := Trigger{Place: guildPlace, Kind: KindMessage, MessageID: 1003, ReplyTo: 1001, AuthorID: 7, Text: "third"}
	after, err := c.Open(ctx, reply)
	if err != nil || after.ID != conv.ID {
		t.Fatalf("reply after the restart: %+v, %v (want conversation %d)", after, err, conv.ID)
	}
	if _, err := c.BeginTurn(ctx, after, reply); err != nil {
		t.Fatalf("the conversation continues: %v", err)
	}
	h, err := c.History(ctx, after)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[0].Content != "Bo: first" || h[2].Content != "member: second" {
		t.Errorf("history after the crash: %+v", h)
	}
}

// insertTurn writes a turn of status with its transcript rows directly.
func insertTurn(t *testing.T, st *store.Store, conv int64, status string, msgs ...[2]string) {
	t.Helper()
	err := st.Write(context.Background(), func(tx *sql.Tx) error {
		var turn int64
		if err := tx.QueryRow(`INSERT INTO kimi_assistant_turns (conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms) VALUES (?, 'message', 1, 7, 10, 100, ?, 1) RETURNING id`, conv, status).Scan(&turn); err != nil {
			return err
		}
		for _, m := range msgs {
			name := "Bo"
			if m[0] == RoleAssistant {
				name = ""
			}
			if _, err := tx.Exec(`INSERT INTO kimi_assistant_messages (conversation_id, turn_id, role, author_id, author_name, content, created_ms) VALUES (?, ?, ?, 7, ?, ?, 1)`, conv, turn, m[0], name, m[1]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
