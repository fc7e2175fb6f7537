package discord

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// seedForgetDM writes, beside seedForget's guild rows, each user's DM
// conversation with the bot (guild 0, dm_user_id the user, in their DM
// channel): conversation 10+i with turn 10+i, its 2 messages, a tool call
// and a delivered message, for alice (i 0) and bob (i 1); and DM usage.
func seedForgetDM(t *testing.T, st *store.Store, users, channels []uint64) {
	t.Helper()
	for i, u := range users {
		id, ch := 10+uint64(i), channels[i]
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, dm_user_id, root_message_id, owner_id, created_ms, updated_ms)
				VALUES (?, 0, ?, ?, ?, ?, 1, 1)`, []any{id, ch, u, 900 + id, u}},
			{`INSERT INTO kimi_assistant_delivered (message_id, conversation_id, channel_id, created_ms) VALUES (?, ?, ?, 1)`, []any{800 + id, id, ch}},
			{`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms)
				VALUES (?1, ?1, 'message', ?2, ?3, 0, ?4, 'done', 1)`, []any{id, 700 + id, u, ch}},
			{`INSERT INTO kimi_assistant_messages (conversation_id, turn_id, role, author_id, author_name, content, created_ms)
				VALUES (?1, ?1, 'user', ?2, 'm', 'question', 1), (?1, ?1, 'assistant', 0, 'Kimi', 'answer', 1)`, []any{id, u}},
			{`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, outcome, arguments, result, created_ms) VALUES (?, 1, 'search', 'ok', '{}', 'r', 1)`,
				[]any{id}},
			{`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, calls, prompt_tokens, completion_tokens, turns)
				VALUES ('2030-01-01', 0, ?, 'm', 1, 50, 5, 1)`, []any{u}},
		} {
			if _, err := st.Writer().Exec(q.sql, q.args...); err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
		}
	}
}

// forgetAudit is the ActionForget audit rows, as actor>target:detail.
func forgetAudit(t *testing.T, st *store.Store) []string {
	t.Helper()
	return queryAll(t, st, `SELECT actor || '>' || target || ':' || detail FROM kimi_audit_log WHERE action = '`+assistant.ActionForget+`' ORDER BY id`)
}

// TestForgetInDirectMessages: /forget in alice's DM with the bot, through
// the real bot and the fake Discord (an interaction without guild_id, the
// user as user), answers with what it deletes there; Cancel, or Delete
// after the confirmation expired, deletes nothing; Delete removes exactly
// her DM conversation with every row of it (turn, messages, tool call,
// delivered reference), neither bob's DM nor her guild rows, keeps the
// usage roll-up and is audited as alice with a detail saying DMs. Before
// that, her /forget in a guild deleted that guild's rows and left her DM
// rows. A second DM /forget finds nothing there.
func TestForgetInDirectMessages(t *testing.T) {
	w := newAsstWorld(t, asstOpts{})
	clk := &forgetClock{t: time.Date(2030, 3, 1, 9, 0, 0, 0, time.UTC)}
	forget := assistant.NewForget(w.st, slog.New(slog.DiscardHandler), clk.now)
	w.b.RegisterCoreHandler(assistant.ForgetNamespace, forget)
	w.b.RegisterCoreCommand(hostkit.CommandForget, assistant.ForgetNamespace, forget)
	aliceDM, err := w.f.OpenDM(w.alice)
	if err != nil {
		t.Fatal(err)
	}
	bobDM, err := w.f.OpenDM(w.bob)
	if err != nil {
		t.Fatal(err)
	}
	home, staffy, alice, bob := parseID(w.guild), parseID(w.staffGuild), parseID(w.alice), parseID(w.bob)
	seedForget(t, w.st, home, staffy, alice, bob)
	seedForgetDM(t, w.st, []uint64{alice, bob}, []uint64{parseID(aliceDM), parseID(bobDM)})
	all := readForgetRows(t, w.st)
	if all.conversations != "1,2,3,10,11" || all.turns != "1,2,3,4,10,11" {
		t.Fatalf("seeded %+v", all)
	}

	// Her /forget in home deletes home's rows of hers, not her DM's.
	msg := forgetAsk(t, w, w.general, w.alice)
	if want := "This deletes, in this server, 1 conversation, 4 messages and 2 tool calls of yours"; !strings.HasPrefix(msg.Content, want) {
		t.Fatalf("guild confirmation = %q, want it to start %q", msg.Content, want)
	}
	if got := forgetClick(t, w, w.general, w.alice, msg, "Delete my data"); !strings.HasPrefix(got, "Deleted 1 conversation, 4 messages and 2 tool calls of yours in this server.") {
		t.Fatalf("guild delete = %q", got)
	}
	afterGuild := forgetRows{
		conversations: "2,3,10,11",
		turns:         "2,4,10,11",
		messages:      "2:assistant,2:user,4:assistant,4:user,10:assistant,10:user,11:assistant,11:user",
		toolCalls:     "2,4,10,11",
		delivered:     "2,3,10,11",
		usageTokens:   all.usageTokens,
	}
	if got := readForgetRows(t, w.st); got != afterGuild {
		t.Fatalf("rows after the guild /forget:\n got %+v\nwant %+v", got, afterGuild)
	}
	guildAudit := "discord:" + w.alice + ">guild:" + w.guild + ":a member deleted their assistant data here: 1 conversation(s), 4 message(s), 2 tool call(s); usage totals kept"
	if got := forgetAudit(t, w.st); len(got) != 1 || got[0] != guildAudit {
		t.Fatalf("audit after the guild /forget = %q", got)
	}

	afterDM := afterGuild
	afterDM.conversations, afterDM.turns = "2,3,11", "2,4,11"
	afterDM.messages = "2:assistant,2:user,4:assistant,4:user,11:assistant,11:user"
	afterDM.toolCalls, afterDM.delivered = "2,4,11", "2,3,11"
	dmAudit := "discord:" + w.alice + ">discord:" + w.alice +
		":a user deleted their assistant data in their direct messages with the bot: 1 conversation(s), 2 message(s), 1 tool call(s); usage totals kept"
	tests := []struct {
		name   string
		before func()
		label  string
		want   string
		rows   forgetRows
		audit  []string
	}{
		{"cancel", nil, "Cancel", "Cancelled: nothing was deleted.", afterGuild, []string{guildAudit}},
		{"expired", func() { clk.add(assistant.ForgetConfirmWindow) }, "Delete my data", "This confirmation has expired", afterGuild, []string{guildAudit}},
		{"delete", nil, "Delete my data", "Deleted 1 conversation, 2 messages and 1 tool call of yours in our direct messages.", afterDM,
			[]string{guildAudit, dmAudit}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := forgetAsk(t, w, aliceDM, w.alice)
			if want := "This deletes, in our direct messages, 1 conversation, 2 messages and 1 tool call of yours"; !strings.HasPrefix(msg.Content, want) ||
				!strings.Contains(msg.Content, "Your token counts stay in the usage totals") {
				t.Fatalf("confirmation = %q, want it to start %q", msg.Content, want)
			}
			if tt.before != nil {
				tt.before()
			}
			if got := forgetClick(t, w, aliceDM, w.alice, msg, tt.label); !strings.HasPrefix(got, tt.want) {
				t.Errorf("after %s: %q, want %q", tt.label, got, tt.want)
			}
			if got := readForgetRows(t, w.st); got != tt.rows {
				t.Errorf("rows after %s:\n got %+v\nwant %+v", tt.name, got, tt.rows)
			}
			if got := forgetAudit(t, w.st); strings.Join(got, "\n") != strings.Join(tt.audit, "\n") {
				t.Errorf("audit after %s:\n got %q\nwant %q", tt.name, got, tt.audit)
			}
		})
	}

	// Nothing left in her DMs: no buttons; bob's DM still has his.
	if msg := forgetAsk(t, w, aliceDM, w.alice); msg.Content != "You have no conversations or messages with the assistant in our direct messages: there is nothing to delete." ||
		len(buttonIDs(msg)) != 0 {
		t.Errorf("second DM /forget = %q with %v", msg.Content, buttonIDs(msg))
	}
	if msg := forgetAsk(t, w, bobDM, w.bob); !strings.HasPrefix(msg.Content, "This deletes, in our direct messages, 1 conversation, 2 messages and 1 tool call") {
		t.Errorf("bob's DM /forget = %q", msg.Content)
	}
}
