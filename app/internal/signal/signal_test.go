package signal

import (
	"context"
	"testing"
	"time"
)

func TestWatchCoalescesAndEnds(t *testing.T) {
	var w Watchers
	ctx, cancel := context.WithCancel(context.Background())
	ch := w.Watch(ctx)
	w.Notify()
	w.Notify()
	w.Notify()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no signal after Notify")
	}
	cancel()
	for range ch { // at most the coalesced second signal, then closed
	}
	w.Notify() // no subscriber left: must not block

	ch = w.Watch(context.Background())
	w.Close()
	for range ch {
	}
	if _, open := <-w.Watch(context.Background()); open {
		t.Fatal("a Watch after Close is not closed")
	}
}
