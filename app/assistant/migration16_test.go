package assistant

import (
	"context"
	"database/sql"
	"reflect"
	"slices"
	"testing"

	"github.com/kimiapp/kimi/app/internal/migrationtest"
)

// rollupChecks are migration 00016's roll-ups, each beside the aggregate
// of the rows under it that it must equal (rows sorted, no all-zero row).
var rollupChecks = []struct{ name, rollup, want string }{
	{"daily",
		`SELECT day, guild_id, model, calls, prompt_tokens, completion_tokens, cached_tokens, turns FROM kimi_assistant_usage_daily ORDER BY 1, 2, 3`,
		`SELECT day, guild_id, model, sum(calls), sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(turns)
		FROM kimi_assistant_usage GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`},
	{"users",
		`SELECT user_id, calls, prompt_tokens, completion_tokens, cached_tokens, turns FROM kimi_assistant_usage_users ORDER BY 1`,
		`SELECT user_id, sum(calls), sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(turns)
		FROM kimi_assistant_usage WHERE day >= (SELECT first_day FROM kimi_assistant_usage_window) GROUP BY 1
		HAVING sum(calls) + sum(prompt_tokens) + sum(completion_tokens) + sum(cached_tokens) + sum(turns) > 0 ORDER BY 1`},
	{"latency",
		`SELECT day, ms, count FROM kimi_assistant_turn_latency ORDER BY 1, 2`,
		`SELECT date(started_ms / 1000, 'unixepoch'),
			CASE WHEN duration_ms < 1000 THEN duration_ms WHEN duration_ms % 100 >= 50 THEN duration_ms - duration_ms % 100 + 100 ELSE duration_ms - duration_ms % 100 END,
			count(*)
		FROM kimi_assistant_turns WHERE status <> 'running' GROUP BY 1, 2 ORDER BY 1, 2`},
	{"tools",
		`SELECT day, tool, module, calls, errors FROM kimi_assistant_tool_usage ORDER BY 1, 2, 3`,
		`SELECT date(created_ms / 1000, 'unixepoch'), tool, module, count(*), count(*) FILTER (WHERE outcome = 'failed')
		FROM kimi_assistant_tool_calls WHERE outcome IN ('ok', 'truncated', 'failed') GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`},
}

