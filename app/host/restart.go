package host

import (
	"context"
	"fmt"
	"slices"

	"github.com/kimiapp/kimi/app/store"
)

// Restart closes and starts again one module and the modules that depend
// on it (name ""; every module, re-reading the selection), in-process,
// with an audit row.
func (h *Host) Restart(ctx context.Context, name, actor string) error {
	if name != "" {
		if _, ok := h.specs[name]; !ok {
			return fmt.Errorf("host: restart: %w: %s", ErrUnknownModule, name)
		}
	}
	h.op.Lock()
	defer h.op.Unlock()
	if h.isClosed() {
		return fmt.Errorf("host: restart: %w", ErrClosed)
	}
	if h.store != nil {
		target := name
		if target == "" {
			target = "all"
		}
		if err := h.store.Audit(ctx, store.AuditEntry{Actor: actor, Action: ActionModuleRestart, Target: target}); err != nil {
			return fmt.Errorf("host: restart: %w", err)
		}
	}
	if name == "" {
		h.closeAll(context.Background())
		return h.boot(ctx, nil)
	}
	// The selection is read before anything closes: when it cannot be
	// read, nothing is closed (and no closed module is left shown running).
	sel, err := h.selectionNow(ctx)
	if err != nil {
		return err
	}
	set := h.dependents(name)
	h.closeSet(set)
	h.relaunch(ctx, set, preflight(h.specs, sel, h.caps, h.opts.HasFileReader))
	return nil
}

// closeSet closes the running modules in set, newest first, each shown
// stopped once closed: until relaunch judges it again, and for good if it
// is not started again (a start that fails, a restart cut short).
func (h *Host) closeSet(set map[string]bool) {
	h.mu.Lock()
	var closing []*instance
	for _, inst := range h.started {
		if set[inst.name] {
			closing = append(closing, inst)
		}
	}
	h.mu.Unlock()
	for _, inst := range slices.Backward(closing) {
		h.closeModule(context.Background(), inst, 0)
		h.mark(inst.name, StateStopped, "")
	}
}

// relaunch marks the modules of set as plan p judges them (failed,
// disabled, or stopped and ready) and launches them in p's order. Their
// modules must be closed already (closeSet).
func (h *Host) relaunch(ctx context.Context, set map[string]bool, p *plan) {
	var order []string
	for _, n := range p.order {
		if !set[n] {
			continue
		}
		order = append(order, n)
		h.mu.Lock()
		h.entries[n].fieldErrors = nil
		h.mu.Unlock()
		switch {
		case p.failed[n] != "":
			h.mark(n, StateFailed, p.failed[n])
		case p.disabled[n] != "":
			h.mark(n, StateDisabled, p.disabled[n])
		default:
			h.mark(n, StateStarting, "")
		}
	}
	h.launch(ctx, order)
}

// dependents returns name and every module that depends on it, directly or not.
func (h *Host) dependents(name string) map[string]bool {
	set := map[string]bool{name: true}
	for changed := true; changed; {
		changed = false
		for n, s := range h.specs {
			if set[n] {
				continue
			}
			for _, d := range s.Dependencies {
				if set[d] {
					set[n], changed = true, true
					break
				}
			}
		}
	}
	return set
}

// SetEnabled stores a module's place in the selection with an audit row.
// Unless KIMI_MODULES overrides the selection, the modules are then
// restarted on the new selection; with the override the change waits
// until KIMI_MODULES is removed.
func (h *Host) SetEnabled(ctx context.Context, name string, enabled bool, actor string) error {
	if _, ok := h.specs[name]; !ok {
		return fmt.Errorf("host: set enabled: %w: %s", ErrUnknownModule, name)
	}
	h.op.Lock()
	defer h.op.Unlock()
	if h.isClosed() {
		return fmt.Errorf("host: set enabled: %w", ErrClosed)
	}
	if err := h.writeSelection(ctx, name, enabled, actor); err != nil {
		return err
	}
	if h.opts.SelectionSet {
		return nil
	}
	h.closeAll(context.Background())
	return h.boot(ctx, nil)
}
