package host

import (
	"context"
	"fmt"
	"slices"

	"github.com/kimiapp/kimi/modules/sdk"
)

// capabilities returns what the host advertises now. SetCapabilities
// writes h.caps holding both h.op and h.mu, so a reader holding either
// (boot, Restart and launch hold h.op) sees a consistent value.
func (h *Host) capabilities() sdk.Capabilities {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.caps
}

// SetCapabilities changes what the host advertises (the Discord connection
// calls it when the operator changes the gateway intents) and re-runs the
// preflight on the current selection: a running module whose activation
// (or required) capabilities caps no longer covers is closed and
// soft-disabled with the reason, with its dependents; a module refused
// only for capabilities that caps now covers starts. Other modules are
// left alone. Before Start it only sets what Start will advertise.
func (h *Host) SetCapabilities(ctx context.Context, caps sdk.Capabilities) error {
	h.op.Lock()
	defer h.op.Unlock()
	if h.isClosed() {
		return fmt.Errorf("host: set capabilities: %w", ErrClosed)
	}
	h.mu.Lock()
	old := h.caps
	h.caps = caps
	booted := h.selection != nil
	h.mu.Unlock()
	if !booted || sameCapabilities(old, caps) {
		return nil
	}
	h.log.Info("capabilities changed", "capabilities", caps.Names(), "members_intent", caps.MembersIntent(),
		"message_content_intent", caps.MessageContentIntent())
	h.mu.Lock()
	sel := slices.Clone(h.selection)
	h.mu.Unlock()
	before := preflight(h.specs, sel, old, h.opts.HasFileReader)
	after := preflight(h.specs, sel, caps, h.opts.HasFileReader)
	affected := map[string]bool{}
	for _, n := range after.order {
		if before.failed[n] != after.failed[n] || before.disabled[n] != after.disabled[n] {
			affected[n] = true
		}
	}
	if len(affected) == 0 {
		return nil
	}
	h.closeSet(affected)
	h.relaunch(ctx, affected, after)
	return nil
}

func sameCapabilities(a, b sdk.Capabilities) bool {
	return slices.Equal(a.Names(), b.Names()) && a.MembersIntent() == b.MembersIntent() &&
		a.MessageContentIntent() == b.MessageContentIntent()
}
