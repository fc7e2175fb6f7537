package results

import (
	"database/sql"
	"testing"
)

// TestAcknowledgedTwiceInAStepCountsOnce: two acknowledgements of one
// notification in a step — a claim whose lease ran out while its handler
// ran (token a) and the claim that took the row again (token b) — write
// the row once and count its move once (the batch's RETURNING names rows
// by id, so the second is settled on its own under its token), and the
// counts stay right for the deletes that follow (a revocation).
func TestAcknowledgedTwiceInAStepCountsOnce(t *testing.T) {
	e := newEnv(t)
	svc := e.newService()
	now := e.clk.Now()
	ms := now.UnixMilli()
	const id = "0123456789abcdef0123456789abcdef"
	err := e.st.Write(e.ctx, func(tx *sql.Tx) error {
		for _, q := range []struct {
			s    string
			args []any
		}{
			{`INSERT INTO kimi_result_subscriptions (module, name, guild_id, created_ms) VALUES ('kudos', 'digest', 5, ?)`, []any{ms}},
			{`INSERT INTO kimi_result_publications (run_id, task_id, revision, guild_id, owner_id, origin_channel, published_ms, expires_ms, messages)
				VALUES ('run-1', 'task-1', 1, 5, 9, 0, ?, ?, '[]')`, []any{ms, ms + Retention.Milliseconds()}},
			{`INSERT INTO kimi_result_notifications (id, run_id, module, name, guild_id, published_ms, expires_ms, lease_token, lease_until_ms)
				VALUES (?, 'run-1', 'kudos', 'digest', 5, ?, ?, 'tokenb', ?)`, []any{id, ms, ms + Retention.Milliseconds(), ms + 60_000}},
			{`INSERT INTO kimi_result_publications (run_id, task_id, revision, guild_id, owner_id, origin_channel, published_ms, expires_ms, messages)
				VALUES ('run-2', 'task-1', 1, 5, 9, 0, ?, ?, '[]')`, []any{ms, ms + Retention.Milliseconds()}},
			{`INSERT INTO kimi_result_notifications (id, run_id, module, name, guild_id, published_ms, expires_ms)
				VALUES ('fedcba9876543210fedcba9876543210', 'run-2', 'kudos', 'digest', 5, ?, ?)`, []any{ms, ms + Retention.Milliseconds()}},
		} {
			if _, err := tx.Exec(q.s, q.args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	k := SubKey{"kudos", "digest", 5}
	a := &claim{id: id, token: "tokena", key: k, prev: StatusPending}
	b := &claim{id: id, token: "tokenb", key: k, prev: StatusPending}
	d := countDeltas{}
	var ok []bool
	err = e.st.Write(e.ctx, func(tx *sql.Tx) error {
		var err error
		ok, err = svc.settleAll(e.ctx, tx, []outcome{{c: a, status: StatusAcknowledged}, {c: b, status: StatusAcknowledged}}, now, d)
		if err != nil {
			return err
		}
		return d.write(e.ctx, tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := e.count(`SELECT COALESCE((SELECT n FROM kimi_result_counts WHERE module = 'kudos' AND status = 'acknowledged'), 0)`)
	real := e.count(`SELECT count(*) FROM kimi_result_notifications WHERE status = 'acknowledged'`)
	if ok[0] || !ok[1] || stored != real || real != 1 {
		t.Errorf("written = %v (want the second token's only); acknowledged counted %d, rows %d (want 1)", ok, stored, real)
	}
	if err := e.st.Write(e.ctx, func(tx *sql.Tx) error { return e.svc.RevokeRun(e.ctx, tx, "run-2") }); err != nil {
		t.Errorf("revoking the other run after the drift: %v", err)
	}
}
