package discord

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// auditBlockingSource is a session source whose session() is entered by
// the debounced sync and returns only once the interactions' ctx ends
// (Close): it records that it returned.
type auditBlockingSource struct {
	x        *interactions
	entered  chan struct{}
	returned atomic.Bool
}

func (a *auditBlockingSource) session() (*discordgo.Session, error) {
	close(a.entered)
	<-a.x.ctx.Done()
	a.returned.Store(true)
	return nil, ErrNotConnected
}

func (a *auditBlockingSource) self() (uint64, uint64) { return 1, 2 }

// TestAuditCloseWaitsForARunningDebouncedSync: a debounced command sync
// whose timer fired just before Close ran on after Close returned (the
// timer's Stop does not wait for a func already running, and close's
// WaitGroup did not count it): a sync writing the store and Discord after
// the bot was closed.
func TestAuditCloseWaitsForARunningDebouncedSync(t *testing.T) {
	src := &auditBlockingSource{entered: make(chan struct{})}
	x := newInteractions(slog.New(slog.DiscardHandler), src, nil, nil)
	src.x = x
	var fire func()
	x.afterFunc = func(_ time.Duration, f func()) stopper { fire = f; return time.NewTimer(time.Hour) }
	x.mu.Lock()
	x.ready = true
	x.mu.Unlock()
	x.commandsChanged()
	if fire == nil {
		t.Fatal("commandsChanged set no debounce timer")
	}
	go fire() // the timer fired
	select {
	case <-src.entered:
	case <-time.After(connWait):
		t.Fatal("the debounced sync never ran")
	}
	x.close()
	if !src.returned.Load() {
		t.Fatal("close returned while the debounced sync was still running")
	}
}
