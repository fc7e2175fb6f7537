package llmfake

import (
	"testing"
	"time"
)

// TestWatchLosesNoWakeUpAfterARead: a notify that comes right after the
// watcher has received — while it reads the state — wakes it again, every
// time; a watcher that took the next channel only after signalling misses
// some of them.
func TestWatchLosesNoWakeUpAfterARead(t *testing.T) {
	var w watchers
	ch := w.watch(t.Context())
	w.notify()
	for i := range 200000 {
		select {
		case _, open := <-ch:
			if !open {
				t.Fatalf("the channel closed at wake-up %d", i)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("wake-up %d lost: none within 30 s of its notify", i)
		}
		w.notify()
	}
	w.close()
	for range ch {
	}
}
