// Package events is the appliance's in-memory event bus (the SDK's
// EventBus port, reference/kimi-agent-host.md §2.4): per-module lanes with a
// bounded queue (sdk.EventQueueSize), sdk.EventWorkers workers and a
// per-handler timeout (sdk.EventHandlerTimeout); a full lane drops its
// oldest event and counts it. Events may be lost, as in the reference:
// durable work belongs in the scheduler.
//
// A lane belongs to a subscribing module (created on its first Subscribe):
// every event matching one of the module's subscriptions is queued there
// once per matching subscription, and the lane's workers take them in
// publication order. With one worker a module sees its events in order;
// with several, handlers of consecutive events overlap.
//
// Core (discord.*) events are filtered by the subscriber's guild predicate
// when they are queued and again just before the handler runs (a predicate
// that panics skips the event). A payload without a guild (hostkit.EventGuildID
// returns 0) is delivered, as the SDK's fake does. Module-published events
// are never guild-filtered.
//
// Every handler runs under recover with a context derived from the module's
// lifetime and bounded by the handler timeout; an error, a panic or a
// timeout is counted and told to Options.OnHandlerFailure. A worker reuses
// its handler context until a timeout cancels it (no allocation per event),
// so a handler must not keep its ctx past the call. Go cannot stop a
// goroutine: a handler that ignores its context and never returns keeps its
// worker (its timeout is still reported when it falls due), and Close gives
// up waiting for it after its timeout.
package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// ErrClosed is returned by a ModuleBus (or Bus) used after Close.
var ErrClosed = errors.New("events: the event bus of this module is closed")

// ErrHandlerTimeout is the cause of a handler's context cancelled by the
// handler timeout, and the error told to OnHandlerFailure for it.
var ErrHandlerTimeout = errors.New("events: handler exceeded its timeout")

// errModuleClosed cancels the contexts of a closed module's handlers.
var errModuleClosed = errors.New("events: module closed")

// Options configures a Bus. Zero values take the SDK's constants.
type Options struct {
	Logger         *slog.Logger
	QueueSize      int           // per module lane; default sdk.EventQueueSize
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

	// Filtered counts the events of Dropped that the guild predicate
	// refused (at enqueue or before the handler).
	Filtered uint64
	// TimedOut counts the failures of Failed that were timeouts.
	TimedOut uint64
}

// Bus routes events between modules. Create it with New; Close it last.
type Bus struct {
	opts   Options
	log    *slog.Logger
	mu     sync.Mutex // guards closed, modules and writes of subs
	closed atomic.Bool
	subs   atomic.Pointer[[]*subscription] // copy-on-write, read by Publish
	mods   map[*ModuleBus]struct{}
}

// New returns a running Bus.
func New(opts Options) *Bus {
	if opts.QueueSize <= 0 {
		opts.QueueSize = sdk.EventQueueSize
	}
	if opts.Workers <= 0 {
		opts.Workers = sdk.EventWorkers
	}
	if opts.HandlerTimeout <= 0 {
		opts.HandlerTimeout = sdk.EventHandlerTimeout
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	b := &Bus{opts: opts, log: logger, mods: map[*ModuleBus]struct{}{}}
	b.subs.Store(&[]*subscription{})
	return b
}

// Module returns module's view of the bus, implementing sdk.EventBus:
// Publish checks the topic against the module's namespace
// (hostkit.ValidatePublishTopic), Subscribe the pattern against perms
// (hostkit.ValidateSubscription). guildActive filters discord.* events by their
// guild (hostkit.EventGuildID) at enqueue and again just before the handler
// runs; nil lets every guild through. Handlers run with a context derived
// from ctx (the module's lifetime) and bounded by the handler timeout;
// ModuleBus.Close cancels it.
func (b *Bus) Module(ctx context.Context, module string, perms sdk.Permissions, guildActive func(guildID uint64) bool) *ModuleBus {
	return b.ModuleReporting(ctx, module, perms, guildActive, nil)
}

// ModuleReporting is Module with the module's failed handlers told to
// report instead of Options.OnHandlerFailure (nil: that one): a bus built
// before its consumer (serve builds it before the bot and the module
// host, which both use it) gets the consumer's report per module.
func (b *Bus) ModuleReporting(ctx context.Context, module string, perms sdk.Permissions, guildActive func(guildID uint64) bool,
	report func(module, topic string, err error)) *ModuleBus {
	lctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	m := &ModuleBus{
		bus: b, module: module, perms: perms, guildActive: guildActive, onFailure: report,
		log: b.log.With("module", module),
		ctx: lctx, cancel: cancel,
		done: make(chan struct{}),
	}
	// The module's lifetime ends its handlers too.
	m.stopParent = context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		m.closed.Store(true)
		close(m.done)
		m.stopParent()
		cancel(ErrClosed)
		return m
	}
	b.mods[m] = struct{}{}
	return m
}

