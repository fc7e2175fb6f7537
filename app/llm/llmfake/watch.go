package llmfake

import (
	"context"
	"sync"
)

// watchers wake the fake's watchers after every recorded request. It is
// the fake's own (llmfake imports nothing of Kimi, so demo mode can run
// it): a channel closed and replaced on every notify, which each watcher
// turns into a coalescing one-slot signal.
type watchers struct {
	mu      sync.Mutex
	changed chan struct{} // closed by the next notify
	closed  bool
}

// current returns the channel the next notify (or close) closes; w.mu held.
func (w *watchers) current() chan struct{} {
	if w.changed == nil {
		w.changed = make(chan struct{})
	}
	return w.changed
}

func (w *watchers) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	close(w.current())
	w.changed = nil
}

func (w *watchers) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		close(w.current())
	}
}

// watch returns a channel that receives a value after notifies (one value
// for any number of them) and is closed when ctx ends or close is called.
func (w *watchers) watch(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	w.mu.Lock()
	next, closed := w.current(), w.closed
	w.mu.Unlock()
	go func() {
		defer close(out)
		for !closed {
			select {
			case <-ctx.Done():
				return
			case <-next:
			}
			// Take the channel the following notify closes before
			// signalling, so a request recorded after the receiver's
			// read of the state still wakes it.
			w.mu.Lock()
			next, closed = w.current(), w.closed
			w.mu.Unlock()
			if closed {
				return
			}
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}()
	return out
}
