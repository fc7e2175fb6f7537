package admin

import (
	"context"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/kudos"
)

// TestToolErrorRate: the error rate has one decimal under 10%, is whole
// from there, and never rounds a rate to 0% or 100% that is not.
func TestToolErrorRate(t *testing.T) {
	for _, tt := range []struct {
		calls, errors   int
		wantCalls, want string
	}{
		{0, 0, "—", "—"},
		{1, 0, "1", "0%"},
		{12, 1, "12", "8.3%"},
		{20, 1, "20", "5%"},
		{100, 9, "100", "9%"},
		{1000, 99, "1000", "9.9%"},
		{10000, 999, "10000", "10%"},
		{3, 1, "3", "33%"},
		{8, 4, "8", "50%"},
		{4, 4, "4", "100%"},
		{10000, 1, "10000", "<0.1%"},
		{2000, 1, "2000", "0.1%"},
		{1000, 999, "1000", ">99%"},
		{200, 199, "200", ">99%"},
		{100, 99, "100", "99%"},
	} {
		s := assistant.ToolStat{Calls: tt.calls, Errors: tt.errors}
		if got := toolCalls(s); got != tt.wantCalls {
			t.Errorf("toolCalls(%d) = %q, want %q", tt.calls, got, tt.wantCalls)
		}
		if got := toolErrorRate(s); got != tt.want {
			t.Errorf("toolErrorRate(%d of %d) = %q, want %q", tt.errors, tt.calls, got, tt.want)
		}
	}
}

// TestModulePageToolStats: /modules/{name} shows each tool's assistant
// calls and error rate over 30 days from the records on a real store:
// calls older than 30 days, another module's and the model's misuse do
// not count; a tool without calls reads "—". Without the records, or when
// they cannot be read, the page renders without the cells (never a 500).
func TestModulePageToolStats(t *testing.T) {
	cellRE := regexp.MustCompile(`data-testid="module-tool-(calls|errors)-([a-z_]+)">([^<]*)<`)
	for _, tt := range []struct {
		name string
		// stats returns the server's ToolStats over its store (nil: none).
		stats func(t *testing.T, st *store.Store) ToolStats
		want  map[string]string // "calls/tool" or "errors/tool" → cell
		warn  bool              // the failed read is logged
	}{
		{name: "records", stats: seededToolStats, want: map[string]string{
			"calls/" + kudos.ToolGive: "12", "errors/" + kudos.ToolGive: "8.3%",
			"calls/" + kudos.ToolLeaderboard: "—", "errors/" + kudos.ToolLeaderboard: "—",
		}},
		{name: "no records", stats: func(*testing.T, *store.Store) ToolStats { return nil }, want: map[string]string{}},
		{name: "unreadable records", stats: unmigratedToolStats, want: map[string]string{}, warn: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			withStats := func(o *Options) {
				if s := tt.stats(t, o.Store); s != nil {
					o.ToolStats = s
				}
			}
			h := newHarness(t, withModules(nil, false), withStats)
			if err := h.modHost.SetEnabled(context.Background(), kudos.Name, true, "test"); err != nil {
				t.Fatal(err)
			}
			requireRunning(t, h, kudos.Name)
			h.createAdmin()
			c := h.newClient()
			c.login(testUser, testPassword)
			res := c.get("/modules/" + kudos.Name)
			wantStatus(t, res, 200)
			wantBody(t, res, kudos.ToolGive, kudos.ToolLeaderboard)
			got := map[string]string{}
			for _, m := range cellRE.FindAllStringSubmatch(res.body, -1) {
				got[m[1]+"/"+m[2]] = m[3]
			}
			if len(got) != len(tt.want) {
				t.Errorf("cells %v, want %v", got, tt.want)
			}
			for k, w := range tt.want {
				if got[k] != w {
					t.Errorf("%s = %q, want %q", k, got[k], w)
				}
			}
			if len(tt.want) > 0 {
				wantBody(t, res, "Calls (30 days):", "Error rate:")
			}
			if logged := strings.Contains(h.logs.String(), "reading the tool call counts failed"); logged != tt.warn {
				t.Errorf("failed read logged: %v, want %v", logged, tt.warn)
			}
		})
	}
}

// seededToolStats is the assistant's records over st on a fixed clock:
// give_kudos ran 12 times in the last 30 days with one failure; it also
// failed 5 times 31 days ago, was called once without being activated,
// and another module's tool of the same name ran 4 times.
func seededToolStats(t *testing.T, st *store.Store) ToolStats {
	t.Helper()
	ctx := context.Background()
	clk := &testClock{now: time.Unix(1_700_000_000, 0)}
	convs := assistant.NewConversations(st, clk.Now)
	tr := assistant.Trigger{Place: assistant.Place{GuildID: 10, ChannelID: 100}, Kind: assistant.KindMessage,
		MessageID: 1, AuthorID: 7, AuthorName: "Bo", Text: "hi"}
	conv, err := convs.Open(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := convs.BeginTurn(ctx, conv, tr)
	if err != nil {
		t.Fatal(err)
	}
	seq := 0
	record := func(module string, o assistant.Outcome, n int) {
		for range n {
			seq++
			if err := convs.RecordToolCall(ctx, turn, assistant.ToolCall{Seq: seq, Tool: kudos.ToolGive, Module: module, Outcome: o}); err != nil {
				t.Fatal(err)
			}
		}
	}
	record(kudos.Name, assistant.OutcomeFailed, 5)
	clk.Add(31 * 24 * time.Hour)
	record(kudos.Name, assistant.OutcomeOK, 10)
	record(kudos.Name, assistant.OutcomeTruncated, 1)
	record(kudos.Name, assistant.OutcomeFailed, 1)
	record(kudos.Name, assistant.OutcomeInactive, 1)
	record("other", assistant.OutcomeOK, 4)
	return convs
}

// unmigratedToolStats is the assistant's records over a store without its
// tables: every read fails.
func unmigratedToolStats(t *testing.T, _ *store.Store) ToolStats {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "empty.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return assistant.NewConversations(st, nil)
}
