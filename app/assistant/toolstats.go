package assistant

import (
	"context"
	"fmt"
	"time"
)

// ToolStatsWindow is how far back ToolStats counts.
const ToolStatsWindow = 30 * 24 * time.Hour

// ToolStat is one tool's recorded calls over ToolStatsWindow.
//
// Calls counts the calls that ran the tool: outcomes ok, truncated and
// failed. Errors counts the failed ones (the tool returned an error,
// panicked or hung: Run records all three as failed). The model's own
// mistakes (not_activated, bad_arguments, unknown) and the calls the loop
// never ran (timeout, cancelled) are not the tool's doing and count in
// neither; most of them carry no module anyway.
type ToolStat struct {
	Calls, Errors int
}

// ToolStats returns, per tool of module, its calls and errors over the
// ToolStatsWindow up to now on the storage's clock. Tools without such a
// call are absent. One grouped query over the (module, tool, created_ms)
// index.
func (c *Conversations) ToolStats(ctx context.Context, module string) (map[string]ToolStat, error) {
	since := c.now().Add(-ToolStatsWindow).UnixMilli()
	rows, err := c.st.Reader().QueryContext(ctx, toolStatsQuery, module, since)
	if err != nil {
		return nil, fmt.Errorf("assistant: tool stats of %s: %w", module, err)
	}
	defer rows.Close()
	out := map[string]ToolStat{}
	for rows.Next() {
		var tool string
		var s ToolStat
		if err := rows.Scan(&tool, &s.Calls, &s.Errors); err != nil {
			return nil, fmt.Errorf("assistant: tool stats of %s: %w", module, err)
		}
		out[tool] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("assistant: tool stats of %s: %w", module, err)
	}
	return out, nil
}

// ToolStat's rules, shared by ToolStats and UsageReport: the calls that
// ran the tool (toolStatsRan), counted as calls and errors.
const (
	toolStatsRan    = `outcome IN ('ok', 'truncated', 'failed')`
	toolStatsCounts = `count(*), count(*) FILTER (WHERE outcome = 'failed')`
)

// toolStatsQuery is ToolStats' query (its outcomes are ToolStat's).
const toolStatsQuery = `SELECT tool, ` + toolStatsCounts + `
	FROM kimi_assistant_tool_calls
	WHERE module = ? AND created_ms >= ? AND ` + toolStatsRan + `
	GROUP BY tool`
