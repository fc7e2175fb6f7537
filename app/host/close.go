package host

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// closeSlice is the least time a module still to close is kept when an
// earlier one overruns the host's close budget, so one hung module's
// close does not leave the others none.
const closeSlice = 100 * time.Millisecond

// closeBounds cuts a module's close timeout and cancel grace to what ctx's
// deadline leaves once the modules still to close after it (later) have
// their slice. A module's close may take the timeout and a grace (Close
// ignoring its ctx), then another grace (its event handlers, revoke), so
// timeout+2*grace must fit: at most the configured CloseTimeout and
// CancelGrace, and three fifths and one fifth of what is left when that is
// less.
func (h *Host) closeBounds(ctx context.Context, later int) (timeout, grace time.Duration) {
	timeout, grace = h.opts.CloseTimeout, h.opts.CancelGrace
	dl, ok := ctx.Deadline()
	if !ok {
		return timeout, grace
	}
	left := time.Until(dl) - time.Duration(later)*closeSlice
	if left < closeSlice {
		left = closeSlice
	}
	if timeout+2*grace > left {
		timeout, grace = left*3/5, left/5
	}
	return timeout, grace
}

// closeModule closes one module: its lifetime ctx is cancelled, Close runs
// bounded (15 s, then a grace period; both cut to fit ctx's deadline, see
// closeBounds), and every port view is revoked.
func (h *Host) closeModule(ctx context.Context, inst *instance, later int) {
	inst.runningFlag.Store(false)
	inst.cancel()
	timeout, grace := h.closeBounds(ctx, later)
	err, how := runBounded(withModule(context.Background(), inst.name), timeout, grace, inst.mod.Close)
	switch how {
	case timedOut, abandoned:
		msg := fmt.Sprintf("Kimi module %s close() exceeded %s", inst.name, seconds(timeout))
		if how == abandoned {
			msg += " and ignored cancellation"
		}
		inst.log.Error(msg + "; continuing shutdown")
	default:
		h.logFailure(inst, "close", err)
	}
	h.revoke(inst, grace)
}

// revoke ends every port view of inst; its event handlers still running
// get grace to return.
func (h *Host) revoke(inst *instance, grace time.Duration) {
	inst.closedFlag.Store(true)
	inst.runningFlag.Store(false)
	inst.cancel()
	h.router.dropModule(inst)
	h.commandsChanged() // its commands leave Discord at the next (debounced) sync
	if inst.events != nil {
		inst.events.Close(grace)
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

// closeAll closes every started module newest-first, within ctx's
// deadline when it has one; op held.
func (h *Host) closeAll(ctx context.Context) {
	h.mu.Lock()
	started := slices.Clone(h.started)
	h.mu.Unlock()
	for i, inst := range slices.Backward(started) {
		h.closeModule(ctx, inst, i)
		h.mark(inst.name, StateStopped, "")
	}
}

// Close closes every module newest-first, then the event bus and module
// storage. Call it before the store closes. With a deadline on ctx the
// whole close fits inside it: each module's close timeout and grace are
// cut to what is left (a hung module is abandoned sooner, and logged as
// exceeding the bound it had), and so is the wait for event handlers.
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
	h.goroutines.stop()
	if h.unsubscribe != nil {
		h.unsubscribe()
	}
	// Running jobs are cancelled (with the grace period) and their leases
	// released before the modules close; the jobs stay.
	if h.ownSched != nil {
		// A third of what is left at most, so jobs that ignore their
		// cancellation leave the modules time to close.
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok {
			sctx, cancel = context.WithTimeout(ctx, time.Until(dl)/3)
		}
		err := h.ownSched.Close(sctx)
		cancel()
		if err != nil {
			h.log.Warn("closing the scheduler failed", "err", err)
		}
	}
	h.closeAll(ctx)
	if h.bus != nil {
		_, grace := h.closeBounds(ctx, 0)
		h.bus.Close(grace)
	}
	if h.mstore != nil {
		if err := h.mstore.Close(); err != nil {
			return fmt.Errorf("host: close module storage: %w", err)
		}
	}
	return nil
}
