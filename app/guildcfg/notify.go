package guildcfg

import (
	"log/slog"
	"sync"
)

// Change tells a subscriber that a document was committed. Subscribers
// re-read what they need (Active, ModuleSettings) from the Service, whose
// snapshot already holds the change when the Change is delivered.
type Change struct {
	Target Target
	// GuildID is the guild the document belongs to (0 for a channel
	// fragment, whose guild the documents do not record).
	GuildID uint64
	// Module is the module whose settings changed, "" for a server-setup
	// or channel document.
	Module string
	// Revision is the document's new revision.
	Revision string
	// Active is the guild's activation after the change.
	Active bool
	// Resync is set on the one Change that replaces the backlog of a
	// subscriber that fell maxPendingChanges behind: anything may have
	// changed, so re-read every guild. All other fields are zero.
	Resync bool
}

// maxPendingChanges bounds a subscriber's backlog.
const maxPendingChanges = 1024

// subscriber delivers Changes to one callback, in commit order, on its own
// goroutine, so a slow callback never holds up a writer: the writer only
// appends to the queue. A backlog past maxPendingChanges collapses into a
// single Resync change (memory stays bounded, order is kept).
type subscriber struct {
	fn  func(Change)
	log *slog.Logger

	mu      sync.Mutex
	queue   []Change
	wake    chan struct{}
	stopped bool
	done    chan struct{}
}

func newSubscriber(fn func(Change), log *slog.Logger) *subscriber {
	s := &subscriber{fn: fn, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *subscriber) push(changes []Change) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.queue = append(s.queue, changes...)
	if len(s.queue) > maxPendingChanges {
		s.queue = append(s.queue[:0], Change{Resync: true})
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber) stop() {
	s.mu.Lock()
	s.stopped = true
	s.queue = nil
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber) run() {
	defer close(s.done)
	for range s.wake {
		for {
			s.mu.Lock()
			if s.stopped {
				s.mu.Unlock()
				return
			}
			if len(s.queue) == 0 {
				s.mu.Unlock()
				break
			}
			c := s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			s.deliver(c)
		}
	}
}

func (s *subscriber) deliver(c Change) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("change subscriber panicked", "target", c.Target.String(), "panic", r)
		}
	}()
	s.fn(c)
}
