package sdktest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// FakeEvents is an sdk.EventBus that records publications and delivers to
// subscribers only when the test calls Deliver. Publish enforces the
// module's namespace and Subscribe the module's declared topics, with the
// SDK's validators and messages.
type FakeEvents struct {
	module string
	perms  sdk.Permissions

	mu            sync.Mutex
	published     []sdk.Event
	subscriptions []*fakeSubscription
	tick          int64
	guildFilter   func(uint64) bool
}

type fakeSubscription struct {
	pattern string
	handler sdk.EventHandler
}

var _ sdk.EventBus = (*FakeEvents)(nil)

// NewFakeEvents returns a bus for module with its permissions (the
// declared EventTopics decide which foreign patterns it may subscribe to).
func NewFakeEvents(module string, perms sdk.Permissions) *FakeEvents {
	return &FakeEvents{module: module, perms: perms}
}

// clock returns a deterministic, strictly increasing publication time:
// one second after the epoch per event, like the reference kit's counter.
func (e *FakeEvents) clock() time.Time {
	e.tick++
	return time.Unix(e.tick, 0)
}

// SetGuildFilter sets the guild predicate core events are filtered by, as
// the host filters discord.* events by the subscriber's module predicate:
// a core event (source "core") whose payload names a guild
// (hostkit.EventGuildID) is checked when Deliver queues it and again right before
// each handler runs, so a guild that turns inactive mid-delivery (the
// predicate reads live state) reaches no later handler. A predicate that
// panics counts as inactive (the host skips the event). Events without a
// guild and events published by modules are never filtered. NewRuntime
// sets it to the module predicate (core-active and, with a schema, valid
// guild settings); nil delivers everything.
func (e *FakeEvents) SetGuildFilter(active func(guildID uint64) bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.guildFilter = active
}

// admits applies the current guild filter to a core event's guild.
func (e *FakeEvents) admits(source string, guild uint64) (ok bool) {
	if source != sdk.CoreSourceModule || guild == 0 {
		return true
	}
	e.mu.Lock()
	filter := e.guildFilter
	e.mu.Unlock()
	if filter == nil {
		return true
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return filter(guild)
}

// Publish records an event under the module's own namespace. It delivers
// nothing (not even to the module's own subscriptions): read it back with
// Published, or push it through subscribers with DeliverFrom(ctx, module,
// …), which never applies the guild filter to a module's events.
func (e *FakeEvents) Publish(topic string, payload any) error {
	if err := hostkit.ValidatePublishTopic(e.module, topic); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.published = append(e.published, sdk.Event{Topic: topic, Payload: payload, SourceModule: e.module, PublishedAt: e.clock()})
	return nil
}

// Subscribe registers handler for a topic or "<namespace>.*" pattern the
// module may subscribe to; closing the registration removes it.
func (e *FakeEvents) Subscribe(pattern string, handler sdk.EventHandler) (sdk.Registration, error) {
	if err := hostkit.ValidateSubscription(e.module, e.perms, pattern); err != nil {
		return nil, err
	}
	if handler == nil {
		return nil, &sdk.ModuleContractError{Message: "event handler for " + hostkit.Repr(pattern) + " is nil"}
	}
	sub := &fakeSubscription{pattern: pattern, handler: handler}
	e.mu.Lock()
	e.subscriptions = append(e.subscriptions, sub)
	e.mu.Unlock()
	return newRegistration(func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.subscriptions = slices.DeleteFunc(e.subscriptions, func(s *fakeSubscription) bool { return s == sub })
	}), nil
}

// Published returns every event the module published, oldest first.
func (e *FakeEvents) Published() []sdk.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.published)
}

// Subscriptions returns the live subscription patterns in subscription
// order.
func (e *FakeEvents) Subscriptions() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, len(e.subscriptions))
	for i, s := range e.subscriptions {
		out[i] = s.pattern
	}
	return out
}

// Deliver pushes one event from core (source "core") through every
// matching subscriber, in subscription order, and returns how many
// handlers ran. The guild filter (SetGuildFilter) applies at enqueue and
// again before each handler: an event of an inactive guild returns 0 and
// no error, exactly what a module sees in production (its handler is never
// called), and a guild that turns inactive during delivery stops the
// remaining handlers. Handler errors do not stop later handlers (the host
// logs and counts them); they are returned joined.
func (e *FakeEvents) Deliver(ctx context.Context, topic string, payload any) (int, error) {
	return e.DeliverFrom(ctx, sdk.CoreSourceModule, topic, payload)
}

// DeliverFrom is Deliver with an explicit source module; only source
// "core" is guild-filtered.
func (e *FakeEvents) DeliverFrom(ctx context.Context, source, topic string, payload any) (int, error) {
	guild := hostkit.EventGuildID(payload)
	if !e.admits(source, guild) {
		return 0, nil
	}
	e.mu.Lock()
	event := sdk.Event{Topic: topic, Payload: payload, SourceModule: source, PublishedAt: e.clock()}
	subs := slices.Clone(e.subscriptions)
	e.mu.Unlock()
	count := 0
	var errs []error
	for _, s := range subs {
		if !hostkit.MatchTopic(s.pattern, topic) || !e.admits(source, guild) {
			continue
		}
		count++
		if err := recovering(func() error { return s.handler(ctx, event) }); err != nil {
			errs = append(errs, err)
		}
	}
	return count, errors.Join(errs...)
}
