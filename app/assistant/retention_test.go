package assistant

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
)

// seedTranscript writes conversation id (guild, owner) last active at
// updated: one turn with 50 prompt tokens, two messages, one delivered
// reference and one tool call with excerpts, plus a usage roll-up row.
func seedTranscript(t *testing.T, st *store.Store, id, guild, owner int64, updated time.Time) {
	t.Helper()
	ms := updated.UnixMilli()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, []any{id, guild, 100 + id, 1000 + id, owner, ms, ms}},
		{`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms, prompt_tokens)
			VALUES (?, ?, 'message', ?, ?, ?, ?, 'done', ?, 50)`, []any{id, id, 1000 + id, owner, guild, 100 + id, ms}},
		{`INSERT INTO kimi_assistant_messages (conversation_id, turn_id, role, author_id, author_name, content, created_ms)
			VALUES (?, ?, 'user', ?, 'member', 'a question', ?), (?, ?, 'assistant', 0, 'Kimi', 'an answer', ?)`,
			[]any{id, id, owner, ms, id, id, ms}},
		{`INSERT INTO kimi_assistant_delivered (message_id, conversation_id, channel_id, created_ms) VALUES (?, ?, ?, ?)`,
			[]any{5000 + id, id, 100 + id, ms}},
		{`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, outcome, arguments, result, created_ms)
			VALUES (?, 1, 'search', 'ok', '{"q":"x"}', 'found', ?)`, []any{id, ms}},
		{`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, calls, prompt_tokens, turns)
			VALUES (?, ?, ?, 'm', 1, 50, 1) ON CONFLICT DO UPDATE SET turns = turns + 1`,
			[]any{updated.UTC().Format(time.DateOnly), guild, owner}},
	} {
		if _, err := st.Writer().Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
}

// transcriptCounts is what conversation id still holds: messages,
// delivered references, tool calls with an excerpt, turns and tool-call rows.
type transcriptCounts struct{ messages, delivered, excerpts, turns, calls int }

func countTranscript(t *testing.T, st *store.Store, id int64) transcriptCounts {
	t.Helper()
	var c transcriptCounts
	if err := st.Reader().QueryRow(`SELECT
		(SELECT count(*) FROM kimi_assistant_messages WHERE conversation_id = ?1),
		(SELECT count(*) FROM kimi_assistant_delivered WHERE conversation_id = ?1),
		(SELECT count(*) FROM kimi_assistant_tool_calls x JOIN kimi_assistant_turns t ON t.id = x.turn_id
			WHERE t.conversation_id = ?1 AND (x.arguments != '' OR x.result != '')),
		(SELECT count(*) FROM kimi_assistant_turns WHERE conversation_id = ?1 AND prompt_tokens = 50),
		(SELECT count(*) FROM kimi_assistant_tool_calls x JOIN kimi_assistant_turns t ON t.id = x.turn_id WHERE t.conversation_id = ?1)`, id).
		Scan(&c.messages, &c.delivered, &c.excerpts, &c.turns, &c.calls); err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	fullTranscript  = transcriptCounts{messages: 2, delivered: 1, excerpts: 1, turns: 1, calls: 1}
	purgedStructure = transcriptCounts{turns: 1, calls: 1}
)