func queryAll(t *testing.T, db *sql.DB, q string) [][]any {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var all [][]any
	for rows.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		all = append(all, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

func checkRollups(t *testing.T, db *sql.DB, after string) {
	t.Helper()
	for _, c := range rollupChecks {
		if got, want := queryAll(t, db, c.rollup), queryAll(t, db, c.want); !reflect.DeepEqual(got, want) {
			t.Errorf("after %.80s: %s roll-up\n%v\nwant\n%v", after, c.name, got, want)
		}
	}
}

// TestMigration00016Rollups: migration 00016 fills its roll-ups from the
// rows already there, and its triggers keep each equal to the aggregate of
// the rows under it through inserts, upserts, updates and deletes; its
// Down leaves exactly the schema before it, and Up applies again.
func TestMigration00016Rollups(t *testing.T) {
	ctx := context.Background()
	ref, refP := migrationtest.Open(t, "fifteen.db")
	if _, err := refP.UpTo(ctx, 15); err != nil {
		t.Fatal(err)
	}
	want := migrationtest.Schema(t, ref)

	db, p := migrationtest.Open(t, "sixteen.db")
	if _, err := p.UpTo(ctx, 15); err != nil {
		t.Fatal(err)
	}
	exec := func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms) VALUES (1, 10, 100, 1000, 7, 1, 1)`,
		`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms, duration_ms)
		VALUES (1, 1, 'message', 1000, 7, 10, 100, 'done', 1917000000000, 850), (2, 1, 'message', 1001, 7, 10, 100, 'failed', 1917000000000, 12345),
			(3, 1, 'message', 1002, 7, 10, 100, 'done', 1917100000000, 851)`,
		`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, module, outcome, created_ms) VALUES
			(1, 1, 'give_kudos', 'kudos', 'ok', 1917000000000), (1, 2, 'give_kudos', 'kudos', 'failed', 1917000000000),
			(1, 3, 'give_kudos', 'kudos', 'not_activated', 1917000000000), (2, 1, 'browse_tools', '', 'truncated', 1917000000000)`,
		`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, calls, prompt_tokens, completion_tokens, cached_tokens, turns) VALUES
			('2030-09-30', 10, 7, 'kimi-k2', 2, 1000, 100, 10, 1), ('2030-09-30', 10, 8, 'kimi-k2', 1, 500, 50, 0, 1),
			('2030-10-01', 20, 7, '', 0, 0, 0, 0, 1)`,
	} {
		exec(q)
	}
	if _, err := p.UpTo(ctx, 16); err != nil {
		t.Fatal(err)
	}
	checkRollups(t, db, "the migration's fill")
	if n := len(queryAll(t, db, `SELECT * FROM kimi_assistant_usage_daily`)); n != 2 {
		t.Errorf("daily roll-up has %d rows, want 2 (guild 10's day, guild 20's)", n)
	}
	// The top users' window counts nothing until a report moves it; here
	// it starts on 2030-09-30 as the report's rebuild would leave it.
	exec(`UPDATE kimi_assistant_usage_window SET first_day = '2030-09-30'`)
	exec(`INSERT INTO kimi_assistant_usage_users SELECT user_id, sum(calls), sum(prompt_tokens), sum(completion_tokens), sum(cached_tokens), sum(turns)
		FROM kimi_assistant_usage WHERE day >= '2030-09-30' GROUP BY user_id`)
	for _, q := range []string{
		`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, calls, prompt_tokens) VALUES ('2030-10-01', 10, 7, 'kimi-k2', 1, 40)
			ON CONFLICT DO UPDATE SET calls = calls + 1, prompt_tokens = prompt_tokens + excluded.prompt_tokens`,
		`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, calls, prompt_tokens) VALUES ('2030-10-01', 10, 7, 'kimi-k2', 1, 40)
			ON CONFLICT DO UPDATE SET calls = calls + 1, prompt_tokens = prompt_tokens + excluded.prompt_tokens`,
		`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, turns) VALUES ('2030-09-29', 10, 9, 'kimi-k2', 1)`, // before the window
		`UPDATE kimi_assistant_usage SET day = '2030-09-28' WHERE user_id = 8`,                                               // leaves the window
		`UPDATE kimi_assistant_usage SET day = '2030-10-02' WHERE user_id = 9`,                                               // enters it
		`UPDATE kimi_assistant_usage SET model = 'kimi-fallback' WHERE day = '2030-10-01' AND guild_id = 20`,
		`DELETE FROM kimi_assistant_usage WHERE user_id = 7 AND day = '2030-09-30'`,
		`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms)
		VALUES (4, 1, 'message', 1003, 7, 10, 100, 'running', 1917100000000)`,
		`UPDATE kimi_assistant_turns SET status = 'done', duration_ms = 851 WHERE id = 4`,
		`UPDATE kimi_assistant_turns SET duration_ms = 1999 WHERE id = 3`,
		`UPDATE kimi_assistant_turns SET prompt_tokens = 5 WHERE id = 3`,
		`DELETE FROM kimi_assistant_turns WHERE id = 2`,
		`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, module, outcome, created_ms) VALUES (4, 1, 'give_kudos', 'kudos', 'failed', 1917100000000)`,
		`UPDATE kimi_assistant_tool_calls SET outcome = 'ok' WHERE turn_id = 4`,
		`UPDATE kimi_assistant_tool_calls SET outcome = 'ok' WHERE outcome = 'not_activated'`,
		`DELETE FROM kimi_assistant_tool_calls WHERE turn_id = 1 AND seq = 2`,
		`DELETE FROM kimi_assistant_conversations`, // its turns and their calls go with it
		`DELETE FROM kimi_assistant_usage`,
	} {
		exec(q)
		checkRollups(t, db, q)
	}
	for _, table := range []string{"kimi_assistant_usage_daily", "kimi_assistant_usage_users", "kimi_assistant_turn_latency", "kimi_assistant_tool_usage"} {
		if n := len(queryAll(t, db, `SELECT * FROM `+table)); n != 0 {
			t.Errorf("%s keeps %d rows after every row under it went", table, n)
		}
	}
	if _, err := p.DownTo(ctx, 15); err != nil {
		t.Fatalf("down to 15: %v", err)
	}
	if got := migrationtest.Schema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00016's Down:\n%q\nwant (version 15):\n%q", got, want)
	}
	if _, err := p.UpTo(ctx, 16); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
