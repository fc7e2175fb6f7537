package tasks

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/kimiapp/kimi/app/internal/migrationtest"
)

// TestMigration00009Down: migration 00009's Down, run over a database
// with a task, its revision and file, a run and a post in it, leaves
// exactly the schema of version 8, and Up applies again. Its CHECKs
// refuse what the store never writes.
func TestMigration00009Down(t *testing.T) {
	ctx := context.Background()
	open := func(name string) (*sql.DB, *goose.Provider) { return migrationtest.Open(t, name) }
	ref, refP := open("eight.db")
	if _, err := refP.UpTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	want := migrationtest.Schema(t, ref)

	db, p := open("nine.db")
	if _, err := p.UpTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	const id = "0123456789abcdef0123456789abcdef"
	for _, q := range []string{
		`INSERT INTO kimi_tasks (id, guild_id, name, owner_id, state, revision, last_due_ms, next_due_ms, created_ms, updated_ms) VALUES ('` + id + `', 42, 'n', 7, 'active', 1, 1, 2, 1, 1)`,
		`INSERT INTO kimi_task_revisions (task_id, revision, definition, actor, created_ms) VALUES ('` + id + `', 1, '{}', 'alice', 1)`,
		`INSERT INTO kimi_task_files (task_id, revision, seq, name, bytes, size) VALUES ('` + id + `', 1, 1, 'a.txt', x'00', 1)`,
		`INSERT INTO kimi_task_runs (id, task_id, revision, due_ms, status, created_ms) VALUES ('` + id + `', '` + id + `', 1, 2, 'pending', 1)`,
		`INSERT INTO kimi_task_posts (run_id, seq, chunk_index, chunk_total, channel_id, kind, content, status) VALUES ('` + id + `', 1, 1, 1, 100, 'post', 'hi', 'pending')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		`INSERT INTO kimi_tasks (id, guild_id, name, owner_id, state, revision, last_due_ms, created_ms, updated_ms) VALUES ('XYZ', 42, 'n', 7, 'active', 1, 1, 1, 1)`,
		`INSERT INTO kimi_tasks (id, guild_id, name, owner_id, state, revision, last_due_ms, created_ms, updated_ms) VALUES ('` + strings.Repeat("a", 32) + `', 42, '', 7, 'active', 1, 1, 1, 1)`,
		`INSERT INTO kimi_tasks (id, guild_id, name, owner_id, state, revision, last_due_ms, created_ms, updated_ms) VALUES ('` + strings.Repeat("a", 32) + `', 42, 'n', 7, 'sleeping', 1, 1, 1, 1)`,
		`INSERT INTO kimi_task_runs (id, task_id, revision, due_ms, status, created_ms) VALUES ('` + strings.Repeat("b", 32) + `', '` + id + `', 1, 2, 'done', 1)`,
		`INSERT INTO kimi_task_runs (id, task_id, revision, due_ms, status, created_ms) VALUES ('` + strings.Repeat("b", 32) + `', '` + id + `', 9, 2, 'pending', 1)`,
		`INSERT INTO kimi_task_posts (run_id, seq, chunk_index, chunk_total, channel_id, kind, content, status) VALUES ('` + id + `', 2, 1, 1, 100, 'post', 'hi', 'lost')`,
		`INSERT INTO kimi_task_posts (run_id, seq, chunk_index, chunk_total, channel_id, kind, content, status) VALUES ('` + id + `', 2, 1, 1, 100, 'post', '` + strings.Repeat("x", 2001) + `', 'pending')`,
	} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("accepted: %.160s", q)
		}
	}
	if _, err := p.DownTo(ctx, 8); err != nil {
		t.Fatalf("down to 8: %v", err)
	}
	if got := migrationtest.Schema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00009's Down:\n%q\nwant (version 8):\n%q", got, want)
	}
	if _, err := p.UpTo(ctx, 9); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
