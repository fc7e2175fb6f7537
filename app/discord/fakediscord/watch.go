package fakediscord

import (
	"context"
	"slices"
	"sync"
)

// watchers are the subscribers of Watch. Their mutex is separate from s.mu: notify runs with
// s.mu held and never blocks, and a subscriber never takes s.mu while holding it.
type watchers struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
	done chan struct{} // closed by Close
}

// Watch returns a channel that receives a value after the model changes: a message posted,
// edited or deleted, a reaction, a member joining, an interaction started or answered
// (ephemeral responses and modals included), a command registered — every REST write and every
// gateway dispatch. Changes that come faster than the receiver reads are coalesced into one
// value; nothing is polled. The channel is closed when ctx is done or the fake is closed.
func (s *Server) Watch(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	out := make(chan struct{})
	s.watch.mu.Lock()
	if s.watch.subs == nil {
		s.watch.subs = map[chan struct{}]struct{}{}
	}
	s.watch.subs[ch] = struct{}{}
	done := s.watch.done
	s.watch.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			s.watch.mu.Lock()
			delete(s.watch.subs, ch)
			s.watch.mu.Unlock()
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

// notify wakes every Watch subscriber without blocking (a pending wake-up absorbs this one).
func (s *Server) notify() {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	for ch := range s.watch.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// closeWatchers ends every Watch subscription (Close).
func (s *Server) closeWatchers() {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	select {
	case <-s.watch.done:
	default:
		close(s.watch.done)
	}
}

// Interactions returns the interactions started in a channel, oldest first, as Interaction
// shows each (responses, ephemeral messages and follow-ups included).
func (s *Server) Interactions(channelID string) []*InteractionState {
	s.mu.Lock()
	var ids []string
	for id, in := range s.inters {
		if in.ChannelID == channelID {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(ids, cmpID)
	out := make([]*InteractionState, 0, len(ids))
	for _, id := range ids {
		if st := s.Interaction(id); st != nil {
			out = append(out, st)
		}
	}
	return out
}
