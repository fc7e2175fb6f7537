package admin

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/web/templates"
)

// AssistantUsage is what /assistant/usage and /metrics read of the
// assistant's records; *assistant.Conversations implements it.
type AssistantUsage interface {
	UsageReport(ctx context.Context) (assistant.UsageReport, error)
	usageMeter
}

// usageMeter is what /metrics reads: the usage counted since the process
// started (monotonic, without users, guilds or content).
type usageMeter interface {
	UsageMeter() []assistant.MeterModel
}

var (
	_ AssistantUsage = (*assistant.Conversations)(nil)
	_ usageMeter     = (*assistant.Conversations)(nil)
)

// assistantUsageTimeout bounds reading the usage report.
const assistantUsageTimeout = 5 * time.Second

// assistantUsageView is the page's model from the report; guildNames are
// the guilds the bot knows by name (id → name).
func assistantUsageView(r assistant.UsageReport, guildNames map[string]string) templates.AssistantUsageView {
	v := templates.AssistantUsageView{From: r.From, To: r.To, Empty: r.Empty(), Chart: usageChart(r.Days)}
	for i := len(r.Days) - 1; i >= 0; i-- {
		v.Days = append(v.Days, usageRow(r.Days[i].Day, r.Days[i].UsageTotals))
	}
	v.Totals = []templates.Stat{
		{Label: "Tokens (30 days)", Value: groupDigits(r.Total.Tokens()), TestID: "usage-total-tokens"},
		{Label: "Model calls", Value: groupDigits(r.Total.Calls), TestID: "usage-total-calls"},
		{Label: "Turns", Value: groupDigits(r.Total.Turns), TestID: "usage-total-turns"},
		{Label: "Cached prompt tokens", Value: groupDigits(r.Total.CachedTokens), TestID: "usage-total-cached"},
	}
	for _, m := range r.Models {
		label := m.Model
		if label == "" {
			label = "(no model answered)"
		}
		v.Models = append(v.Models, usageRow(label, m.UsageTotals))
	}
	for _, g := range r.Guilds {
		id := strconv.FormatUint(g.GuildID, 10)
		label := id
		switch name := guildNames[id]; {
		case g.GuildID == 0:
			label = "Direct messages"
		case name != "":
			label = name + " (" + id + ")"
		}
		v.Guilds = append(v.Guilds, usageRow(label, g.UsageTotals))
	}
	for _, u := range r.Users {
		v.Users = append(v.Users, usageRow(strconv.FormatUint(u.UserID, 10), u.UsageTotals))
	}
	dash := func(d time.Duration) string {
		if r.Finished == 0 {
			return "—"
		}
		return humanMillis(d)
	}
	v.Latency = []templates.Stat{
		{Label: "Turns finished", Value: groupDigits(r.Finished), TestID: "usage-turns-finished"},
		{Label: "p50", Value: dash(r.P50), TestID: "usage-p50"},
		{Label: "p99", Value: dash(r.P99), TestID: "usage-p99"},
	}
	for _, e := range r.Errors {
		v.Errors = append(v.Errors, templates.KeyValue{Key: e.Kind, Value: groupDigits(e.Count)})
	}
	for _, t := range r.Tools {
		module := t.Module
		if module == "" {
			module = "core"
		}
		v.Tools = append(v.Tools, templates.UsageToolRow{Tool: t.Tool, Module: module, Calls: toolCalls(t.ToolStat),
			Errors: strconv.Itoa(t.Errors), Rate: toolErrorRate(t.ToolStat)})
	}
	return v
}

// usageChart places one bar per day, its height proportional to the
// day's tokens: the tallest day fills the plot, a day with any tokens is
// at least one unit high.
func usageChart(days []assistant.UsageDay) templates.UsageChart {
	var most int64
	for _, d := range days {
		most = max(most, d.Tokens())
	}
	ch := templates.UsageChart{Max: groupDigits(most)}
	if len(days) == 0 {
		return ch
	}
	slot := templates.UsageChartPlotW / len(days)
	w := max(slot-2, 1)
	for i, d := range days {
		h := 0
		if most > 0 && d.Tokens() > 0 {
			h = max(int((d.Tokens()*int64(templates.UsageChartPlotH)+most/2)/most), 1)
		}
		ch.Bars = append(ch.Bars, templates.UsageBar{X: templates.UsageChartLeft + i*slot + 1, Y: templates.UsageChartBottom - h,
			W: w, H: h, Day: d.Day, Tokens: groupDigits(d.Tokens())})
	}
	return ch
}

func usageRow(label string, t assistant.UsageTotals) templates.UsageRow {
	return templates.UsageRow{Label: label, Tokens: groupDigits(t.Tokens()), Prompt: groupDigits(t.PromptTokens),
		Completion: groupDigits(t.CompletionTokens), Cached: groupDigits(t.CachedTokens), Calls: groupDigits(t.Calls),
		Turns: groupDigits(t.Turns)}
}

// groupDigits writes n with thousands separators: 1234567 → "1,234,567".
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// humanMillis is a latency for the page: "850 ms", "2.4 s".
func humanMillis(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	// Tenths of a second rounded half up in integers (a float's 12.35 is
	// a hair below it): what the latency roll-up's buckets keep, so a
	// percentile of them shows as the exact one would.
	tenths := (d.Milliseconds() + 50) / 100
	return strconv.FormatInt(tenths/10, 10) + "." + strconv.FormatInt(tenths%10, 10) + " s"
}
