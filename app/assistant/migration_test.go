package assistant

import (
	"context"
	"database/sql"
	"slices"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/kimiapp/kimi/app/internal/migrationtest"
)

// TestMigration00010Down: migration 00010's Down, run over a database
// with a conversation, a turn, its messages, a tool call, a delivered
// message and an activated tool, leaves exactly the schema of version 9,
// and Up applies again. Its CHECKs refuse what the store never writes.
func TestMigration00010Down(t *testing.T) {
	ctx := context.Background()
	open := func(name string) (*sql.DB, *goose.Provider) { return migrationtest.Open(t, name) }
	ref, refP := open("nine.db")
	if _, err := refP.UpTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	want := migrationtest.Schema(t, ref)

	db, p := open("ten.db")
	if _, err := p.UpTo(ctx, 10); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms) VALUES (1, 10, 100, 1000, 7, 1, 1)`,
		`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, dm_user_id, root_message_id, owner_id, created_ms, updated_ms) VALUES (2, 0, 200, 7, 2000, 7, 1, 1)`,
		`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms) VALUES (1, 1, 'message', 1000, 7, 10, 100, 'running', 1)`,
		`INSERT INTO kimi_assistant_messages (conversation_id, turn_id, role, author_id, author_name, content, created_ms) VALUES (1, 1, 'user', 7, 'Bo', 'hi', 1)`,
		`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, module, outcome, created_ms) VALUES (1, 1, 'give_kudos', 'kudos', 'ok', 1)`,
		`INSERT INTO kimi_assistant_delivered (message_id, conversation_id, channel_id, created_ms) VALUES (1001, 1, 100, 1)`,
		`INSERT INTO kimi_assistant_tools (conversation_id, tool, activated_ms) VALUES (1, 'kudos_leaderboard', 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		`INSERT INTO kimi_assistant_conversations (guild_id, channel_id, dm_user_id, root_message_id, owner_id, created_ms, updated_ms) VALUES (10, 100, 7, 3000, 7, 1, 1)`,
		`INSERT INTO kimi_assistant_conversations (guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms) VALUES (0, 100, 3001, 7, 1, 1)`,
		`INSERT INTO kimi_assistant_conversations (guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms) VALUES (10, 100, 1000, 8, 1, 1)`,
		`INSERT INTO kimi_assistant_conversations (guild_id, channel_id, root_message_id, owner_id, owner_only, created_ms, updated_ms) VALUES (10, 100, 3002, 7, 2, 1, 1)`,
		`INSERT INTO kimi_assistant_turns (conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms) VALUES (1, 'message', 1002, 7, 10, 100, 'running', 1)`,
		`INSERT INTO kimi_assistant_turns (conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms) VALUES (1, 'message', 1002, 7, 10, 100, 'paused', 1)`,
		`INSERT INTO kimi_assistant_turns (conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms) VALUES (1, 'slash', 1002, 7, 10, 100, 'done', 1)`,
		`INSERT INTO kimi_assistant_messages (conversation_id, turn_id, role, author_id, author_name, content, created_ms) VALUES (1, 1, 'system', 7, 'Bo', 'hi', 1)`,
		`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, outcome, arguments, created_ms) VALUES (1, 2, 't', 'ok', printf('%.2049c', 'x'), 1)`,
		`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, outcome, created_ms) VALUES (1, 3, 't', 'fine', 1)`,
		`INSERT INTO kimi_assistant_delivered (message_id, conversation_id, channel_id, created_ms) VALUES (1003, 99, 100, 1)`,
	} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("accepted: %.160s", q)
		}
	}
	if _, err := p.DownTo(ctx, 9); err != nil {
		t.Fatalf("down to 9: %v", err)
	}
	if got := migrationtest.Schema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00010's Down:\n%q\nwant (version 9):\n%q", got, want)
	}
	if _, err := p.UpTo(ctx, 10); err != nil {
		t.Fatalf("up again: %v", err)
	}
}

