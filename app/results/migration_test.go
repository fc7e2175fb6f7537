package results

import (
	"context"
	"database/sql"
	"slices"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/kimiapp/kimi/app/internal/migrationtest"
)

// TestMigration00008Down: migration 00008's Down, run over a database with
// subscriptions, publications, notifications and counts in it, leaves
// exactly the schema of version 7 (every table, index and trigger it made
// is gone), and Up applies again.
func TestMigration00008Down(t *testing.T) {
	ctx := context.Background()
	open := func(name string) (*sql.DB, *goose.Provider) { return migrationtest.Open(t, name) }
	ref, refP := open("seven.db")
	if _, err := refP.UpTo(ctx, 7); err != nil {
		t.Fatal(err)
	}
	want := migrationtest.Schema(t, ref)

	db, p := open("eight.db")
	if _, err := p.UpTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO kimi_result_subscriptions (module, name, guild_id, created_ms) VALUES ('kudos', 'digest', 42, 1)`,
		`INSERT INTO kimi_result_publications (run_id, task_id, revision, guild_id, owner_id, published_ms, expires_ms, messages) VALUES ('r', 't', 1, 42, 7, 1, 2, '[]')`,
		`INSERT INTO kimi_result_notifications (id, run_id, module, name, guild_id, published_ms, expires_ms) VALUES ('` + "0123456789abcdef0123456789abcdef" + `', 'r', 'kudos', 'digest', 42, 1, 2)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := p.DownTo(ctx, 7); err != nil {
		t.Fatalf("down to 7: %v", err)
	}
	if got := migrationtest.Schema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00008's Down:\n%q\nwant (version 7):\n%q", got, want)
	}
	if _, err := p.UpTo(ctx, 8); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
