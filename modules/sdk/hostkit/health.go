package hostkit

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kimiapp/kimi/modules/sdk"
)

// WorstHealthState returns the worst of states (healthy when none).
func WorstHealthState(states ...sdk.HealthState) sdk.HealthState {
	worst := sdk.HealthHealthy
	for _, s := range states {
		if s.Rank() > worst.Rank() {
			worst = s
		}
	}
	return worst
}

// ClearsKey reports whether a keyed report with these values clears its key.
func ClearsKey(state sdk.HealthState, detail string, metrics map[string]float64) bool {
	return state == sdk.HealthHealthy && detail == "" && len(metrics) == 0
}

// BoundHealthDetail truncates detail to MaxHealthDetailLength characters.
func BoundHealthDetail(detail string) string {
	if utf8.RuneCountInString(detail) <= sdk.MaxHealthDetailLength {
		return detail
	}
	return string([]rune(detail)[:sdk.MaxHealthDetailLength])
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
	out := make(map[string]float64, min(len(names), sdk.MaxHealthMetrics))
	for _, name := range names {
		if len(out) == sdk.MaxHealthMetrics {
			break
		}
		v := metrics[name]
		if math.IsNaN(v) || math.IsInf(v, 0) || isSecretMetric(name) {
			continue
		}
		if utf8.RuneCountInString(name) > sdk.MaxHealthMetricNameLength {
			name = string([]rune(name)[:sdk.MaxHealthMetricNameLength])
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
func AggregateHealth(reports ...sdk.ModuleHealth) sdk.ModuleHealth {
	if len(reports) == 0 {
		return sdk.ModuleHealth{State: sdk.HealthHealthy, Metrics: map[string]float64{}}
	}
	states := make([]sdk.HealthState, len(reports))
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
	return sdk.ModuleHealth{
		State:     worst,
		Detail:    BoundHealthDetail(strings.Join(details, "; ")),
		Metrics:   BoundHealthMetrics(merged),
		UpdatedAt: updated,
	}
}