// TestMigration00011Down: migration 00011 adds the turns' status message
// id (0 for the turns it finds, a negative one refused); its Down, over a
// turn with a status message, leaves exactly the schema of version 10 and
// the turn, and Up applies again.
func TestMigration00011Down(t *testing.T) {
	ctx := context.Background()
	ref, refP := migrationtest.Open(t, "ten.db")
	if _, err := refP.UpTo(ctx, 10); err != nil {
		t.Fatal(err)
	}
	want := migrationtest.Schema(t, ref)

	db, p := migrationtest.Open(t, "eleven.db")
	if _, err := p.UpTo(ctx, 10); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms) VALUES (1, 10, 100, 1000, 7, 1, 1)`,
		`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms) VALUES (1, 1, 'message', 1000, 7, 10, 100, 'running', 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := p.UpTo(ctx, 11); err != nil {
		t.Fatalf("up to 11: %v", err)
	}
	var status int64
	if err := db.QueryRow(`SELECT status_message_id FROM kimi_assistant_turns WHERE id = 1`).Scan(&status); err != nil || status != 0 {
		t.Fatalf("the existing turn's status message = %d, %v; want 0", status, err)
	}
	if _, err := db.Exec(`UPDATE kimi_assistant_turns SET status_message_id = -1 WHERE id = 1`); err == nil {
		t.Error("accepted a negative status message id")
	}
	if _, err := db.Exec(`UPDATE kimi_assistant_turns SET status_message_id = 1001 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 10); err != nil {
		t.Fatalf("down to 10: %v", err)
	}
	if got := migrationtest.Schema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00011's Down:\n%q\nwant (version 10):\n%q", got, want)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM kimi_assistant_turns`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d turns after the Down (%v), want 1", n, err)
	}
	if _, err := p.UpTo(ctx, 11); err != nil {
		t.Fatalf("up again: %v", err)
	}
}

// TestMigration00012Down: migration 00012's usage roll-up and error counts
// take what the store writes and refuse what it never does (a bad day, a
// negative count, a user 0, a duplicate key); its Down over rows leaves
// exactly the schema of version 11, and Up applies again.
func TestMigration00012Down(t *testing.T) {
	ctx := context.Background()
	ref, refP := migrationtest.Open(t, "eleven.db")
	if _, err := refP.UpTo(ctx, 11); err != nil {
		t.Fatal(err)
	}
	want := migrationtest.Schema(t, ref)

	db, p := migrationtest.Open(t, "twelve.db")
	if _, err := p.UpTo(ctx, 12); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, calls, prompt_tokens, completion_tokens, cached_tokens, turns) VALUES ('2031-03-04', 10, 7, 'kimi-k2', 2, 1200, 40, 1000, 1)`,
		`INSERT INTO kimi_assistant_usage (day, guild_id, user_id) VALUES ('2031-03-04', 0, 7)`,
		`INSERT INTO kimi_assistant_usage_errors (day, guild_id, user_id, kind, count) VALUES ('2031-03-04', 10, 7, 'provider_5xx', 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		`INSERT INTO kimi_assistant_usage (day, guild_id, user_id) VALUES ('2031-3-4', 10, 7)`,
		`INSERT INTO kimi_assistant_usage (day, guild_id, user_id) VALUES ('yesterday!', 10, 7)`,
		`INSERT INTO kimi_assistant_usage (day, guild_id, user_id) VALUES ('2031-03-05', 10, 0)`,
		`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, prompt_tokens) VALUES ('2031-03-05', 10, 7, -1)`,
		`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model) VALUES ('2031-03-04', 10, 7, 'kimi-k2')`,
		`INSERT INTO kimi_assistant_usage_errors (day, guild_id, user_id, kind) VALUES ('2031-03-04', 10, 7, '')`,
		`INSERT INTO kimi_assistant_usage_errors (day, guild_id, user_id, kind, count) VALUES ('2031-03-04', 10, 7, 'busy', -2)`,
	} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("accepted: %.160s", q)
		}
	}
	if _, err := p.DownTo(ctx, 11); err != nil {
		t.Fatalf("down to 11: %v", err)
	}
	if got := migrationtest.Schema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00012's Down:\n%q\nwant (version 11):\n%q", got, want)
	}
	if _, err := p.UpTo(ctx, 12); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
