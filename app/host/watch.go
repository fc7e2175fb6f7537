package host

import (
	"context"
)

// Watch returns a channel that receives a signal after a module's state or
// visible health (state or detail) changes: read Modules or Module then.
// Signals coalesce — one pending signal stands for any number of changes.
// The channel is closed when ctx ends.
func (h *Host) Watch(ctx context.Context) <-chan struct{} { return h.watch.Watch(ctx) }