// TestRetentionJob: the retention job, a core job on the real durable
// scheduler with a controlled clock, runs at start and deletes the
// transcripts (messages, delivered references, tool-call excerpts) of the
// conversations last active longer ago than the setting; the turn and
// tool-call rows and the usage roll-up stay, a newer conversation keeps its
// transcript, 0 keeps everything; each run schedules the next a day on, and
// the plan says what the next run deletes.
func TestRetentionJob(t *testing.T) {
	tests := []struct {
		name      string
		days      int // -1: nothing stored (the default, 30)
		old, new  transcriptCounts
		purged    int
		plannedOn int // conversations the plan says are due, before the run
	}{
		{"default 30 days", -1, purgedStructure, fullTranscript, 1, 1},
		{"0 keeps everything", 0, fullTranscript, fullTranscript, 0, 0},
		{"7 days takes both", 7, purgedStructure, purgedStructure, 2, 2},
		{"365 days keeps both", 365, fullTranscript, fullTranscript, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := openStoreAt(t, filepath.Join(t.TempDir(), "kimi.db"))
			t.Cleanup(func() { st.Close() })
			clk := &clock{t: time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)}
			if tt.days >= 0 {
				if err := settings.SaveAssistantRetention(ctx, st, settings.AssistantRetentionUpdate{Days: tt.days}, settings.Actor{Name: "ann"}); err != nil {
					t.Fatal(err)
				}
			}
			seedTranscript(t, st, 1, 10, 7, clk.now().Add(-40*24*time.Hour))
			seedTranscript(t, st, 2, 10, 8, clk.now().Add(-10*24*time.Hour))

			sched, err := scheduler.New(scheduler.Options{Store: st, Logger: slog.New(slog.DiscardHandler), Now: clk.now})
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewRetention(RetentionOptions{Store: st, Jobs: sched, Logger: slog.New(slog.DiscardHandler), Now: clk.now})
			if err != nil {
				t.Fatal(err)
			}
			type ran struct {
				res RetentionResult
				err error
			}
			runs := make(chan ran, 4)
			r.onRun = func(res RetentionResult, err error) { runs <- ran{res, err} }
			plan, err := r.Plan(ctx)
			if err != nil || plan.Pending != tt.plannedOn || !plan.NextRun.IsZero() {
				t.Fatalf("plan before start = %+v, %v; want %d pending, no run", plan, err, tt.plannedOn)
			}
			if err := r.Start(ctx); err != nil {
				t.Fatal(err)
			}
			sched.Start()
			t.Cleanup(func() {
				cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				_ = r.Close(cctx)
				_ = sched.Close(cctx)
			})
			var got ran
			select {
			case got = <-runs:
			case <-time.After(30 * time.Second):
				t.Fatal("the retention job did not run at start")
			}
			if got.err != nil || got.res.Conversations != tt.purged {
				t.Fatalf("run = %+v, %v; want %d conversations", got.res, got.err, tt.purged)
			}
			if c := countTranscript(t, st, 1); c != tt.old {
				t.Errorf("the 40-day-old conversation holds %+v, want %+v", c, tt.old)
			}
			if c := countTranscript(t, st, 2); c != tt.new {
				t.Errorf("the 10-day-old conversation holds %+v, want %+v", c, tt.new)
			}
			var convs, usage int
			if err := st.Reader().QueryRow(`SELECT (SELECT count(*) FROM kimi_assistant_conversations),
				(SELECT count(*) FROM kimi_assistant_usage WHERE prompt_tokens = 50)`).Scan(&convs, &usage); err != nil || convs != 2 || usage != 2 {
				t.Errorf("conversations %d, usage rows %d (%v); want both 2", convs, usage, err)
			}
			// The run scheduled the next a day on (the settle of this run
			// keeps the rescheduled row), and nothing is left due.
			waitRetention(t, func() bool {
				p, err := r.Plan(ctx)
				return err == nil && p.NextRun.Equal(clk.now().Add(RetentionInterval)) && p.Pending == 0
			})
		})
	}
}

// TestRetentionLowered: lowering the setting takes effect at the next run:
// the plan counts what is now past it, and the next run (the clock a day
// on) deletes it.
func TestRetentionLowered(t *testing.T) {
	ctx := context.Background()
	st := openStoreAt(t, filepath.Join(t.TempDir(), "kimi.db"))
	t.Cleanup(func() { st.Close() })
	clk := &clock{t: time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)}
	seedTranscript(t, st, 1, 10, 7, clk.now().Add(-10*24*time.Hour))
	sched, err := scheduler.New(scheduler.Options{Store: st, Logger: slog.New(slog.DiscardHandler), Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRetention(RetentionOptions{Store: st, Jobs: sched, Logger: slog.New(slog.DiscardHandler), Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	runs := make(chan RetentionResult, 4)
	r.onRun = func(res RetentionResult, err error) {
		if err != nil {
			t.Errorf("run: %v", err)
		}
		runs <- res
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sched.Start()
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = r.Close(cctx)
		_ = sched.Close(cctx)
	})
	if res := <-runs; res.Conversations != 0 {
		t.Fatalf("first run under 30 days deleted %+v", res)
	}
	if err := settings.SaveAssistantRetention(ctx, st, settings.AssistantRetentionUpdate{Days: 5}, settings.Actor{Name: "ann"}); err != nil {
		t.Fatal(err)
	}
	var plan RetentionPlan
	waitRetention(t, func() bool { plan, err = r.Plan(ctx); return err == nil && !plan.NextRun.IsZero() })
	if plan.Pending != 1 || plan.Days != 5 || !plan.NextRun.Equal(clk.now().Add(RetentionInterval)) {
		t.Fatalf("plan after lowering = %+v", plan)
	}
	if c := countTranscript(t, st, 1); c != fullTranscript {
		t.Fatalf("lowering deleted at once: %+v", c)
	}
	clk.add(RetentionInterval)
	r.mu.Lock()
	b := r.b
	r.mu.Unlock()
	b.Activate() // wakes the scheduler's runner on the moved clock
	var res RetentionResult
	select {
	case res = <-runs:
	case <-time.After(30 * time.Second):
		t.Fatal("the next run did not happen")
	}
	if res.Conversations != 1 {
		t.Fatalf("next run = %+v, want 1 conversation", res)
	}
	if c := countTranscript(t, st, 1); c != purgedStructure {
		t.Errorf("after the next run: %+v, want %+v", c, purgedStructure)
	}
}

// waitRetention waits (at most 30 s) for cond.
func waitRetention(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
