// Package signal is the change notification Kimi's live pages wait on: a
// set of watchers, each a channel with room for one signal, so a burst of
// changes coalesces into one wake-up and a slow reader never blocks the
// notifier. Nothing polls.
package signal

import (
	"context"
	"sync"
)

// Watchers are the subscribers of one source of changes. The zero value is
// ready to use; its mutex is its own, so Notify may be called with the
// source's locks held.
type Watchers struct {
	mu     sync.Mutex
	subs   map[chan struct{}]struct{}
	done   chan struct{} // closed by Close
	closed bool
}

// Notify signals every watcher without blocking (a pending signal absorbs
// this one).
func (w *Watchers) Notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Watch returns a channel that receives a value after changes (coalesced:
// one value stands for any number of them); it is closed when ctx ends or
// Close is called.
func (w *Watchers) Watch(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	out := make(chan struct{})
	w.mu.Lock()
	if w.subs == nil {
		w.subs = map[chan struct{}]struct{}{}
	}
	if w.done == nil {
		w.done = make(chan struct{})
		if w.closed {
			close(w.done)
		}
	}
	w.subs[ch] = struct{}{}
	done := w.done
	w.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			w.mu.Lock()
			delete(w.subs, ch)
			w.mu.Unlock()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-ch:
				select {
				case out <- struct{}{}:
				case <-ctx.Done():
					return
				case <-done:
					return
				}
			}
		}
	}()
	return out
}

// Close ends every subscription, present and future.
func (w *Watchers) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	if w.done != nil {
		close(w.done)
	}
}