// PublishCore publishes an event from the host itself (source module
// sdk.CoreSourceModule), e.g. the normalized discord.* events. The topic
// must be a valid "discord.<name>".
func (b *Bus) PublishCore(topic string, payload any) error {
	ns, _, err := hostkit.SplitTopic(topic, false)
	if err != nil {
		return err
	}
	if ns != sdk.CoreTopicPrefix {
		return fmt.Errorf("events: publish core: topic %q is outside the %s namespace", topic, sdk.CoreTopicPrefix)
	}
	if b.closed.Load() {
		return ErrClosed
	}
	b.route(sdk.Event{Topic: topic, Payload: payload, SourceModule: sdk.CoreSourceModule, PublishedAt: time.Now()}, true)
	return nil
}

// route queues e on the lane of every live subscription that matches it.
func (b *Bus) route(e sdk.Event, core bool) {
	guild := uint64(0)
	if core {
		guild = hostkit.EventGuildID(e.Payload)
	}
	for _, s := range *b.subs.Load() {
		if !s.match(e.Topic) || s.closed.Load() {
			continue
		}
		m := s.mod
		if core && guild != 0 && !m.allows(guild) {
			m.filtered.Add(1)
			continue
		}
		m.push(item{sub: s, ev: e, guild: guild})
	}
}

// Close stops every lane, waiting up to timeout for running handlers.
// Later publishes fail with ErrClosed.
func (b *Bus) Close(timeout time.Duration) {
	b.mu.Lock()
	b.closed.Store(true)
	mods := make([]*ModuleBus, 0, len(b.mods))
	for m := range b.mods {
		mods = append(mods, m)
	}
	b.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for _, m := range mods {
		m.Close(time.Until(deadline))
	}
}

// removeSubs drops every subscription for which drop is true.
func (b *Bus) removeSubs(drop func(*subscription) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := *b.subs.Load()
	kept := make([]*subscription, 0, len(old))
	for _, s := range old {
		if !drop(s) {
			kept = append(kept, s)
		}
	}
	b.subs.Store(&kept)
}

// subscription is one Subscribe: its pattern, precompiled for the common
// shapes, and its handler.
type subscription struct {
	mod     *ModuleBus
	pattern string
	exact   string // pattern without glob characters: equality
	prefix  string // "<ns>.*" with a plain namespace: "<ns>." prefix
	handler sdk.EventHandler
	closed  atomic.Bool
}

func newSubscription(m *ModuleBus, pattern string, h sdk.EventHandler) *subscription {
	s := &subscription{mod: m, pattern: pattern, handler: h}
	switch {
	case !strings.ContainsAny(pattern, "*?["):
		s.exact = pattern
	case strings.HasSuffix(pattern, ".*") && !strings.ContainsAny(pattern[:len(pattern)-2], "*?["):
		s.prefix = pattern[:len(pattern)-1]
	}
	return s
}

func (s *subscription) match(topic string) bool {
	switch {
	case s.exact != "":
		return topic == s.exact
	case s.prefix != "":
		return strings.HasPrefix(topic, s.prefix)
	}
	return hostkit.MatchTopic(s.pattern, topic)
}

// Close implements sdk.Registration: the subscription ends, its queued
// events are skipped.
func (s *subscription) Close() {
	if s.closed.Swap(true) {
		return
	}
	s.mod.bus.removeSubs(func(o *subscription) bool { return o == s })
}

var _ sdk.Registration = (*subscription)(nil)

// item is one queued delivery.
type item struct {
	sub   *subscription
	ev    sdk.Event
	guild uint64
}

