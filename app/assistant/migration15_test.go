package assistant

import (
	"context"
	"slices"
	"testing"

	"github.com/kimiapp/kimi/app/internal/migrationtest"
)

// TestMigration00015Down: migration 00015's usage version goes up with
// each row the usage page reads that changes, and not with a row it does
// not read; its Down leaves exactly the schema before it, and Up applies
// again.
func TestMigration00015Down(t *testing.T) {
	ctx := context.Background()
	ref, refP := migrationtest.Open(t, "fourteen.db")
	if _, err := refP.UpTo(ctx, 14); err != nil {
		t.Fatal(err)
	}
	want := migrationtest.Schema(t, ref)

	db, p := migrationtest.Open(t, "fifteen.db")
	if _, err := p.UpTo(ctx, 15); err != nil {
		t.Fatal(err)
	}
	version := func() int64 {
		t.Helper()
		var v int64
		if err := db.QueryRow(`SELECT version FROM kimi_assistant_usage_version WHERE id = 1`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tt := range []struct {
		q    string
		bump bool
	}{
		{`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms) VALUES (1, 10, 100, 1000, 7, 1, 1)`, false},
		{`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms) VALUES (1, 1, 'message', 1000, 7, 10, 100, 'running', 1)`, false},
		{`UPDATE kimi_assistant_turns SET prompt_tokens = 5 WHERE id = 1`, false},
		{`UPDATE kimi_assistant_turns SET status = 'done' WHERE id = 1`, true},
		{`INSERT INTO kimi_assistant_messages (conversation_id, turn_id, role, author_id, author_name, content, created_ms) VALUES (1, 1, 'user', 7, 'Bo', 'hi', 1)`, false},
		{`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, module, outcome, created_ms) VALUES (1, 1, 'give_kudos', 'kudos', 'ok', 1)`, true},
		{`UPDATE kimi_assistant_tool_calls SET result = ''`, false},
		{`DELETE FROM kimi_assistant_tool_calls`, true},
		{`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, prompt_tokens) VALUES ('2031-03-04', 10, 7, 'kimi-k2', 5)`, true},
		{`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, prompt_tokens) VALUES ('2031-03-04', 10, 7, 'kimi-k2', 5)
			ON CONFLICT DO UPDATE SET prompt_tokens = prompt_tokens + excluded.prompt_tokens`, true},
		{`DELETE FROM kimi_assistant_usage`, true},
		{`INSERT INTO kimi_assistant_usage_errors (day, guild_id, user_id, kind, count) VALUES ('2031-03-04', 10, 7, 'busy', 1)`, true},
		{`UPDATE kimi_assistant_usage_errors SET count = 2`, true},
		{`DELETE FROM kimi_assistant_usage_errors`, true},
		{`DELETE FROM kimi_assistant_conversations`, true}, // its turn goes with it
	} {
		before := version()
		if _, err := db.Exec(tt.q); err != nil {
			t.Fatalf("%s: %v", tt.q, err)
		}
		if bumped := version() > before; bumped != tt.bump {
			t.Errorf("%.90s: version went up: %v, want %v", tt.q, bumped, tt.bump)
		}
	}
	if _, err := db.Exec(`INSERT INTO kimi_assistant_usage_version (id, version) VALUES (2, 0)`); err == nil {
		t.Error("accepted a second version row")
	}
	if _, err := p.DownTo(ctx, 14); err != nil {
		t.Fatalf("down to 14: %v", err)
	}
	if got := migrationtest.Schema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00015's Down:\n%q\nwant (version 14):\n%q", got, want)
	}
	if _, err := p.UpTo(ctx, 15); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
