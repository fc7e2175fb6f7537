// Package events is the appliance's in-memory event bus (the SDK's
// EventBus port, reference/kimi-agent-host.md §2.4): per-module lanes with a
// bounded queue (sdk.EventQueueSize), sdk.EventWorkers workers and a
// per-handler timeout (sdk.EventHandlerTimeout); a full lane drops its
// oldest event and counts it. Events may be lost, as in the reference:
// durable work belongs in the scheduler.
//
// CONTRACT SKELETON: the exported API below is fixed (app/host codes against
// it); the bodies are placeholders to be replaced by the real
// implementation.
package events

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// ErrClosed is returned by a ModuleBus (or Bus) used after Close.
var ErrClosed = errors.New("events: the event bus of this module is closed")

// Options configures a Bus. Zero values take the SDK's constants.
type Options struct {
	Logger         *slog.Logger
	QueueSize      int           // per subscription lane; default sdk.EventQueueSize
	Workers        int           // per lane; default sdk.EventWorkers
	HandlerTimeout time.Duration // default sdk.EventHandlerTimeout
	// OnHandlerFailure, when set, is told of every handler that returned an
	// error, panicked or timed out (for the module's health); it must not
	// block.
	OnHandlerFailure func(module, topic string, err error)
}

// Stats are one module's counters, merged into its health metrics.
type Stats struct {
	Published uint64 // events this module published
	Delivered uint64 // handler invocations that returned nil
	Failed    uint64 // handler errors, panics and timeouts
	Dropped   uint64 // events dropped: lane full (oldest dropped) or filtered
	Queued    int    // events waiting in this module's lanes now
}

// Bus routes events between modules. Create it with New; Close it last.
type Bus struct {
	opts Options
}

// New returns a running Bus.
func New(opts Options) *Bus { return &Bus{opts: opts} }

// Module returns module's view of the bus, implementing sdk.EventBus:
// Publish checks the topic against the module's namespace
// (hostkit.ValidatePublishTopic), Subscribe the pattern against perms
// (hostkit.ValidateSubscription). guildActive filters discord.* events by their
// guild (hostkit.EventGuildID) at enqueue and again just before the handler
// runs; nil lets every guild through. Handlers run with a context derived
// from ctx (the module's lifetime) and bounded by the handler timeout;
// ModuleBus.Close cancels it.
func (b *Bus) Module(ctx context.Context, module string, perms sdk.Permissions, guildActive func(guildID uint64) bool) *ModuleBus {
	return &ModuleBus{bus: b, module: module}
}

// PublishCore publishes an event from the host itself (source module
// sdk.CoreSourceModule), e.g. the normalized discord.* events.
func (b *Bus) PublishCore(topic string, payload any) error { return errors.ErrUnsupported }

// Close stops every lane, waiting up to timeout for running handlers.
func (b *Bus) Close(timeout time.Duration) {}

// ModuleBus is one module's view of the Bus.
type ModuleBus struct {
	bus    *Bus
	module string
}

var _ sdk.EventBus = (*ModuleBus)(nil)

// Publish implements sdk.EventBus.
func (m *ModuleBus) Publish(topic string, payload any) error { return errors.ErrUnsupported }

// Subscribe implements sdk.EventBus.
func (m *ModuleBus) Subscribe(pattern string, handler sdk.EventHandler) (sdk.Registration, error) {
	return nil, errors.ErrUnsupported
}

// Stats returns the module's counters.
func (m *ModuleBus) Stats() Stats { return Stats{} }

// Close revokes this view: its subscriptions end, queued events are
// dropped, running handlers' contexts are cancelled (waiting up to timeout
// for them), and later Publish/Subscribe calls fail with ErrClosed.
func (m *ModuleBus) Close(timeout time.Duration) {}