// ModuleBus is one module's view of the Bus.
type ModuleBus struct {
	bus         *Bus
	module      string
	perms       sdk.Permissions
	guildActive func(uint64) bool
	onFailure   func(module, topic string, err error) // nil: the bus's OnHandlerFailure
	log         *slog.Logger

	ctx        context.Context // handlers' parent; cancelled at Close
	cancel     context.CancelCauseFunc
	stopParent func() bool

	laneOnce sync.Once
	queue    chan item
	done     chan struct{} // closed at Close: workers stop
	workers  sync.WaitGroup
	closed   atomic.Bool

	published, delivered, failed, dropped, filtered, timedOut atomic.Uint64
}

var _ sdk.EventBus = (*ModuleBus)(nil)

// Publish implements sdk.EventBus: it never blocks.
func (m *ModuleBus) Publish(topic string, payload any) error {
	if m.closed.Load() || m.bus.closed.Load() {
		return ErrClosed
	}
	if err := hostkit.ValidatePublishTopic(m.module, topic); err != nil {
		return err
	}
	m.published.Add(1)
	m.bus.route(sdk.Event{Topic: topic, Payload: payload, SourceModule: m.module, PublishedAt: time.Now()}, false)
	return nil
}

// Subscribe implements sdk.EventBus. The module's lane (queue and workers)
// starts on its first subscription.
func (m *ModuleBus) Subscribe(pattern string, handler sdk.EventHandler) (sdk.Registration, error) {
	if handler == nil {
		return nil, &sdk.ModuleContractError{Message: fmt.Sprintf("module '%s' subscribed to '%s' with a nil handler", m.module, pattern)}
	}
	if err := hostkit.ValidateSubscription(m.module, m.perms, pattern); err != nil {
		return nil, err
	}
	s := newSubscription(m, pattern, handler)
	b := m.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.closed.Load() || b.closed.Load() {
		return nil, ErrClosed
	}
	m.laneOnce.Do(m.startLane)
	old := *b.subs.Load()
	subs := make([]*subscription, len(old), len(old)+1)
	copy(subs, old)
	subs = append(subs, s)
	b.subs.Store(&subs)
	return s, nil
}

// startLane creates the module's queue and starts its workers.
func (m *ModuleBus) startLane() {
	m.queue = make(chan item, m.bus.opts.QueueSize)
	for range m.bus.opts.Workers {
		m.workers.Add(1)
		go m.work()
	}
}

// push queues it, dropping the oldest queued event while the lane is full.
func (m *ModuleBus) push(it item) {
	for {
		select {
		case m.queue <- it:
			return
		default:
		}
		select {
		case old := <-m.queue:
			if n := m.dropped.Add(1); n&(n-1) == 0 {
				// Logged at the 1st, 2nd, 4th, 8th… drop: a flood stays quiet.
				m.log.Warn("event lane full; dropped the oldest event", "topic", old.ev.Topic, "dropped_total", n)
			}
		default:
		}
	}
}

// allows reports whether the guild predicate lets guild's core events
// through; a panicking predicate refuses.
func (m *ModuleBus) allows(guild uint64) (ok bool) {
	if m.guildActive == nil {
		return true
	}
	defer func() {
		if p := recover(); p != nil {
			m.log.Error("guild predicate panicked; event skipped", "guild_id", guild, "panic", fmt.Sprint(p))
			ok = false
		}
	}()
	return m.guildActive(guild)
}

// work is one lane worker: it takes events until Close.
func (m *ModuleBus) work() {
	defer m.workers.Done()
	w := &worker{m: m}
	w.renew()
	defer func() { w.cancel(nil) }()
	w.fired = make(chan struct{}, 1)
	w.timer = time.AfterFunc(time.Hour, w.expire)
	w.timer.Stop()
	defer w.timer.Stop()
	for {
		select {
		case <-m.done:
			return
		case it := <-m.queue:
			select {
			case <-m.done:
				return
			default:
			}
			w.run(it)
		}
	}
}

// Invocation states, for the race between a handler's return and its timer.
const (
	stateIdle int32 = iota
	stateRunning
	stateExpired
)

// worker is a lane worker's reusable state: one timer for every handler it
// runs, and one handler context, replaced only once a timeout cancelled it
// (a context per call would cost the hot path three allocations).
//
// ctx, cancel and topic are written by the worker before it sets
// stateRunning and read by expire only after its CompareAndSwap from
// stateRunning succeeded; the worker waits for expire (fired) before it
// writes them again.
type worker struct {
	m      *ModuleBus
	timer  *time.Timer
	state  atomic.Int32
	ctx    context.Context
	cancel context.CancelCauseFunc
	topic  string
	fired  chan struct{} // expire has finished (buffered: never blocks it)
}

