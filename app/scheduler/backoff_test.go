package scheduler

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

func TestFailingStepsBackOffAndLogOneLinePerCauseAMinute(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kimi.db")
	migrated := openStore(t, path)
	migrated.Close()
	st, err := store.Open(ctx, path, store.Options{Logger: slog.New(slog.DiscardHandler), WriteWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := newClock()
	var logs bytes.Buffer
	// Not started: the test runs the steps itself, on its clock.
	s, err := New(Options{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(ctx) })
	// Another program holds the write lock: every step fails alike.
	other, err := sql.Open("sqlite", store.DSN(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	held, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(`UPDATE kimi_scheduler_runner SET id = id WHERE 0`); err != nil {
		t.Fatal(err)
	}
	const line = "scheduler step failed"
	wants := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, time.Minute, time.Minute}
	for i, want := range wants {
		if got := s.step().Sub(clk.Now()); got != want {
			t.Errorf("failed step %d: next step in %v, want %v", i+1, got, want)
		}
	}
	if n := strings.Count(logs.String(), line); n != 1 {
		t.Errorf("%d lines for %d failed steps within a minute, want 1:\n%s", n, len(wants), logs.String())
	}
	clk.Advance(time.Minute)
	s.step()
	if n := strings.Count(logs.String(), line); n != 2 || !strings.Contains(logs.String(), "suppressed=7") {
		t.Errorf("a minute later: %d lines, want 2, the second with suppressed=7:\n%s", n, logs.String())
	}
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	s.step()
	if s.fails.Count() != 0 || !strings.Contains(logs.String(), "scheduler steps succeed again") {
		t.Errorf("after the lock was released: failures = %d, log:\n%s", s.fails.Count(), logs.String())
	}
	// The backoff starts over at the next failure.
	held, err = other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	if _, err := held.Exec(`UPDATE kimi_scheduler_runner SET id = id WHERE 0`); err != nil {
		t.Fatal(err)
	}
	if got := s.step().Sub(clk.Now()); got != time.Second {
		t.Errorf("first failure after a success: next step in %v, want 1s", got)
	}
}
