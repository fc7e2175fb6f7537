package admin

import (
	"context"
	"math"
	"strconv"
	"strings"

	"github.com/kimiapp/kimi/app/assistant"
)

// ToolStats is what /modules/{name} needs of the assistant's records: a
// module's tool calls and errors over the last 30 days;
// *assistant.Conversations implements it.
type ToolStats interface {
	ToolStats(ctx context.Context, module string) (map[string]assistant.ToolStat, error)
}

var _ ToolStats = (*assistant.Conversations)(nil)

// toolCalls is a tool's "Calls (30 days)" cell: the count, "—" for none.
func toolCalls(s assistant.ToolStat) string {
	if s.Calls <= 0 {
		return "—"
	}
	return strconv.Itoa(s.Calls)
}

// toolErrorRate is a tool's "Error rate" cell: "—" without calls, a
// percentage with one decimal under 10% ("8.3%", "0%"), whole from 10%
// ("33%"); a rate that rounds to 0 or 100 without being it reads "<0.1%"
// or ">99%".
func toolErrorRate(s assistant.ToolStat) string {
	switch {
	case s.Calls <= 0:
		return "—"
	case s.Errors <= 0:
		return "0%"
	case s.Errors >= s.Calls:
		return "100%"
	}
	pct := 100 * float64(s.Errors) / float64(s.Calls)
	if pct < 10 {
		if pct < 0.05 {
			return "<0.1%"
		}
		return strings.TrimSuffix(strconv.FormatFloat(pct, 'f', 1, 64), ".0") + "%"
	}
	if r := math.Round(pct); r < 100 {
		return strconv.FormatFloat(r, 'f', 0, 64) + "%"
	}
	return ">99%"
}
