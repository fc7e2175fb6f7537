package results

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

// TestFailingDispatchStepsBackOffAndLogOnceAMinute: while another program
// holds the write lock every step fails; the steps back off (1 s, 2 s, 4 s…)
// and log one line a minute with the count left out, not one a second.
func TestFailingDispatchStepsBackOffAndLogOnceAMinute(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kimi.db")
	st, err := store.Open(ctx, path, store.Options{Logger: slog.New(slog.DiscardHandler), WriteWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	var logs bytes.Buffer
	// Not started: the test runs the steps itself, on its clock.
	s, err := New(Options{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(ctx) })
	other, err := sql.Open("sqlite", store.DSN(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	held, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(`UPDATE kimi_settings SET key = key WHERE 0`); err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if got := s.step().Sub(clk.Now()); got != want {
			t.Errorf("failed step %d: next in %v, want %v", i+1, got, want)
		}
	}
	const line = "dispatch step failed"
	if n := strings.Count(logs.String(), line); n != 1 {
		t.Errorf("%d lines for 3 failed steps within a minute, want 1:\n%s", n, logs.String())
	}
	clk.Advance(time.Minute)
	s.step()
	if n := strings.Count(logs.String(), line); n != 2 || !strings.Contains(logs.String(), "suppressed=2") {
		t.Errorf("a minute later: %d lines, want 2, the second with suppressed=2:\n%s", n, logs.String())
	}
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	s.step()
	if s.fails.Count() != 0 {
		t.Errorf("failures = %d after a step succeeded, want 0", s.fails.Count())
	}
}
