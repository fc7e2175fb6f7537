package proposals

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/internal/migrationtest"
)

// TestMigration00017RolledBack: migration 00017 keeps every proposal and
// event (ids too), admits the rolled_back state and event, keeps the
// events' cascade, and its Down leaves exactly the schema of version 16,
// a rolled-back proposal reading rejected; Up applies again.
func TestMigration00017RolledBack(t *testing.T) {
	ctx := context.Background()
	ref, refP := migrationtest.Open(t, "sixteen.db")
	if _, err := refP.UpTo(ctx, 16); err != nil {
		t.Fatal(err)
	}
	want := migrationtest.Schema(t, ref)

	db, p := migrationtest.Open(t, "seventeen.db")
	if _, err := p.UpTo(ctx, 16); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) error {
		t.Helper()
		_, err := db.Exec(q, args...)
		return err
	}
	must := func(q string, args ...any) {
		t.Helper()
		if err := exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rev := strings.Repeat("a", 64)
	insert := func(id, state string) {
		t.Helper()
		must(`INSERT INTO kimi_proposals (id, guild_id, target, module, summary, content, content_revision, base_exists, base_content, base_revision,
			actor_user_id, actor_source, actor_channel_id, state, created_ms, updated_ms) VALUES (?, 1, 'guild:1:kudos', 'kudos', 's', 'c', ?, 0, '', ?, 7, 'kudos:setup', 0, ?, 1, 1)`,
			id, rev, rev, state)
	}
	idA, idB := strings.Repeat("a", 32), strings.Repeat("b", 32)
	insert(idA, "applied")
	insert(idB, "pending")
	must(`INSERT INTO kimi_proposal_events (id, proposal_id, at_ms, kind, actor, source, detail, before_revision, after_revision) VALUES
		(5, ?, 1, 'created', 'kimi', 'kudos', '', '', ''), (9, ?, 2, 'applied', 'admin', 'web', '', '', ''), (11, ?, 1, 'created', 'kimi', 'kudos', '', '', '')`, idA, idA, idB)
	if err := exec(`UPDATE kimi_proposals SET state = 'rolled_back' WHERE id = ?`, idA); err == nil {
		t.Fatal("version 16 admits the rolled_back state")
	}
	if _, err := p.UpTo(ctx, 17); err != nil {
		t.Fatal(err)
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM kimi_proposals`); n != 2 {
		t.Errorf("%d proposals after the migration, want 2", n)
	}
	if n := count(`SELECT sum(id) FROM kimi_proposal_events`); n != 25 {
		t.Errorf("event ids sum to %d after the migration, want 25 (5, 9, 11 kept)", n)
	}
	must(`UPDATE kimi_proposals SET state = 'rolled_back', decision_reason = '' WHERE id = ?`, idA)
	must(`INSERT INTO kimi_proposal_events (proposal_id, at_ms, kind, actor, source, detail, before_revision, after_revision) VALUES (?, 3, 'rolled_back', 'admin', 'web', '', '', '')`, idA)
	if n := count(`SELECT max(id) FROM kimi_proposal_events`); n != 12 {
		t.Errorf("the next event id is %d, want 12 (the sequence continues)", n)
	}
	if err := exec(`UPDATE kimi_proposals SET state = 'undone' WHERE id = ?`, idA); err == nil {
		t.Error("version 17 admits any state")
	}
	must(`DELETE FROM kimi_proposals WHERE id = ?`, idB)
	if n := count(`SELECT count(*) FROM kimi_proposal_events WHERE proposal_id = ?`, idB); n != 0 {
		t.Errorf("deleting a proposal left %d of its events (no cascade)", n)
	}
	if _, err := p.DownTo(ctx, 16); err != nil {
		t.Fatalf("down to 16: %v", err)
	}
	if got := migrationtest.Schema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00017's Down:\n%q\nwant (version 16):\n%q", got, want)
	}
	var state, reason string
	if err := db.QueryRow(`SELECT state, decision_reason FROM kimi_proposals WHERE id = ?`, idA).Scan(&state, &reason); err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	if state != "rejected" || reason != "rolled back after it was applied" {
		t.Errorf("after Down the rolled-back proposal is %q (%q), want rejected with its reason", state, reason)
	}
	if n := count(`SELECT count(*) FROM kimi_proposal_events WHERE proposal_id = ? AND kind = 'rejected'`, idA); n != 1 {
		t.Errorf("after Down %d rejected events, want the rolled_back one as rejected", n)
	}
	if _, err := p.UpTo(ctx, 17); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
