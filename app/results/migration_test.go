package results

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pressly/goose/v3"

	kimi "github.com/kimiapp/kimi"
)

// migrationSchema is every object of sqlite_schema but goose's own table,
// as "type name: sql".
func migrationSchema(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT type, name, COALESCE(sql, '') FROM sqlite_schema WHERE name NOT LIKE 'goose%' AND name NOT LIKE 'sqlite_%' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, name, q string
		if err := rows.Scan(&typ, &name, &q); err != nil {
			t.Fatal(err)
		}
		out = append(out, typ+" "+name+": "+q)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigration00008Down: migration 00008's Down, run over a database with
// subscriptions, publications, notifications and counts in it, leaves
// exactly the schema of version 7 (every table, index and trigger it made
// is gone), and Up applies again.
func TestMigration00008Down(t *testing.T) {
	ctx := context.Background()
	open := func(name string) (*sql.DB, *goose.Provider) {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), name)+"?_pragma=foreign_keys(1)")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { _ = db.Close() })
		p, err := goose.NewProvider(goose.DialectSQLite3, db, kimi.MigrationsFS(), goose.WithDisableGlobalRegistry(true))
		if err != nil {
			t.Fatal(err)
		}
		return db, p
	}
	ref, refP := open("seven.db")
	if _, err := refP.UpTo(ctx, 7); err != nil {
		t.Fatal(err)
	}
	want := migrationSchema(t, ref)

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
	if got := migrationSchema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00008's Down:\n%q\nwant (version 7):\n%q", got, want)
	}
	if _, err := p.UpTo(ctx, 8); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
