package sdktest

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// HealthReport is one recorded call of a FakeHealth: Key is "" for an
// unkeyed report.
type HealthReport struct {
	Key    string
	Health sdk.ModuleHealth
}

// FakeHealth is an sdk.Health that records every report. Current is the
// latest unkeyed report, Keyed the latest live report per key (a keyed
// healthy report with no detail and no metrics clears its key, as in the
// host), and State the worst of both — what the host would show for the
// module. Details and metrics are bounded with the SDK's helpers, so a
// test sees what an operator would.
type FakeHealth struct {
	mu      sync.Mutex
	history []HealthReport
	reports []sdk.ModuleHealth
	keyed   map[string]sdk.ModuleHealth
	core    map[string]sdk.ModuleHealth
}

var _ sdk.Health = (*FakeHealth)(nil)

// NewFakeHealth returns a reporter with no reports.
func NewFakeHealth() *FakeHealth {
	return &FakeHealth{keyed: map[string]sdk.ModuleHealth{}, core: map[string]sdk.ModuleHealth{}}
}

// Constrain sets a core constraint on the module, one the module's own
// reports cannot clear (NewRuntime uses source "services" for declared
// services a started module did not provide). A healthy state removes it.
func (h *FakeHealth) Constrain(source string, state sdk.HealthState, detail string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if state == sdk.HealthHealthy {
		delete(h.core, source)
		return
	}
	h.core[source] = sdk.ModuleHealth{State: state, Detail: hostkit.BoundHealthDetail(detail), Metrics: map[string]float64{},
		UpdatedAt: time.Unix(int64(len(h.history)), 0)}
}

// Constraint returns the core constraint from source.
func (h *FakeHealth) Constraint(source string) (health sdk.ModuleHealth, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	health, ok = h.core[source]
	return cloneHealth(health), ok
}

// cloneHealth copies a report's metrics, so what the fake hands out cannot
// rewrite what it recorded.
func cloneHealth(m sdk.ModuleHealth) sdk.ModuleHealth {
	m.Metrics = maps.Clone(m.Metrics)
	return m
}

// record builds the report; UpdatedAt counts reports (one second each since
// the epoch) so order is visible and deterministic.
func (h *FakeHealth) record(key string, state sdk.HealthState, detail string, metrics map[string]float64) sdk.ModuleHealth {
	health := sdk.ModuleHealth{
		State:     state,
		Detail:    hostkit.BoundHealthDetail(detail),
		Metrics:   hostkit.BoundHealthMetrics(metrics),
		UpdatedAt: time.Unix(int64(len(h.history)), 0),
	}
	h.history = append(h.history, HealthReport{Key: key, Health: health})
	return health
}

// Report records the module's unkeyed state.
func (h *FakeHealth) Report(state sdk.HealthState, detail string, metrics map[string]float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reports = append(h.reports, h.record("", state, detail, metrics))
}

// ReportKey records one keyed concern; a healthy report with no detail and
// no metrics clears the key.
func (h *FakeHealth) ReportKey(key string, state sdk.HealthState, detail string, metrics map[string]float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	health := h.record(key, state, detail, metrics)
	if hostkit.ClearsKey(state, detail, metrics) {
		delete(h.keyed, key)
		return
	}
	h.keyed[key] = health
}

// Current returns the latest unkeyed report; ok is false when there is none.
func (h *FakeHealth) Current() (health sdk.ModuleHealth, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.reports) == 0 {
		return sdk.ModuleHealth{}, false
	}
	return cloneHealth(h.reports[len(h.reports)-1]), true
}

// Keyed returns the live report for key.
func (h *FakeHealth) Keyed(key string) (health sdk.ModuleHealth, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	health, ok = h.keyed[key]
	return cloneHealth(health), ok
}

// Keys returns the live keys, sorted.
func (h *FakeHealth) Keys() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(maps.Keys(h.keyed))
}

// Reports returns every unkeyed report, oldest first.
func (h *FakeHealth) Reports() []sdk.ModuleHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]sdk.ModuleHealth, len(h.reports))
	for i, r := range h.reports {
		out[i] = cloneHealth(r)
	}
	return out
}

// History returns every call, keyed and unkeyed, oldest first.
func (h *FakeHealth) History() []HealthReport {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]HealthReport, len(h.history))
	for i, r := range h.history {
		out[i] = HealthReport{Key: r.Key, Health: cloneHealth(r.Health)}
	}
	return out
}

// State returns the worst state across the current unkeyed report, every
// live keyed report and every core constraint; healthy when there are none.
func (h *FakeHealth) State() sdk.HealthState { return h.Aggregate().State }

// Aggregate returns what the host would show for the module
// (hostkit.AggregateHealth over the current unkeyed report, the live keyed
// reports in key order and the core constraints): worst state, the worst
// reports' details, merged metrics.
func (h *FakeHealth) Aggregate() sdk.ModuleHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	reports := make([]sdk.ModuleHealth, 0, len(h.keyed)+1)
	if len(h.reports) > 0 {
		reports = append(reports, h.reports[len(h.reports)-1])
	}
	for _, key := range slices.Sorted(maps.Keys(h.keyed)) {
		reports = append(reports, h.keyed[key])
	}
	for _, source := range slices.Sorted(maps.Keys(h.core)) {
		reports = append(reports, h.core[source])
	}
	return hostkit.AggregateHealth(reports...)
}
