package sdk

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Health limits.
const (
	// MaxHealthDetailLength bounds a health detail (characters).
	MaxHealthDetailLength = 500
	// MaxHealthMetrics bounds the metrics kept per report.
	MaxHealthMetrics = 32
	// MaxHealthMetricNameLength bounds a metric name (characters).
	MaxHealthMetricNameLength = 64
)

// Health is the module's health reporter. The visible state is the worst of
// the unkeyed report, every keyed concern, and core constraints the module
// cannot clear.
type Health interface {
	// Report sets the module's overall (unkeyed) state, replacing the
	// previous unkeyed report.
	Report(state HealthState, detail string, metrics map[string]float64)
	// ReportKey sets one named concern tracked independently; a keyed
	// HealthHealthy report with no detail and no metrics clears it.
	ReportKey(key string, state HealthState, detail string, metrics map[string]float64)
}

// HealthState is a module's health.
type HealthState string

// Health states, ordered healthy < starting < degraded < failed.
const (
	HealthHealthy  HealthState = "healthy"
	HealthStarting HealthState = "starting"
	HealthDegraded HealthState = "degraded"
	HealthFailed   HealthState = "failed"
)

// Rank orders states: healthy 0, starting 1, degraded 2, failed 3; -1 for
// unknown states.
func (s HealthState) Rank() int {
	switch s {
	case HealthHealthy:
		return 0
	case HealthStarting:
		return 1
	case HealthDegraded:
		return 2
	case HealthFailed:
		return 3
	}
	return -1
}

// Valid reports whether s is a known state.
func (s HealthState) Valid() bool { return s.Rank() >= 0 }

// WorstHealthState returns the worst of states (healthy when none).
func WorstHealthState(states ...HealthState) HealthState {
	worst := HealthHealthy
	for _, s := range states {
		if s.Rank() > worst.Rank() {
			worst = s
		}
	}
	return worst
}

// ModuleHealth is one health report.
type ModuleHealth struct {
	State     HealthState
	Detail    string
	Metrics   map[string]float64
	UpdatedAt time.Time
}

// ClearsKey reports whether a keyed report with these values clears its key.
func ClearsKey(state HealthState, detail string, metrics map[string]float64) bool {
	return state == HealthHealthy && detail == "" && len(metrics) == 0
}

// BoundHealthDetail truncates detail to MaxHealthDetailLength characters.
func BoundHealthDetail(detail string) string {
	if utf8.RuneCountInString(detail) <= MaxHealthDetailLength {
		return detail
	}
	return string([]rune(detail)[:MaxHealthDetailLength])
}

// secretMetricWords drop a metric whose name contains one of them
// (case-insensitive): health is displayed, secrets must not be.
var secretMetricWords = []string{"token", "secret", "key", "password", "credential"}

// BoundHealthMetrics returns a bounded copy of metrics: names containing
// token/secret/key/password/credential dropped, NaN and infinities dropped,
// names truncated to MaxHealthMetricNameLength, at most MaxHealthMetrics
// entries (the first in name order).
func BoundHealthMetrics(metrics map[string]float64) map[string]float64 {
	names := make([]string, 0, len(metrics))
	for name := range metrics {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string]float64, min(len(names), MaxHealthMetrics))
	for _, name := range names {
		if len(out) == MaxHealthMetrics {
			break
		}
		v := metrics[name]
		if math.IsNaN(v) || math.IsInf(v, 0) || isSecretMetric(name) {
			continue
		}
		if utf8.RuneCountInString(name) > MaxHealthMetricNameLength {
			name = string([]rune(name)[:MaxHealthMetricNameLength])
		}
		if _, dup := out[name]; !dup {
			out[name] = v
		}
	}
	return out
}

func isSecretMetric(name string) bool {
	lower := strings.ToLower(name)
	for _, w := range secretMetricWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// AggregateHealth combines reports (the unkeyed report, keyed concerns and
// core constraints) into the state the operator sees: the worst state; the
// unique non-empty details of the worst-level reports joined with "; " and
// bounded; all metrics merged in order and bounded; the latest UpdatedAt.
// No reports means healthy.
func AggregateHealth(reports ...ModuleHealth) ModuleHealth {
	if len(reports) == 0 {
		return ModuleHealth{State: HealthHealthy, Metrics: map[string]float64{}}
	}
	states := make([]HealthState, len(reports))
	for i, r := range reports {
		states[i] = r.State
	}
	worst := WorstHealthState(states...)
	var details []string
	merged := map[string]float64{}
	var updated time.Time
	for _, r := range reports {
		if r.State == worst && r.Detail != "" && !slices.Contains(details, r.Detail) {
			details = append(details, r.Detail)
		}
		for k, v := range r.Metrics {
			merged[k] = v
		}
		if r.UpdatedAt.After(updated) {
			updated = r.UpdatedAt
		}
	}
	return ModuleHealth{
		State:     worst,
		Detail:    BoundHealthDetail(strings.Join(details, "; ")),
		Metrics:   BoundHealthMetrics(merged),
		UpdatedAt: updated,
	}
}
