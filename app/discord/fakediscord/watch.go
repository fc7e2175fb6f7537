package fakediscord

import (
	"context"
	"slices"
)

// Watch returns a channel that receives a value after the model changes: a message posted,
// edited or deleted, a reaction, a member joining, an interaction started or answered
// (ephemeral responses and modals included), a command registered — every REST write and every
// gateway dispatch — and after what the fake records: every REST request (Requests, refused and
// read-only ones too), every gateway connection opened or closed and every payload a client
// sends (GatewayStats). Changes that come faster than the receiver reads are coalesced into one
// value; nothing is polled. The channel is closed when ctx is done or the fake is closed.
func (s *Server) Watch(ctx context.Context) <-chan struct{} { return s.watch.Watch(ctx) }

// notify wakes every Watch subscriber without blocking (a pending wake-up absorbs this one). It
// may run with s.mu held: the watchers have their own lock.
func (s *Server) notify() { s.watch.Notify() }

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
