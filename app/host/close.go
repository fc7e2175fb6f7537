package host

import (
	"context"
	"fmt"
	"slices"
)

// closeModule closes one module: its lifetime ctx is cancelled, Close runs
// bounded (15 s, then a grace period), and every port view is revoked.
func (h *Host) closeModule(inst *instance) {
	inst.runningFlag.Store(false)
	inst.cancel()
	err, how := runBounded(context.Background(), h.opts.CloseTimeout, h.opts.CancelGrace, inst.mod.Close)
	switch how {
	case timedOut, abandoned:
		msg := fmt.Sprintf("Kimi module %s close() exceeded %s", inst.name, seconds(h.opts.CloseTimeout))
		if how == abandoned {
			msg += " and ignored cancellation"
		}
		inst.log.Error(msg + "; continuing shutdown")
	default:
		h.logFailure(inst, "close", err)
	}
	h.revoke(inst)
}

// revoke ends every port view of inst.
func (h *Host) revoke(inst *instance) {
	inst.closedFlag.Store(true)
	inst.runningFlag.Store(false)
	inst.cancel()
	h.router.dropModule(inst)
	h.commandsChanged() // its commands leave Discord at the next (debounced) sync
	if inst.events != nil {
		inst.events.Close(h.opts.CancelGrace)
	}
	if inst.jobs != nil {
		inst.jobs.Close()
	}
	if inst.results != nil {
		inst.results.close() // its handlers are unregistered; its rows stay
	}
	h.services.retireModule(inst.name)
	if inst.storage != nil {
		if err := inst.storage.Close(); err != nil {
			inst.log.Warn("closing the storage port failed", "err", err)
		}
	}
	if inst.http != nil {
		inst.http.close()
	}
	h.health.forget(inst.name)
	h.mu.Lock()
	h.started = slices.DeleteFunc(h.started, func(i *instance) bool { return i == inst })
	if e := h.entries[inst.name]; e != nil && e.inst == inst {
		e.inst = nil
	}
	h.mu.Unlock()
}

// closeAll closes every started module newest-first; op held.
func (h *Host) closeAll() {
	h.mu.Lock()
	started := slices.Clone(h.started)
	h.mu.Unlock()
	for _, inst := range slices.Backward(started) {
		h.closeModule(inst)
		h.mark(inst.name, StateStopped, "")
	}
}

// Close closes every module newest-first, then the event bus and module
// storage. Call it before the store closes.
func (h *Host) Close(ctx context.Context) error {
	h.op.Lock()
	defer h.op.Unlock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	if h.unsubscribe != nil {
		h.unsubscribe()
	}
	// Running jobs are cancelled (with the grace period) and their leases
	// released before the modules close; the jobs stay.
	if h.ownSched != nil {
		if err := h.ownSched.Close(ctx); err != nil {
			h.log.Warn("closing the scheduler failed", "err", err)
		}
	}
	h.closeAll()
	if h.bus != nil {
		h.bus.Close(h.opts.CancelGrace)
	}
	if h.mstore != nil {
		if err := h.mstore.Close(); err != nil {
			return fmt.Errorf("host: close module storage: %w", err)
		}
	}
	return nil
}
