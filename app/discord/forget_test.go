package discord

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// forgetClock is /forget's controlled clock.
type forgetClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *forgetClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *forgetClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// seedForget writes, with ids, guild and user ids:
//   - conversation 1: alice's in home (turn 1, 2 messages, 1 tool call);
//   - conversation 2: bob's in home (bob's turn 2 with 2 messages and a
//     tool call, alice's turn 3 in it with 2 messages and a tool call);
//   - conversation 3: alice's in staffy (turn 4, 2 messages, a tool call);
//   - usage rows for alice in both guilds and bob in home.
func seedForget(t *testing.T, st *store.Store, home, staffy, alice, bob uint64) {
	t.Helper()
	type turn struct{ id, conv, guild, user uint64 }
	for _, c := range []struct{ id, guild, owner uint64 }{{1, home, alice}, {2, home, bob}, {3, staffy, alice}} {
		if _, err := st.Writer().Exec(`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms)
			VALUES (?, ?, 77, ?, ?, 1, 1)`, c.id, c.guild, 900+c.id, c.owner); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Writer().Exec(`INSERT INTO kimi_assistant_delivered (message_id, conversation_id, channel_id, created_ms) VALUES (?, ?, 77, 1)`,
			800+c.id, c.id); err != nil {
			t.Fatal(err)
		}
	}
	for _, tr := range []turn{{1, 1, home, alice}, {2, 2, home, bob}, {3, 2, home, alice}, {4, 3, staffy, alice}} {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms)
				VALUES (?, ?, 'message', ?, ?, ?, 77, 'done', 1)`, []any{tr.id, tr.conv, 700 + tr.id, tr.user, tr.guild}},
			{`INSERT INTO kimi_assistant_messages (conversation_id, turn_id, role, author_id, author_name, content, created_ms)
				VALUES (?1, ?2, 'user', ?3, 'm', 'question', 1), (?1, ?2, 'assistant', 0, 'Kimi', 'answer', 1)`, []any{tr.conv, tr.id, tr.user}},
			{`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, outcome, arguments, result, created_ms) VALUES (?, 1, 'search', 'ok', '{}', 'r', 1)`,
				[]any{tr.id}},
		} {
			if _, err := st.Writer().Exec(q.sql, q.args...); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
	}
	for _, u := range []struct{ guild, user uint64 }{{home, alice}, {staffy, alice}, {home, bob}} {
		if _, err := st.Writer().Exec(`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, calls, prompt_tokens, completion_tokens, turns)
			VALUES ('2030-01-01', ?, ?, 'm', 2, 120, 30, 2)`, u.guild, u.user); err != nil {
			t.Fatal(err)
		}
	}
}

// forgetRows is what the database holds, per row set the test follows.
type forgetRows struct {
	conversations, turns, messages, toolCalls, delivered, usageTokens string
}

func readForgetRows(t *testing.T, st *store.Store) forgetRows {
	t.Helper()
	col := func(q string) string {
		rows := queryAll(t, st, q)
		return strings.Join(rows, ",")
	}
	return forgetRows{
		conversations: col(`SELECT id FROM kimi_assistant_conversations ORDER BY id`),
		turns:         col(`SELECT id FROM kimi_assistant_turns ORDER BY id`),
		messages:      col(`SELECT turn_id || ':' || role FROM kimi_assistant_messages ORDER BY turn_id, role`),
		toolCalls:     col(`SELECT turn_id FROM kimi_assistant_tool_calls ORDER BY turn_id`),
		delivered:     col(`SELECT conversation_id FROM kimi_assistant_delivered ORDER BY conversation_id`),
		usageTokens:   col(`SELECT user_id || '@' || guild_id || '=' || (prompt_tokens + completion_tokens) FROM kimi_assistant_usage ORDER BY guild_id, user_id`),
	}
}

func queryAll(t *testing.T, st *store.Store, q string) []string {
	t.Helper()
	rows, err := st.Reader().Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// buttonIDs are the custom ids of a message's buttons, by label.
func buttonIDs(m *discordgo.Message) map[string]string {
	out := map[string]string{}
	for _, row := range m.Components {
		ar, ok := row.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		for _, c := range ar.Components {
			if b, ok := c.(*discordgo.Button); ok {
				out[b.Label] = b.CustomID
			}
		}
	}
	return out
}

// forgetAsk runs /forget as user in channel (a DM channel too) and
// returns its ephemeral answer.
func forgetAsk(t *testing.T, w *asstWorld, channel, user string) *discordgo.Message {
	t.Helper()
	id, err := w.f.RunCommand(channel, user, "forget")
	if err != nil {
		t.Fatal(err)
	}
	st := ixAnswered(t, w.f, id)
	if st.Response.Type != discordgo.InteractionResponseChannelMessageWithSource || st.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("/forget answered %+v, want an ephemeral message", st.Response)
	}
	ixEventually(t, "the confirmation message", func() bool { return w.f.Interaction(id).Original != nil })
	return w.f.Interaction(id).Original
}

// forgetClick clicks label on msg as user in channel and returns the
// updated content.
func forgetClick(t *testing.T, w *asstWorld, channel, user string, msg *discordgo.Message, label string) string {
	t.Helper()
	cid, ok := buttonIDs(msg)[label]
	if !ok {
		t.Fatalf("no %q button on %q: %v", label, msg.Content, buttonIDs(msg))
	}
	id, err := w.f.ClickButton(channel, msg.ID, user, cid)
	if err != nil {
		t.Fatal(err)
	}
	st := ixAnswered(t, w.f, id)
	if st.Response.Type != discordgo.InteractionResponseUpdateMessage || st.Response.Data == nil {
		t.Fatalf("the click answered %+v, want the confirmation updated", st.Response)
	}
	if len(st.Response.Data.Components) != 0 {
		t.Errorf("the buttons stay after the click: %v", st.Response.Data.Components)
	}
	return st.Response.Data.Content
}

// TestForgetThroughDiscord: /forget, through the real bot and the fake
// Discord, answers alice ephemerally with what it deletes and two
// buttons; Cancel, or Delete after the confirmation expired, leaves every
// row; Delete removes exactly alice's rows in this guild — her
// conversation with all its rows, her turn in bob's conversation with its
// messages and tool call — and nobody else's, nor hers in another guild;
// the usage roll-up keeps every token count; the deletion is audited as
// alice. A second /forget finds nothing; a turn of hers still running
// refuses.
func TestForgetThroughDiscord(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	clk := &forgetClock{t: time.Date(2030, 3, 1, 9, 0, 0, 0, time.UTC)}
	forget := assistant.NewForget(w.st, slog.New(slog.DiscardHandler), clk.now)
	w.b.RegisterCoreHandler(assistant.ForgetNamespace, forget)
	w.b.RegisterCoreCommand(hostkit.CommandForget, assistant.ForgetNamespace, forget)
	home, staffy, alice, bob := parseID(w.guild), parseID(w.staffGuild), parseID(w.alice), parseID(w.bob)
	seedForget(t, w.st, home, staffy, alice, bob)
	all := readForgetRows(t, w.st)
	deleted := forgetRows{
		conversations: "2,3",
		turns:         "2,4",
		messages:      "2:assistant,2:user,4:assistant,4:user",
		toolCalls:     "2,4",
		delivered:     "2,3",
		usageTokens:   all.usageTokens,
	}
	if all.usageTokens == "" || all.conversations != "1,2,3" {
		t.Fatalf("seeded %+v", all)
	}

	ask := func(t *testing.T) *discordgo.Message { t.Helper(); return forgetAsk(t, w, w.general, w.alice) }
	click := func(t *testing.T, msg *discordgo.Message, label string) string {
		t.Helper()
		return forgetClick(t, w, w.general, w.alice, msg, label)
	}

	tests := []struct {
		name    string
		before  func()
		label   string
		want    string
		rows    forgetRows
		audited int
	}{
		{"cancel", nil, "Cancel", "Cancelled: nothing was deleted.", all, 0},
		{"expired", func() { clk.add(assistant.ForgetConfirmWindow) }, "Delete my data", "This confirmation has expired", all, 0},
		{"delete", nil, "Delete my data", "Deleted 1 conversation, 4 messages and 2 tool calls of yours in this server.", deleted, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := ask(t)
			if want := "This deletes, in this server, 1 conversation, 4 messages and 2 tool calls of yours"; !strings.HasPrefix(msg.Content, want) ||
				!strings.Contains(msg.Content, "Your token counts stay in the usage totals") {
				t.Fatalf("confirmation = %q, want it to start %q", msg.Content, want)
			}
			if tt.before != nil {
				tt.before()
			}
			if got := click(t, msg, tt.label); !strings.HasPrefix(got, tt.want) {
				t.Errorf("after %s: %q, want %q", tt.label, got, tt.want)
			}
			if got := readForgetRows(t, w.st); got != tt.rows {
				t.Errorf("rows after %s:\n got %+v\nwant %+v", tt.name, got, tt.rows)
			}
			var n int
			var actor, target string
			if err := w.st.Reader().QueryRow(`SELECT count(*), coalesce(max(actor), ''), coalesce(max(target), '') FROM kimi_audit_log WHERE action = ?`,
				assistant.ActionForget).Scan(&n, &actor, &target); err != nil {
				t.Fatal(err)
			}
			if n != tt.audited || (n > 0 && (actor != "discord:"+w.alice || target != "guild:"+w.guild)) {
				t.Errorf("audit rows %d (%s on %s), want %d as discord:%s", n, actor, target, tt.audited, w.alice)
			}
		})
	}

	// Nothing left here: no buttons.
	if msg := ask(t); !strings.HasPrefix(msg.Content, "You have no conversations or messages") || len(buttonIDs(msg)) != 0 {
		t.Errorf("second /forget = %q with %v", msg.Content, buttonIDs(msg))
	}
	// A running turn of bob's in his conversation refuses his /forget.
	if _, err := w.st.Writer().Exec(`UPDATE kimi_assistant_turns SET status = 'running' WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	id, err := w.f.RunCommand(w.general, w.bob, "forget")
	if err != nil {
		t.Fatal(err)
	}
	if st := ixAnswered(t, w.f, id); !strings.HasPrefix(st.Response.Data.Content, "The assistant is still working on something of yours here") {
		t.Errorf("/forget with a running turn = %q", st.Response.Data.Content)
	}
	if got := readForgetRows(t, w.st); got != deleted {
		t.Errorf("rows after the refused /forget: %+v", got)
	}
	_ = context.Background()
}
