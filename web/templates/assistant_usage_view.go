package templates

// AssistantUsageView is /assistant/usage: the last 30 UTC days of the
// assistant's usage, from the roll-up, the turns and the tool calls.
type AssistantUsageView struct {
	From, To string
	// Empty: nothing was recorded in the window (the page says so).
	Empty bool
	Chart UsageChart
	// Days are the chart's days as a table, newest first.
	Days   []UsageRow
	Totals []Stat
	Models []UsageRow
	Guilds []UsageRow
	Users  []UsageRow
	// Latency is the finished turns' count and percentiles.
	Latency []Stat
	Errors  []KeyValue
	Tools   []UsageToolRow
}

// UsageRow is one line of a usage table: its label (a day, a model, a
// guild's name or id, a user id) and its formatted counts.
type UsageRow struct {
	Label, Tokens, Prompt, Completion, Cached, Calls, Turns string
}

// UsageToolRow is one tool's calls and error rate in the window.
type UsageToolRow struct {
	Tool, Module, Calls, Errors, Rate string
}

// UsageChart is the tokens-per-day bar chart on a fixed viewBox
// (UsageChartW × UsageChartH): one bar per day, its height proportional
// to the day's tokens (the tallest day fills the plot).
type UsageChart struct {
	Bars []UsageBar
	// Max is the tallest day's tokens, labelled at the top of the axis.
	Max string
}

// UsageBar is one day's bar.
type UsageBar struct {
	X, Y, W, H int
	Day        string
	Tokens     string
}

// Usage chart geometry: the viewBox and the plot area inside it.
const (
	UsageChartW, UsageChartH             = 600, 200
	UsageChartLeft, UsageChartRight      = 70, 590
	UsageChartTop, UsageChartBottom      = 15, 170
	UsageChartPlotH                      = UsageChartBottom - UsageChartTop
	UsageChartPlotW                      = UsageChartRight - UsageChartLeft
	usageChartLabelY, usageChartMaxLabel = UsageChartH - 8, UsageChartTop + 4
)
