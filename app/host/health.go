package host

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// DefaultHistorySize is how many health changes are kept per module.
const DefaultHistorySize = 64

// HealthChange is one change of a module's visible state or detail.
type HealthChange struct {
	At     time.Time
	State  sdk.HealthState
	Detail string
}

// healthBook keeps every module's health inputs (§6): the unkeyed report,
// keyed concerns the module reports, and core constraints keyed by source
// the module cannot clear; the visible health is their aggregate. State and
// detail changes are kept in a bounded per-module history (a ring in
// memory: the hot path only appends under the lock, nothing is written to
// the database).
type healthBook struct {
	mu       sync.Mutex
	now      func() time.Time
	histSize int
	log      func(module string) *slog.Logger
	mods     map[string]*healthEntry
	// changed, when set, is called (under mu; it must not block) after a
	// module's visible state or detail changed.
	changed func()
}

type healthEntry struct {
	unkeyed *sdk.ModuleHealth
	keyed   map[string]sdk.ModuleHealth
	core    map[string]sdk.ModuleHealth
	merged  map[string]float64 // event-bus counters etc., no state of their own
	visible sdk.ModuleHealth
	seen    bool
	history []HealthChange // oldest first, at most histSize
}

func newHealthBook(now func() time.Time, histSize int, log func(string) *slog.Logger) *healthBook {
	if histSize <= 0 {
		histSize = DefaultHistorySize
	}
	return &healthBook{now: now, histSize: histSize, log: log, mods: map[string]*healthEntry{}}
}

func (b *healthBook) entry(module string) *healthEntry {
	e := b.mods[module]
	if e == nil {
		e = &healthEntry{keyed: map[string]sdk.ModuleHealth{}, core: map[string]sdk.ModuleHealth{}, merged: map[string]float64{}}
		b.mods[module] = e
	}
	return e
}

func (b *healthBook) bounded(state sdk.HealthState, detail string, metrics map[string]float64) sdk.ModuleHealth {
	return sdk.ModuleHealth{State: state, Detail: hostkit.BoundHealthDetail(detail), Metrics: hostkit.BoundHealthMetrics(metrics), UpdatedAt: b.now()}
}

// report sets the unkeyed report (the module's or the lifecycle's).
func (b *healthBook) report(module string, state sdk.HealthState, detail string, metrics map[string]float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(module)
	h := b.bounded(state, detail, metrics)
	e.unkeyed = &h
	b.settle(module, e)
}

// reportKey sets or (healthy, no detail, no metrics) clears a keyed concern.
func (b *healthBook) reportKey(module, key string, state sdk.HealthState, detail string, metrics map[string]float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(module)
	if hostkit.ClearsKey(state, detail, metrics) {
		delete(e.keyed, key)
	} else {
		e.keyed[key] = b.bounded(state, detail, metrics)
	}
	b.settle(module, e)
}

// constrain sets a core constraint keyed by source; healthy with no
// detail clears it. Only the host calls it: the module cannot clear it.
func (b *healthBook) constrain(module, source string, state sdk.HealthState, detail string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(module)
	if state == sdk.HealthHealthy && detail == "" {
		if _, ok := e.core[source]; !ok {
			return
		}
		delete(e.core, source)
	} else {
		e.core[source] = b.bounded(state, detail, nil)
	}
	b.settle(module, e)
}

// constrainUnless is constrain plus mergeMetrics in one hold of the
// book's lock, skipped when gone() (checked under it): forget, which runs
// after the module's close mark is set, cannot slip between the check and
// the write and leave a closed incarnation's constraint behind.
func (b *healthBook) constrainUnless(gone func() bool, module, source string, state sdk.HealthState, detail string, metrics map[string]float64) {
	b.mu.Lock()
	if gone() {
		b.mu.Unlock()
		return
	}
	e := b.entry(module)
	_, had := e.core[source]
	switch {
	case state == sdk.HealthHealthy && detail == "" && !had:
		// Nothing to clear: the health and its age stay as they are (a
		// periodic healthy verdict, the goroutine count's, must not reset
		// the age /modules shows).
	case state == sdk.HealthHealthy && detail == "":
		delete(e.core, source)
		b.settle(module, e)
	default:
		e.core[source] = b.bounded(state, detail, nil)
		b.settle(module, e)
	}
	b.mergeMetricsLocked(module, metrics)
	b.mu.Unlock()
}

// mergeMetrics updates the core's counters (the event bus's, the
// storage's, the scheduled results') in a module's health metrics without
// changing its state, detail or age. It runs when the health is read, not
// per event. Counters that arrive before the module's first report are
// kept and show with it.
func (b *healthBook) mergeMetrics(module string, metrics map[string]float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mergeMetricsLocked(module, metrics)
}

