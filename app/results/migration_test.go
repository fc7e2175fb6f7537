package results

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
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

// TestMigration00018: Up turns the rows stored as delivering into pending
// rows that keep their lease (and moves their counts with them), so each
// subscription's counts still equal its rows; Down leaves exactly the
// schema of version 17, and Up applies again.
func TestMigration00018(t *testing.T) {
	ctx := context.Background()
	ref, refP := migrationtest.Open(t, "seventeen.db")
	if _, err := refP.UpTo(ctx, 17); err != nil {
		t.Fatal(err)
	}
	want := migrationtest.Schema(t, ref)

	db, p := migrationtest.Open(t, "eighteen.db")
	if _, err := p.UpTo(ctx, 17); err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		`INSERT INTO kimi_result_subscriptions (module, name, guild_id, created_ms) VALUES ('kudos', 'digest', 42, 1), ('kudos', 'digest', 43, 1), ('kudos', 'other', 42, 1)`,
		`INSERT INTO kimi_result_publications (run_id, task_id, revision, guild_id, owner_id, published_ms, expires_ms, messages) VALUES ('r1', 't', 1, 42, 7, 1, 2, '[]'), ('r2', 't', 1, 43, 7, 1, 2, '[]')`,
	}
	for i, row := range []struct {
		run, name string
		guild     int
		status    string
	}{{"r1", "digest", 42, "delivering"}, {"r1", "other", 42, "pending"}, {"r2", "digest", 43, "delivering"}, {"r2", "digest", 42, "acknowledged"}} {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO kimi_result_notifications (id, run_id, module, name, guild_id, published_ms, expires_ms, status, lease_token, lease_until_ms)
			VALUES ('%032x', '%s', 'kudos', '%s', %d, 1, 2, '%s', CASE WHEN '%[5]s' = 'delivering' THEN 'tok' ELSE '' END, CASE WHEN '%[5]s' = 'delivering' THEN 99 ELSE 0 END)`,
			i+1, row.run, row.name, row.guild, row.status))
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := p.UpTo(ctx, 18); err != nil {
		t.Fatalf("up to 18: %v", err)
	}
	counts := func(q string) map[string]int {
		t.Helper()
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]int{}
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				got[k] = n
			}
		}
		return got
	}
	kept := counts(`SELECT guild_id || ' ' || status, sum(n) FROM kimi_result_counts GROUP BY 1`)
	rows := counts(`SELECT guild_id || ' ' || status, COUNT(*) FROM kimi_result_notifications GROUP BY 1`)
	if wantRows := map[string]int{"42 pending": 2, "43 pending": 1, "42 acknowledged": 1}; !maps.Equal(rows, wantRows) || !maps.Equal(kept, wantRows) {
		t.Errorf("after Up: rows %v, counts %v; want both %v", rows, kept, wantRows)
	}
	if leased := counts(`SELECT lease_token, COUNT(*) FROM kimi_result_notifications INDEXED BY kimi_result_notifications_leased WHERE lease_token <> '' GROUP BY 1`); !maps.Equal(leased, map[string]int{"tok": 2}) {
		t.Errorf("leases after Up = %v, want the two claims' kept", leased)
	}
	if _, err := p.DownTo(ctx, 17); err != nil {
		t.Fatalf("down to 17: %v", err)
	}
	if got := migrationtest.Schema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00018's Down:\n%q\nwant (version 17):\n%q", got, want)
	}
	if _, err := p.UpTo(ctx, 18); err != nil {
		t.Fatalf("up again: %v", err)
	}
}

// TestMigration00019: the due index holds the open rows only (an
// acknowledgement takes its row out of it), and Down gives back 00018's
// schema.
func TestMigration00019(t *testing.T) {
	ctx := context.Background()
	ref, refP := migrationtest.Open(t, "eighteen.db")
	if _, err := refP.UpTo(ctx, 18); err != nil {
		t.Fatal(err)
	}
	want := migrationtest.Schema(t, ref)

	db, p := migrationtest.Open(t, "nineteen.db")
	if _, err := p.UpTo(ctx, 18); err != nil {
		t.Fatal(err)
	}
	stmts := []string{
		`INSERT INTO kimi_result_subscriptions (module, name, guild_id, created_ms) VALUES ('kudos', 'digest', 42, 1)`,
	}
	for i, status := range []string{"pending", "retry", "blocked", "acknowledged", "acknowledged", "expired"} {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO kimi_result_publications (run_id, task_id, revision, guild_id, owner_id, published_ms, expires_ms, messages)
			VALUES ('r%d', 't', 1, 42, 7, 1, 2, '[]')`, i),
			fmt.Sprintf(`INSERT INTO kimi_result_notifications (id, run_id, module, name, guild_id, published_ms, expires_ms, status)
			VALUES ('%032x', 'r%d', 'kudos', 'digest', 42, 1, 2, '%s')`, i+1, i, status))
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := p.UpTo(ctx, 19); err != nil {
		t.Fatalf("up to 19: %v", err)
	}
	inDue := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM kimi_result_notifications INDEXED BY kimi_result_notifications_due
			WHERE status IN ('pending', 'retry', 'blocked') AND status >= ''`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var entries int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_index_info('kimi_result_notifications_due')`).Scan(&entries); err != nil || entries != 4 {
		t.Fatalf("the due index has %d columns (%v), want 4", entries, err)
	}
	if n := inDue(); n != 3 {
		t.Fatalf("%d rows read through the due index, want the 3 open ones", n)
	}
	var partial int
	if err := db.QueryRow(`SELECT partial FROM pragma_index_list('kimi_result_notifications') WHERE name = 'kimi_result_notifications_due'`).Scan(&partial); err != nil || partial != 1 {
		t.Fatalf("the due index is not partial (%d, %v)", partial, err)
	}
	if _, err := db.Exec(`UPDATE kimi_result_notifications SET status = 'acknowledged' WHERE status = 'pending'`); err != nil {
		t.Fatal(err)
	}
	if n := inDue(); n != 2 {
		t.Fatalf("after an acknowledgement %d rows in the due index, want 2", n)
	}
	if _, err := p.DownTo(ctx, 18); err != nil {
		t.Fatalf("down to 18: %v", err)
	}
	if got := migrationtest.Schema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00019's Down:\n%q\nwant (version 18):\n%q", got, want)
	}
	if _, err := p.UpTo(ctx, 19); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
