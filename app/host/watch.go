package host

import (
	"context"
	"sync"
)

// watchers are the admin's subscriptions to status changes: each is a
// channel with room for one signal, so a burst of changes coalesces into
// one wake-up and a slow reader never blocks the host.
type watchers struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// notify signals every watcher without blocking.
func (w *watchers) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default: // a signal is already pending
		}
	}
}

// Watch returns a channel that receives a signal after a module's state or
// visible health (state or detail) changes: read Modules or Module then.
// Signals coalesce — one pending signal stands for any number of changes.
// The channel is closed when ctx ends.
func (h *Host) Watch(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	out := make(chan struct{})
	h.watch.mu.Lock()
	if h.watch.subs == nil {
		h.watch.subs = map[chan struct{}]struct{}{}
	}
	h.watch.subs[ch] = struct{}{}
	h.watch.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			h.watch.mu.Lock()
			delete(h.watch.subs, ch)
			h.watch.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				select {
				case out <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
