package assistant

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/internal/migrationtest"
	"github.com/kimiapp/kimi/app/store"
)

// logTurn runs one turn of a new conversation at place by author: usage,
// the given tool calls, and an ending with status.
func logTurn(t *testing.T, c *Conversations, clk *clock, p Place, msg, author uint64, status string, calls ...ToolCall) Conversation {
	t.Helper()
	ctx := context.Background()
	tr := Trigger{Place: p, Kind: KindMessage, MessageID: msg, AuthorID: author, AuthorName: "Bo", Text: "question"}
	conv, err := c.Open(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := c.BeginTurn(ctx, conv, tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RecordUsage(ctx, turn, Usage{Model: "m1", PromptTokens: 100, CompletionTokens: 20, CachedTokens: 5}); err != nil {
		t.Fatal(err)
	}
	for i, call := range calls {
		call.Seq = i + 1
		if err := c.RecordToolCall(ctx, turn, call); err != nil {
			t.Fatal(err)
		}
	}
	clk.add(time.Second)
	if status != StatusRunning {
		if err := c.FinishTurn(ctx, turn, Finish{Status: status, Reply: "answer"}); err != nil {
			t.Fatal(err)
		}
	}
	return conv
}

// TestConversationLogSummary: the summary columns the triggers keep
// (turns, latest status, tokens, tool calls and errors, distinct tools)
// match each conversation's rows, and List filters and pages on them.
func TestConversationLogSummary(t *testing.T) {
	ctx := context.Background()
	c, _, clk := newConversations(t)
	ok := ToolCall{Tool: "dice.roll", Module: "dice", Outcome: OutcomeOK}
	bad := ToolCall{Tool: "weather.now", Module: "weather", Outcome: OutcomeFailed}
	trunc := ToolCall{Tool: "dice.roll", Module: "dice", Outcome: OutcomeTruncated}
	a := logTurn(t, c, clk, Place{GuildID: 10, ChannelID: 100}, 1, 7, StatusDone, ok, trunc)
	b := logTurn(t, c, clk, Place{GuildID: 10, ChannelID: 101}, 2, 8, StatusFailed, ok, bad)
	d := logTurn(t, c, clk, Place{GuildID: 20, ChannelID: 200}, 3, 7, StatusRunning)
	// A second turn on a: it becomes the newest, its status the latest.
	tr := Trigger{Place: a.Place, Kind: KindMessage, MessageID: 4, ReplyTo: 0, AuthorID: 7, Text: "more"}
	turn, err := c.BeginTurn(ctx, a, tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RecordUsage(ctx, turn, Usage{PromptTokens: 1, CompletionTokens: 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.FinishTurn(ctx, turn, Finish{Status: StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	page, err := c.List(ctx, LogFilter{}, LogCursor{})
	if err != nil {
		t.Fatal(err)
	}
	want := []LogRow{
		{ID: a.ID, Turns: 2, LastStatus: StatusCancelled, Tokens: 123, ToolCalls: 2, ToolErrors: 0, Tools: []string{"dice.roll"}},
		{ID: d.ID, Turns: 1, LastStatus: StatusRunning, Tokens: 120},
		{ID: b.ID, Turns: 1, LastStatus: StatusFailed, Tokens: 120, ToolCalls: 2, ToolErrors: 1, Tools: []string{"dice.roll", "weather.now"}},
	}
	if len(page.Rows) != len(want) || page.More {
		t.Fatalf("page = %+v, want %d rows and no more", page, len(want))
	}
	for i, w := range want {
		g := page.Rows[i]
		if g.ID != w.ID || g.Turns != w.Turns || g.LastStatus != w.LastStatus || g.Tokens != w.Tokens ||
			g.ToolCalls != w.ToolCalls || g.ToolErrors != w.ToolErrors || !slices.Equal(g.Tools, w.Tools) {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	for _, tc := range []struct {
		name string
		f    LogFilter
		want []int64
	}{
		{"guild", LogFilter{GuildID: 10}, []int64{a.ID, b.ID}},
		{"channel", LogFilter{ChannelID: 101}, []int64{b.ID}},
		{"user", LogFilter{UserID: 7}, []int64{a.ID, d.ID}},
		{"status", LogFilter{Status: StatusFailed}, []int64{b.ID}},
		{"tool errors", LogFilter{ToolErrors: true}, []int64{b.ID}},
		{"guild and user", LogFilter{GuildID: 20, UserID: 7}, []int64{d.ID}},
		{"nothing", LogFilter{GuildID: 30}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := c.List(ctx, tc.f, LogCursor{})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range p.Rows {
				got = append(got, r.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ids = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestConversationLogPaging: 60 conversations page 25, 25, 10 through the
// cursor, newest first, without repeats; a cursor survives String/Parse.
func TestConversationLogPaging(t *testing.T) {
	ctx := context.Background()
	c, _, clk := newConversations(t)
	for i := range 60 {
		logTurn(t, c, clk, guildPlace, uint64(1000+i), 7, StatusDone)
	}
	var sizes []int
	var seen []int64
	cur := LogCursor{}
	for {
		p, err := c.List(ctx, LogFilter{}, cur)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(p.Rows))
		for _, r := range p.Rows {
			seen = append(seen, r.ID)
		}
		if !p.More {
			break
		}
		cur, err = ParseLogCursor(p.Next.String())
		if err != nil || cur != p.Next {
			t.Fatalf("cursor %q parsed as %v, %v", p.Next.String(), cur, err)
		}
	}
	if !slices.Equal(sizes, []int{25, 25, 10}) {
		t.Errorf("page sizes = %v, want [25 25 10]", sizes)
	}
	if !slices.IsSortedFunc(seen, func(a, b int64) int { return int(b - a) }) || len(slices.Compact(slices.Clone(seen))) != 60 {
		t.Errorf("ids not newest first without repeats: %v", seen)
	}
	for _, bad := range []string{"x", "1", "1-", "-1-2", "5-0"} {
		if _, err := ParseLogCursor(bad); err == nil {
			t.Errorf("ParseLogCursor(%q) accepted", bad)
		}
	}
}

// TestConversationLogPagesFollowChanges: a page is kept only until a
// conversation's row changes, by this process's turns or by any other
// writer of the table (retention, /forget, a delete): each change shows at
// the next List, whatever the filter.
func TestConversationLogPagesFollowChanges(t *testing.T) {
	ctx := context.Background()
	c, st, clk := newConversations(t)
	logTurn(t, c, clk, guildPlace, 1000, 7, StatusDone)
	list := func(f LogFilter) []int64 {
		t.Helper()
		p, err := c.List(ctx, f, LogCursor{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, r := range p.Rows {
			ids = append(ids, r.ID)
		}
		return ids
	}
	mine := LogFilter{UserID: 7}
	first, firstMine := list(LogFilter{}), list(mine)
	if len(first) != 1 || !slices.Equal(first, firstMine) {
		t.Fatalf("pages %v and %v, want the one conversation", first, firstMine)
	}
	logTurn(t, c, clk, guildPlace, 1001, 7, StatusDone)
	if got := list(LogFilter{}); len(got) != 2 {
		t.Errorf("after a second conversation the page holds %v", got)
	}
	if got := list(mine); len(got) != 2 {
		t.Errorf("after a second conversation the filtered page holds %v", got)
	}
	if _, err := st.Writer().Exec(`DELETE FROM kimi_assistant_conversations WHERE id = ?`, first[0]); err != nil {
		t.Fatal(err)
	}
	if got := list(LogFilter{}); len(got) != 1 || got[0] == first[0] {
		t.Errorf("after a delete by another writer the page holds %v", got)
	}
	if _, err := st.Writer().Exec(`UPDATE kimi_assistant_conversations SET owner_id = 8`); err != nil {
		t.Fatal(err)
	}
	if got := list(mine); len(got) != 0 {
		t.Errorf("after the owner changed the filtered page holds %v", got)
	}
}

// TestConversationLogDetail: the detail holds each turn's figures and tool
// calls; without content it holds no message text and no excerpt at all.
func TestConversationLogDetail(t *testing.T) {
	ctx := context.Background()
	c, _, clk := newConversations(t)
	conv := logTurn(t, c, clk, guildPlace, 1, 7, StatusDone,
		ToolCall{Tool: "dice.roll", Module: "dice", Outcome: OutcomeOK, Duration: 30 * time.Millisecond, Arguments: `{"sides":"ARGSECRET"}`, Result: "RESULTSECRET"})
	for _, tc := range []struct {
		content bool
		want    []string
	}{
		{true, []string{"question", "answer", "ARGSECRET", "RESULTSECRET"}},
		{false, nil},
	} {
		d, err := c.Detail(ctx, conv.ID, tc.content)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Turns) != 1 || len(d.Turns[0].Calls) != 1 || len(d.Turns[0].Messages) != 2 {
			t.Fatalf("detail = %+v, want one turn, one call, two messages", d)
		}
		tn := d.Turns[0]
		if tn.Status != StatusDone || tn.Model != "m1" || tn.Iterations != 1 || tn.PromptTokens != 100 || tn.Duration != time.Second ||
			tn.Calls[0].Tool != "dice.roll" || tn.Calls[0].Duration != 30*time.Millisecond {
			t.Errorf("turn = %+v", tn)
		}
		var text []string
		for _, m := range tn.Messages {
			if m.Content != "" {
				text = append(text, m.Content)
			}
		}
		for _, x := range []string{tn.Calls[0].Arguments, tn.Calls[0].Result} {
			if x != "" {
				text = append(text, strings.Trim(strings.TrimPrefix(x, `{"sides":"`), `"}`))
			}
		}
		if !slices.Equal(text, tc.want) {
			t.Errorf("content %v: text = %q, want %q", tc.content, text, tc.want)
		}
	}
	if _, err := c.Detail(ctx, conv.ID+99, false); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown id: %v, want ErrNotFound", err)
	}
}

// TestConversationLogDelete: Delete removes exactly that conversation and
// every row of it, audits it, leaves the usage roll-up, and signals Watch.
func TestConversationLogDelete(t *testing.T) {
	ctx := context.Background()
	c, st, clk := newConversations(t)
	gone := logTurn(t, c, clk, guildPlace, 1, 7, StatusDone, ToolCall{Tool: "dice.roll", Outcome: OutcomeOK})
	if err := c.RecordDelivered(ctx, gone, guildPlace.ChannelID, 555); err != nil {
		t.Fatal(err)
	}
	if err := c.ActivateTools(ctx, gone, "dice.roll"); err != nil {
		t.Fatal(err)
	}
	kept := logTurn(t, c, clk, guildPlace, 2, 8, StatusDone, ToolCall{Tool: "dice.roll", Outcome: OutcomeOK})
	if err := st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, prompt_tokens, turns) VALUES ('2023-11-14', 10, 7, 'm1', 100, 1)
			ON CONFLICT (day, guild_id, user_id, model) DO UPDATE SET prompt_tokens = prompt_tokens + 100`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := c.Watch(wctx)
	if err := c.Delete(ctx, gone.ID, store.AuditEntry{Actor: "admin", IP: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	<-watch // a Delete that did not signal would hang here until the test's deadline
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := st.Reader().QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		table      string
		gone, kept int
	}{
		{"kimi_assistant_conversations WHERE id = ?", 0, 1},
		{"kimi_assistant_turns WHERE conversation_id = ?", 0, 1},
		{"kimi_assistant_messages WHERE conversation_id = ?", 0, 2},
		{"kimi_assistant_tool_calls WHERE turn_id IN (SELECT id FROM kimi_assistant_turns WHERE conversation_id = ?)", 0, 1},
		{"kimi_assistant_delivered WHERE conversation_id = ?", 0, 0},
		{"kimi_assistant_tools WHERE conversation_id = ?", 0, 0},
	} {
		if g, k := count(`SELECT count(*) FROM `+tc.table, gone.ID), count(`SELECT count(*) FROM `+tc.table, kept.ID); g != tc.gone || k != tc.kept {
			t.Errorf("%s: deleted one has %d (want %d), kept one %d (want %d)", tc.table, g, tc.gone, k, tc.kept)
		}
	}
	if n := count(`SELECT count(*) FROM kimi_assistant_usage WHERE user_id = 7`); n != 1 {
		t.Errorf("usage rows of the deleted conversation's owner = %d, want 1 (kept)", n)
	}
	if n := count(`SELECT count(*) FROM kimi_audit_log WHERE action = ? AND target = ?`, AuditActionConversationDelete, "conversation "+strconv.FormatInt(gone.ID, 10)); n != 1 {
		t.Errorf("audit rows = %d, want 1", n)
	}
	if err := c.Delete(ctx, gone.ID, store.AuditEntry{Actor: "admin"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
}

// TestMigration00014Down: migration 00014 fills the summary of rows that
// existed before it, its Down leaves exactly the schema of version 12, and
// Up applies again.
func TestMigration00014Down(t *testing.T) {
	ctx := context.Background()
	ref, refP := migrationtest.Open(t, "twelve.db")
	if _, err := refP.UpTo(ctx, 12); err != nil {
		t.Fatal(err)
	}
	want := migrationtest.Schema(t, ref)
	db, p := migrationtest.Open(t, "fourteen.db")
	if _, err := p.UpTo(ctx, 12); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms) VALUES (1, 10, 100, 5, 7, 1, 1)`,
		`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms, prompt_tokens, completion_tokens) VALUES (1, 1, 'message', 5, 7, 10, 100, 'failed', 1, 10, 2)`,
		`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, outcome, created_ms) VALUES (1, 1, 'b.x', 'timeout', 1), (1, 2, 'a.y', 'ok', 1), (1, 3, 'b.x', 'ok', 1)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := p.UpTo(ctx, 14); err != nil {
		t.Fatal(err)
	}
	var turns, tokens, calls, errs int
	var status, tools string
	if err := db.QueryRow(`SELECT turns, last_status, tokens, tool_calls, tool_errors, tools FROM kimi_assistant_conversations WHERE id = 1`).
		Scan(&turns, &status, &tokens, &calls, &errs, &tools); err != nil {
		t.Fatal(err)
	}
	if turns != 1 || status != "failed" || tokens != 12 || calls != 3 || errs != 1 || tools != "a.y,b.x" {
		t.Errorf("backfilled summary = %d %q %d %d %d %q, want 1 failed 12 3 1 a.y,b.x", turns, status, tokens, calls, errs, tools)
	}
	if _, err := p.DownTo(ctx, 12); err != nil {
		t.Fatalf("down to 12: %v", err)
	}
	if got := migrationtest.Schema(t, db); !slices.Equal(got, want) {
		t.Errorf("schema after 00014's Down:\n%q\nwant (version 12):\n%q", got, want)
	}
	if _, err := p.UpTo(ctx, 14); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
