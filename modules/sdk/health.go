package sdk

import (
	"time"
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

// ModuleHealth is one health report.
type ModuleHealth struct {
	State     HealthState
	Detail    string
	Metrics   map[string]float64
	UpdatedAt time.Time
}
