package results

import (
	"context"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Binding is a module instance's sdk.ScheduledResults: Subscribe writes
// the subscription row (kept across restarts) and registers the handler;
// Unsubscribe deletes the row and its notifications. Close unregisters
// the instance's handlers; later calls fail with the closed error.
type Binding struct {
	s      *Service
	module string
	hooks  Hooks
}

var _ sdk.ScheduledResults = (*Binding)(nil)

func (s *Service) bind(module string, hooks Hooks) *Binding {
	return &Binding{s: s, module: module, hooks: hooks}
}

// Subscribe validates (hostkit.ValidateResultSubscription, then the
// declaration: "Scheduled-result subscription is closed or undeclared"),
// writes the subscription if new (no history is replayed: only later
// publications notify it) and registers handler for this instance.
func (b *Binding) Subscribe(ctx context.Context, name string, guildID uint64, handler sdk.ScheduledResultHandler) error {
	return errNotImplemented
}

// Unsubscribe validates as Subscribe, deletes the subscription and its
// notifications and unregisters the handler.
func (b *Binding) Unsubscribe(ctx context.Context, name string, guildID uint64) error {
	return errNotImplemented
}

// Close unregisters the instance's handlers (its rows stay, blocked until
// the module returns, unsubscribes or they expire).
func (b *Binding) Close() {}
