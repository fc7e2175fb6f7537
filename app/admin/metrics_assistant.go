package admin

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// The assistant's counters on /metrics: what the assistant's Meter
// counted since the process started, by model (and outcome, for turns).
// No user, guild or content is a label.
var (
	assistantCallsDesc = prometheus.NewDesc("kimi_assistant_model_calls_total",
		"Model responses the assistant recorded since start, by the model that served them ('' when none was named).",
		[]string{"model"}, nil)
	assistantTokensDesc = prometheus.NewDesc("kimi_assistant_tokens_total",
		"Tokens the model responses reported since start, by model and kind (prompt, completion, cached: cached tokens are part of the prompt).",
		[]string{"model", "kind"}, nil)
	assistantTurnsDesc = prometheus.NewDesc("kimi_assistant_turns_total",
		"Assistant turns finished since start, by the model of their last response ('' without one) and outcome (done, failed, cancelled).",
		[]string{"model", "outcome"}, nil)
)

// assistantCollector reports the usage meter's counters at each scrape.
type assistantCollector struct{ m usageMeter }

var _ prometheus.Collector = assistantCollector{}

// Describe implements prometheus.Collector.
func (a assistantCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- assistantCallsDesc
	ch <- assistantTokensDesc
	ch <- assistantTurnsDesc
}

// Collect implements prometheus.Collector.
func (a assistantCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range a.m.UsageMeter() {
		ch <- prometheus.MustNewConstMetric(assistantCallsDesc, prometheus.CounterValue, float64(m.Calls), m.Model)
		ch <- prometheus.MustNewConstMetric(assistantTokensDesc, prometheus.CounterValue, float64(m.PromptTokens), m.Model, "prompt")
		ch <- prometheus.MustNewConstMetric(assistantTokensDesc, prometheus.CounterValue, float64(m.CompletionTokens), m.Model, "completion")
		ch <- prometheus.MustNewConstMetric(assistantTokensDesc, prometheus.CounterValue, float64(m.CachedTokens), m.Model, "cached")
		outcomes := make([]string, 0, len(m.Turns))
		for o := range m.Turns {
			outcomes = append(outcomes, o)
		}
		slices.Sort(outcomes)
		for _, o := range outcomes {
			ch <- prometheus.MustNewConstMetric(assistantTurnsDesc, prometheus.CounterValue, float64(m.Turns[o]), m.Model, o)
		}
	}
}