// mergeMetricsLocked is mergeMetrics with b.mu held.
func (b *healthBook) mergeMetricsLocked(module string, metrics map[string]float64) {
	e := b.entry(module)
	if !e.seen {
		maps.Copy(e.merged, metrics) // nothing visible to settle yet
		return
	}
	same := true
	for k, v := range metrics {
		if old, ok := e.merged[k]; !ok || old != v {
			same = false
			break
		}
	}
	if same {
		return
	}
	maps.Copy(e.merged, metrics)
	prev := e.visible
	b.settle(module, e)
	if e.visible.State == prev.State && e.visible.Detail == prev.Detail {
		e.visible.UpdatedAt = prev.UpdatedAt // counters do not make the health newer
	}
}

// settleStarted is the lifecycle's report after a clean start: healthy
// unless the module reported something other than starting.
func (b *healthBook) settleStarted(module string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(module)
	if e.unkeyed == nil || e.unkeyed.State == sdk.HealthStarting {
		h := b.bounded(sdk.HealthHealthy, "", nil)
		e.unkeyed = &h
	}
	b.settle(module, e)
}

// forget drops a module's reports and constraints (at close); the history
// stays for the admin UI.
func (b *healthBook) forget(module string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entry(module)
	e.unkeyed, e.keyed, e.core, e.merged = nil, map[string]sdk.ModuleHealth{}, map[string]sdk.ModuleHealth{}, map[string]float64{}
}

func (b *healthBook) settle(module string, e *healthEntry) {
	inputs := make([]sdk.ModuleHealth, 0, 2+len(e.keyed)+len(e.core))
	if e.unkeyed != nil {
		inputs = append(inputs, *e.unkeyed)
	}
	for _, k := range slices.Sorted(maps.Keys(e.keyed)) {
		inputs = append(inputs, e.keyed[k])
	}
	for _, k := range slices.Sorted(maps.Keys(e.core)) {
		inputs = append(inputs, e.core[k])
	}
	next := hostkit.AggregateHealth(inputs...)
	next.UpdatedAt = b.now()
	if len(e.merged) > 0 {
		// The core's counters always show: the module's own metrics get
		// what is left of sdk.MaxHealthMetrics (the first in name order).
		next.Metrics = withCounters(next.Metrics, e.merged)
	}
	changed := !e.seen || next.State != e.visible.State || next.Detail != e.visible.Detail
	e.visible, e.seen = next, true
	if !changed {
		return
	}
	e.history = append(e.history, HealthChange{At: next.UpdatedAt, State: next.State, Detail: next.Detail})
	if over := len(e.history) - b.histSize; over > 0 {
		e.history = slices.Delete(e.history, 0, over)
	}
	if b.changed != nil {
		b.changed()
	}
	if b.log != nil {
		msg := "Kimi module " + module + " is " + string(next.State)
		if next.Detail != "" {
			msg += ": " + next.Detail
		}
		level := slog.LevelInfo
		if next.State.Rank() >= sdk.HealthDegraded.Rank() {
			level = slog.LevelWarn
		}
		b.log(module).Log(context.Background(), level, msg)
	}
}

// withCounters returns the module's metrics, cut to what the counters
// leave of sdk.MaxHealthMetrics, plus the counters.
func withCounters(own, counters map[string]float64) map[string]float64 {
	room := sdk.MaxHealthMetrics - len(counters)
	out := make(map[string]float64, sdk.MaxHealthMetrics)
	for _, k := range slices.Sorted(maps.Keys(own)) {
		if _, core := counters[k]; core {
			continue
		}
		if len(out) >= room {
			break
		}
		out[k] = own[k]
	}
	maps.Copy(out, hostkit.BoundHealthMetrics(counters))
	return out
}

// snapshot returns a module's visible health and history (copies).
func (b *healthBook) snapshot(module string) (sdk.ModuleHealth, []HealthChange, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.mods[module]
	if e == nil || !e.seen {
		return sdk.ModuleHealth{}, nil, false
	}
	h := e.visible
	h.Metrics = maps.Clone(h.Metrics)
	return h, slices.Clone(e.history), true
}

// reporter is a module's sdk.Health view; it drops reports once revoked.
type reporter struct {
	inst *instance
	book *healthBook
}

var _ sdk.Health = (*reporter)(nil)

// Report implements sdk.Health.
func (r *reporter) Report(state sdk.HealthState, detail string, metrics map[string]float64) {
	if !r.accept(state) {
		return
	}
	r.book.report(r.inst.name, state, detail, metrics)
}

// ReportKey implements sdk.Health.
func (r *reporter) ReportKey(key string, state sdk.HealthState, detail string, metrics map[string]float64) {
	if !r.accept(state) {
		return
	}
	r.book.reportKey(r.inst.name, key, state, detail, metrics)
}

func (r *reporter) accept(state sdk.HealthState) bool {
	if r.inst.revoked() {
		r.inst.log.Warn("health report after close ignored", "state", string(state))
		return false
	}
	if !state.Valid() {
		r.inst.log.Warn("health report with an unknown state ignored", "state", string(state))
		return false
	}
	return true
}
