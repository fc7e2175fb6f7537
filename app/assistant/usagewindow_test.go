package assistant

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
)

// TestUsageWindowMovesAStepPerWrite: the top users' window moves towards
// its first day one write transaction per day that has rows (and one for
// the empty days left at the end), backward from the migration's
// '9999-12-31' and forward again, and after each step the table holds
// exactly the sums from the window's first day on.
func TestUsageWindowMovesAStepPerWrite(t *testing.T) {
	ctx := context.Background()
	c, st, _ := newConversations(t)
	days := []string{"2030-01-01", "2030-01-02", "2030-01-05", "2030-01-06", "2030-02-01"}
	err := st.Write(ctx, func(tx *sql.Tx) error {
		for i, d := range days {
			for u := range 3 {
				if _, err := tx.ExecContext(ctx, `INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, calls, prompt_tokens, completion_tokens, turns)
					VALUES (?, 10, ?, 'm1', 1, ?, ?, 1)`, d, 100+u, 10*(i+1), u+1); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	users := rollupChecks[1]
	window := func() string {
		var d string
		if err := st.Reader().QueryRow(`SELECT first_day FROM kimi_assistant_usage_window`).Scan(&d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	steps := 0
	for _, m := range []struct {
		first string
		steps int // write transactions
	}{
		{"2030-01-02", 4}, // in come 02-01, 01-06, 01-05, 01-02 (with the empty days after each)
		{"2030-01-06", 2}, // out go 01-02, then 01-05 with the empty days before it
		{"2030-01-03", 2}, // in comes 01-05, then the empty days before it
		{"2030-03-01", 4}, // out go 01-05, 01-06, 02-01, then the empty days to 03-01
	} {
		for window() != m.first {
			if err := st.Write(ctx, func(tx *sql.Tx) error { return usageWindowStep(ctx, tx, m.first) }); err != nil {
				t.Fatal(err)
			}
			steps++
			if got, want := queryAll(t, st.Reader(), users.rollup), queryAll(t, st.Reader(), users.want); !reflect.DeepEqual(got, want) {
				t.Fatalf("window at %s: users %v, sums %v", window(), got, want)
			}
			if steps > 100 {
				t.Fatal("the window does not reach its first day")
			}
		}
		if steps != m.steps {
			t.Errorf("to %s in %d steps, want %d", m.first, steps, m.steps)
		}
		steps = 0
		if err := c.advanceUsageWindow(ctx, m.first); err != nil || window() != m.first {
			t.Fatalf("advanceUsageWindow(%s) at %s: %v", m.first, window(), err)
		}
	}
}
