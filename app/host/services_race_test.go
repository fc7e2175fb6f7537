package host

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestProvideRacingRevokeLeavesNothing: revoke sets the module's closed
// flag, then retireModule clears its provisions under the book's lock. A
// Provide that passed its first check before the flag, and reaches the
// lock only after retireModule found nothing, must still refuse: no
// provision of a revoked module may stay live. The test holds the book's
// lock so that Provide waits exactly there.
func TestProvideRacingRevokeLeavesNothing(t *testing.T) {
	book := newServiceBook()
	inst := &instance{h: &Host{}, name: "p", spec: sdk.Spec{Name: "p", Provides: []sdk.ServiceDeclaration{{Name: "svc", Version: 1}}}}
	view := &services{inst: inst, book: book}

	book.mu.Lock()
	done := make(chan error, 1)
	go func() {
		_, err := view.Provide("svc", 1, "impl")
		done <- err
	}()
	// Wait (bounded) until Provide is blocked on the book's lock.
	deadline := time.Now().Add(20 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		blocked := false
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "(*services).Provide") && strings.Contains(g, "sync.(*Mutex).Lock") {
				blocked = true
			}
		}
		if blocked {
			break
		}
		if time.Now().After(deadline) {
			book.mu.Unlock()
			t.Fatal("Provide never reached the book's lock")
		}
		runtime.Gosched()
	}
	inst.closedFlag.Store(true) // revoke; its retireModule would find nothing yet
	book.mu.Unlock()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Provide did not return")
	}
	book.mu.Lock()
	left := len(book.live)
	book.mu.Unlock()
	if left != 0 {
		t.Fatalf("a revoked module's provision stayed live (Provide = %v)", err)
	}
	if !errors.Is(err, ErrRevoked) {
		t.Errorf("Provide = %v, want ErrRevoked", err)
	}
}
