package results

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/kimiapp/kimi/modules/sdk"
)

// healthOf is a module's scheduled_results constraint from its counts:
// failed while quarantined, degraded while any row is blocked or
// retrying, else healthy; metrics results_<status> for every status.
func healthOf(c Counts, quarantined bool) (sdk.HealthState, string, map[string]float64) {
	metrics := make(map[string]float64, len(Statuses))
	for _, st := range Statuses {
		metrics[HealthMetricPrefix+string(st)] = float64(c[st])
	}
	switch {
	case quarantined:
		return sdk.HealthFailed, DetailIgnoredCancel, metrics
	case c[StatusBlocked] > 0 || c[StatusRetry] > 0:
		return sdk.HealthDegraded, fmt.Sprintf(HealthDegradedDetailFmt, c[StatusBlocked], c[StatusRetry]), metrics
	default:
		return sdk.HealthHealthy, "", metrics
	}
}

// publishHealth reports module's constraint through its newest binding.
func (s *Service) publishHealth(module string, c Counts) {
	s.mu.Lock()
	b := s.latest[module]
	q := s.quarantine[module] > 0
	s.mu.Unlock()
	if b == nil || b.hooks.Health == nil {
		return
	}
	state, detail, metrics := healthOf(c, q)
	b.hooks.Health(state, detail, metrics)
}

// reportHealth reads module's counts and reports its constraint.
func (s *Service) reportHealth(ctx context.Context, module string) {
	c, err := s.moduleCounts(ctx, module)
	if err != nil {
		s.log.Warn("scheduled-result health not reported", "module", module, "err", err)
		return
	}
	s.publishHealth(module, c)
}

// healthLater queues modules for the reporter and wakes it (coalesced:
// the counts are read off the dispatcher's write transaction).
func (s *Service) healthLater(modules ...string) {
	if len(modules) == 0 {
		return
	}
	s.healthQueue(modules...)
	s.wakeHealth()
}

// healthQueue queues modules for the reporter's next run.
func (s *Service) healthQueue(modules ...string) {
	s.mu.Lock()
	for _, m := range modules {
		s.healthDirty[m] = true
	}
	s.mu.Unlock()
}

// wakeHealth wakes the reporter (never blocks).
func (s *Service) wakeHealth() {
	select {
	case s.healthWake <- struct{}{}:
	default:
	}
}

// reportLoop reports the queued modules' health until Close.
func (s *Service) reportLoop() {
	defer close(s.healthDone)
	for {
		select {
		case <-s.stop:
			return
		case <-s.healthWake:
		}
		s.mu.Lock()
		mods := slices.Sorted(maps.Keys(s.healthDirty))
		clear(s.healthDirty)
		s.mu.Unlock()
		for _, m := range mods {
			ctx, cancel := context.WithTimeout(s.runCtx, stepTimeout)
			s.reportHealth(ctx, m)
			cancel()
		}
	}
}