// renew gives the worker a fresh handler context under the module's.
func (w *worker) renew() {
	w.ctx, w.cancel = context.WithCancelCause(w.m.ctx)
}

// expire fires when a handler outlives the timeout: it is counted and
// reported now, and its context cancelled, even if it never returns.
func (w *worker) expire() {
	defer func() { w.fired <- struct{}{} }()
	if !w.state.CompareAndSwap(stateRunning, stateExpired) {
		return
	}
	m := w.m
	m.failed.Add(1)
	m.timedOut.Add(1)
	topic := w.topic
	err := fmt.Errorf("%w (%s) on %s", ErrHandlerTimeout, m.bus.opts.HandlerTimeout, topic)
	m.log.Warn("event handler timed out", "topic", topic, "timeout", m.bus.opts.HandlerTimeout)
	w.cancel(ErrHandlerTimeout)
	m.report(topic, err)
}

// run invokes one queued event's handler.
func (w *worker) run(it item) {
	m := w.m
	if it.sub.closed.Load() {
		return
	}
	if it.guild != 0 && !m.allows(it.guild) {
		m.filtered.Add(1)
		return
	}
	if w.ctx.Err() != nil {
		w.cancel(nil)
		w.renew()
	}
	w.topic = it.ev.Topic
	w.state.Store(stateRunning)
	w.timer.Reset(m.bus.opts.HandlerTimeout)
	err := invoke(w.ctx, it.sub.handler, it.ev)
	if !w.timer.Stop() {
		// The timer fired: wait for expire, so it can never act on the
		// next invocation.
		<-w.fired
	}
	if !w.state.CompareAndSwap(stateRunning, stateIdle) {
		// The timer counted and reported it.
		w.state.Store(stateIdle)
		return
	}
	if err == nil {
		m.delivered.Add(1)
		return
	}
	m.failed.Add(1)
	m.log.Warn("event handler failed", "topic", it.ev.Topic, "err", err)
	m.report(it.ev.Topic, err)
}

// invoke runs h under recover.
func invoke(ctx context.Context, h sdk.EventHandler, e sdk.Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("events: handler panicked: %v", p)
		}
	}()
	return h(ctx, e)
}

// report tells Options.OnHandlerFailure, itself contained.
func (m *ModuleBus) report(topic string, err error) {
	f := m.onFailure
	if f == nil {
		f = m.bus.opts.OnHandlerFailure
	}
	if f == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			m.log.Error("OnHandlerFailure panicked", "panic", fmt.Sprint(p))
		}
	}()
	f(m.module, topic, err)
}

// Stats returns the module's counters.
func (m *ModuleBus) Stats() Stats {
	s := Stats{
		Published: m.published.Load(),
		Delivered: m.delivered.Load(),
		Failed:    m.failed.Load(),
		Filtered:  m.filtered.Load(),
		TimedOut:  m.timedOut.Load(),
	}
	s.Dropped = m.dropped.Load() + s.Filtered
	if q := m.queue; q != nil && !m.closed.Load() {
		s.Queued = len(q)
	}
	return s
}

// Close revokes this view: its subscriptions end, queued events are
// dropped, running handlers' contexts are cancelled (waiting up to timeout
// for them), and later Publish/Subscribe calls fail with ErrClosed.
func (m *ModuleBus) Close(timeout time.Duration) {
	b := m.bus
	b.mu.Lock()
	if m.closed.Swap(true) {
		b.mu.Unlock()
		return
	}
	delete(b.mods, m)
	b.mu.Unlock()
	b.removeSubs(func(s *subscription) bool {
		if s.mod == m {
			s.closed.Store(true)
			return true
		}
		return false
	})
	close(m.done)
	m.stopParent()
	m.cancel(errModuleClosed)
	finished := make(chan struct{})
	go func() { m.workers.Wait(); close(finished) }()
	t := time.NewTimer(max(timeout, 0))
	defer t.Stop()
	select {
	case <-finished:
	case <-t.C:
		m.log.Warn("event handlers still running after close", "waited", timeout)
	}
	if q := m.queue; q != nil {
	drain:
		for {
			select {
			case <-q:
			default:
				break drain
			}
		}
	}
}
