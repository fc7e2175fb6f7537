package results

import (
	"context"
	"errors"
)

// errNotImplemented marks the skeleton's bodies (removed as they are filled).
var errNotImplemented = errors.New("results: not implemented")

// state is the dispatcher's and the registry's state (dispatch.go, port.go).
type state struct{}

func (s *Service) initState() {}

// SetProducer sets the producer before Start (the scheduled tasks are
// built after the service, which they enqueue into).
func (s *Service) SetProducer(p Producer) { s.opts.Producer = p }

// Start runs the dispatcher: it prunes, claims and delivers whatever is
// due, then waits for a signal or its one timer.
func (s *Service) Start() {}

// Close stops the dispatcher: no new claims; running handlers are
// cancelled and waited for up to the cancel grace; leases of handlers
// still running are left to expire. ctx bounds the wait.
func (s *Service) Close(ctx context.Context) error { return nil }
