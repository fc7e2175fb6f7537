package assistant

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"
)

// recorder records tool calls of one turn, each at the clock's time.
type recorder struct {
	t    *testing.T
	c    *Conversations
	turn TurnID
	seq  int
}

func newRecorder(t *testing.T, c *Conversations) *recorder {
	t.Helper()
	ctx := context.Background()
	tr := trigger(1, 7, "hi")
	conv, err := c.Open(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := c.BeginTurn(ctx, conv, tr)
	if err != nil {
		t.Fatal(err)
	}
	return &recorder{t: t, c: c, turn: turn}
}

func (r *recorder) call(module, tool string, outcomes ...Outcome) {
	r.t.Helper()
	for _, o := range outcomes {
		r.seq++
		if err := r.c.RecordToolCall(context.Background(), r.turn, ToolCall{Seq: r.seq, Tool: tool, Module: module, Outcome: o}); err != nil {
			r.t.Fatal(err)
		}
	}
}

// TestToolStatsOutcomes: a call that ran the tool counts (ok, truncated,
// failed), a failed one is also an error, and the model's mistakes and
// the calls the loop never ran count in neither.
func TestToolStatsOutcomes(t *testing.T) {
	for _, tt := range []struct {
		outcome Outcome
		want    ToolStat // zero: the tool is absent
	}{
		{OutcomeOK, ToolStat{Calls: 1}},
		{OutcomeTruncated, ToolStat{Calls: 1}},
		{OutcomeFailed, ToolStat{Calls: 1, Errors: 1}},
		{OutcomeInactive, ToolStat{}},
		{OutcomeBadArgs, ToolStat{}},
		{OutcomeUnknown, ToolStat{}},
		{OutcomeTimeout, ToolStat{}},
		{OutcomeCancelled, ToolStat{}},
	} {
		t.Run(string(tt.outcome), func(t *testing.T) {
			c, _, _ := newConversations(t)
			newRecorder(t, c).call("kudos", "give_kudos", tt.outcome)
			got, err := c.ToolStats(context.Background(), "kudos")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]ToolStat{}
			if tt.want != (ToolStat{}) {
				want["give_kudos"] = tt.want
			}
			if !maps.Equal(got, want) {
				t.Errorf("ToolStats = %v, want %v", got, want)
			}
		})
	}
}

// TestToolStatsWindowAndModules: ToolStats counts one module's calls of
// the last 30 days on the storage's clock (a call exactly 30 days old
// counts, one a millisecond older does not), per tool, and never another
// module's calls of a tool of the same name.
func TestToolStatsWindowAndModules(t *testing.T) {
	c, _, clk := newConversations(t)
	r := newRecorder(t, c)
	r.call("kudos", "give_kudos", OutcomeFailed, OutcomeOK) // too old
	clk.add(time.Millisecond)
	edge := clk.now()
	r.call("kudos", "kudos_leaderboard", OutcomeOK) // exactly 30 days old at the end
	clk.add(10 * 24 * time.Hour)
	r.call("kudos", "give_kudos", OutcomeOK, OutcomeTruncated, OutcomeFailed, OutcomeFailed, OutcomeInactive)
	r.call("kudos", "kudos_only_misused", OutcomeInactive)
	r.call("weather", "give_kudos", OutcomeOK, OutcomeOK, OutcomeOK)
	r.call("weather", "forecast", OutcomeFailed)
	r.call("", "browse_tools", OutcomeOK, OutcomeBadArgs)
	r.call("", "nope", OutcomeUnknown, OutcomeTimeout)
	clk.add(edge.Add(ToolStatsWindow).Sub(clk.now()))

	for _, tt := range []struct {
		module string
		want   map[string]ToolStat
	}{
		{"kudos", map[string]ToolStat{"give_kudos": {Calls: 4, Errors: 2}, "kudos_leaderboard": {Calls: 1}}},
		{"weather", map[string]ToolStat{"give_kudos": {Calls: 3}, "forecast": {Calls: 1, Errors: 1}}},
		{"absent", map[string]ToolStat{}},
	} {
		t.Run(tt.module, func(t *testing.T) {
			got, err := c.ToolStats(context.Background(), tt.module)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("ToolStats(%q) = %v, want %v", tt.module, got, tt.want)
			}
		})
	}

	// A millisecond later the edge call has left the window.
	clk.add(time.Millisecond)
	got, err := c.ToolStats(context.Background(), "kudos")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]ToolStat{"give_kudos": {Calls: 4, Errors: 2}}; !maps.Equal(got, want) {
		t.Errorf("a millisecond later: ToolStats = %v, want %v", got, want)
	}
}

// TestToolStatsUsesIndex: ToolStats reads the module's rows through
// kimi_assistant_tool_calls_module, never a scan of every tool call.
func TestToolStatsUsesIndex(t *testing.T) {
	_, st, _ := newConversations(t)
	rows, err := st.Reader().QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+toolStatsQuery, "kudos", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(plan, "; ")
	if !strings.Contains(got, "INDEX kimi_assistant_tool_calls_module (module=?") || strings.Contains(got, "TEMP B-TREE") {
		t.Errorf("plan %q: want the module index, grouped in its order", got)
	}
}
