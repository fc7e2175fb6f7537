package sdk

import (
	"context"
	"time"
)

// CoreSourceModule is Event.SourceModule for core (discord.*) events.
const CoreSourceModule = "core"

// Event bus limits (per subscribing module).
const (
	EventQueueSize      = 256
	EventWorkers        = 4
	EventHandlerTimeout = 30 * time.Second
)

// EventBus is the in-process event port. Events are best effort: a full
// queue drops the oldest, a restart loses pending events. Durable work goes
// through the Scheduler.
type EventBus interface {
	// Publish queues an event under the module's own namespace
	// ("<prefix>.<name>", see ValidatePublishTopic). It never blocks.
	Publish(topic string, payload any) error
	// Subscribe registers a handler for a topic or "<namespace>.*" pattern
	// (see ValidateSubscription and MatchTopic). Core events are filtered by
	// the module's guild predicate.
	Subscribe(pattern string, handler EventHandler) (Registration, error)
}

// EventHandler handles one event within EventHandlerTimeout; errors are
// logged and counted, never retried.
type EventHandler func(ctx context.Context, e Event) error

// Event is one published event. Payload is the publisher's value (for core
// events, one of the discord.* payload types in this package).
type Event struct {
	Topic        string
	Payload      any
	SourceModule string
	PublishedAt  time.Time
}
