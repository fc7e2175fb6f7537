package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// wait is the generous bound of every wait in these tests: a shared, noisy
// machine may be slow, but a bus that hangs must not hang the test run.
const wait = 20 * time.Second

// failure is one OnHandlerFailure call.
type failure struct {
	module, topic string
	err           error
}

// failures collects OnHandlerFailure calls.
type failures struct {
	ch chan failure
}

func newFailures() *failures { return &failures{ch: make(chan failure, 64)} }

func (f *failures) record(module, topic string, err error) {
	f.ch <- failure{module, topic, err}
}

func (f *failures) next(t *testing.T) failure {
	t.Helper()
	select {
	case got := <-f.ch:
		return got
	case <-time.After(wait):
		t.Fatal("no handler failure reported")
		return failure{}
	}
}

func (f *failures) none(t *testing.T) {
	t.Helper()
	select {
	case got := <-f.ch:
		t.Fatalf("unexpected handler failure %+v", got)
	default:
	}
}

// recv waits for one value from ch.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatal("timed out waiting")
		var zero T
		return zero
	}
}

// settled waits until m's counters satisfy ok (a handler's result is
// counted just after it returns) and returns them.
func settled(t *testing.T, m *ModuleBus, ok func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		s := m.Stats()
		if ok(s) || time.Now().After(deadline) {
			return s
		}
		time.Sleep(time.Millisecond)
	}
}

// newBus returns a bus closed at the end of the test.
func newBus(t *testing.T, opts Options) *Bus {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	b := New(opts)
	t.Cleanup(func() { b.Close(wait) })
	return b
}

// subscriberPerms lets a module subscribe to everything "pub" publishes.
var subscriberPerms = sdk.Permissions{EventTopics: []string{"pub.*"}}

func TestPublishAndSubscribeAreValidatedBySDK(t *testing.T) {
	b := newBus(t, Options{})
	ctx := context.Background()
	pub := b.Module(ctx, "pub", sdk.Permissions{}, nil)
	sub := b.Module(ctx, "sub", sdk.Permissions{EventTopics: []string{"pub.tick"}}, nil)
	for _, tt := range []struct {
		name string
		err  error
		want string // "" for success
	}{
		{"own namespace", pub.Publish("pub.tick", 1), ""},
		{"other namespace", pub.Publish("sub.tick", 1), "module 'pub' may only publish under 'pub'.*"},
		{"core namespace", pub.Publish("discord.message", 1), "event namespace 'discord' is reserved by core"},
		{"invalid topic", pub.Publish("pub", 1), "invalid event topic 'pub'"},
		{"declared topic", subscribeErr(sub, "pub.tick"), ""},
		{"own namespace glob", subscribeErr(sub, "sub.*"), ""},
		{"undeclared glob", subscribeErr(sub, "pub.*"), "module 'sub' did not declare event topic 'pub.*'"},
		{"undeclared topic", subscribeErr(sub, "other.tick"), "module 'sub' did not declare event topic 'other.tick'"},
		{"nil handler", func() error { _, err := sub.Subscribe("sub.x", nil); return err }(), "nil handler"},
		{"core publish outside discord", b.PublishCore("pub.tick", 1), "outside the discord namespace"},
		{"core publish", b.PublishCore("discord.message", 1), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			switch {
			case tt.want == "" && tt.err != nil:
				t.Fatalf("err = %v, want nil", tt.err)
			case tt.want != "" && (tt.err == nil || !strings.Contains(tt.err.Error(), tt.want)):
				t.Fatalf("err = %v, want %q", tt.err, tt.want)
			}
		})
	}
	if got := pub.Stats().Published; got != 1 {
		t.Errorf("Published = %d, want 1 (refused publishes are not counted)", got)
	}
}

func subscribeErr(m *ModuleBus, pattern string) error {
	_, err := m.Subscribe(pattern, func(context.Context, sdk.Event) error { return nil })
	return err
}

// TestLaneKeepsPublicationOrder: with one worker a lane hands its module the
// events in the order they were published, and the event carries topic,
// payload, source and time.
func TestLaneKeepsPublicationOrder(t *testing.T) {
	b := newBus(t, Options{Workers: 1})
	ctx := context.Background()
	pub := b.Module(ctx, "pub", sdk.Permissions{}, nil)
	sub := b.Module(ctx, "sub", subscriberPerms, nil)
	const n = 200
	got := make(chan sdk.Event, n)
	if _, err := sub.Subscribe("pub.*", func(_ context.Context, e sdk.Event) error { got <- e; return nil }); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	for i := range n {
		// Fewer than the queue holds in flight: nothing is dropped.
		for sub.Stats().Queued > sdk.EventQueueSize/2 {
			runtime.Gosched()
		}
		if err := pub.Publish("pub.tick", i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		e := recv(t, got)
		if e.Payload != i || e.Topic != "pub.tick" || e.SourceModule != "pub" || e.PublishedAt.Before(before) {
			t.Fatalf("event %d = %+v", i, e)
		}
	}
	if s := settled(t, sub, func(s Stats) bool { return s.Delivered == n }); s.Delivered != n || s.Dropped != 0 || s.Failed != 0 {
		t.Errorf("Stats = %+v", s)
	}
}

// TestFullLaneDropsTheOldest: a lane that is full drops its oldest queued
// event for each new one and counts it; the newest events are the ones
// handled.
func TestFullLaneDropsTheOldest(t *testing.T) {
	b := newBus(t, Options{Workers: 1, QueueSize: 4})
	ctx := context.Background()
	pub := b.Module(ctx, "pub", sdk.Permissions{}, nil)
	sub := b.Module(ctx, "sub", subscriberPerms, nil)
	started, gate := make(chan struct{}), make(chan struct{})
	got := make(chan int, 16)
	if _, err := sub.Subscribe("pub.tick", func(_ context.Context, e sdk.Event) error {
		if e.Payload == 0 {
			close(started)
			<-gate
		}
		got <- e.Payload.(int)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_ = pub.Publish("pub.tick", 0)
	recv(t, started) // the worker holds event 0; the queue is empty
	for i := 1; i <= 10; i++ {
		_ = pub.Publish("pub.tick", i)
	}
	if s := sub.Stats(); s.Dropped != 6 || s.Queued != 4 {
		t.Fatalf("Stats with a blocked worker = %+v, want 6 dropped and 4 queued", s)
	}
	close(gate)
	var order []int
	for range 5 {
		order = append(order, recv(t, got))
	}
	if fmt.Sprint(order) != "[0 7 8 9 10]" {
		t.Errorf("handled %v, want [0 7 8 9 10]", order)
	}
	if s := settled(t, sub, func(s Stats) bool { return s.Delivered == 5 }); s.Dropped != 6 || s.Filtered != 0 || s.Delivered != 5 {
		t.Errorf("Stats = %+v", s)
	}
}

// TestHandlerFailuresAreContained: an error, a panic and a timeout (of a
// handler honouring its ctx and of one ignoring it) are each counted and
// reported, and the lane goes on delivering.
func TestHandlerFailuresAreContained(t *testing.T) {
	fails := newFailures()
	b := newBus(t, Options{Workers: 1, HandlerTimeout: 50 * time.Millisecond, OnHandlerFailure: fails.record})
	ctx := context.Background()
	pub := b.Module(ctx, "pub", sdk.Permissions{}, nil)
	sub := b.Module(ctx, "sub", subscriberPerms, nil)
	hung := make(chan struct{})
	defer close(hung)
	causes := make(chan error, 4)
	ok := make(chan string, 4)
	if _, err := sub.Subscribe("pub.*", func(ctx context.Context, e sdk.Event) error {
		switch e.Topic {
		case "pub.error":
			return errors.New("boom")
		case "pub.panic":
			panic("kaboom")
		case "pub.slow":
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		case "pub.hung":
			<-hung // ignores its ctx
			return nil
		}
		ok <- e.Topic
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		topic, want string
		timeout     bool
	}{
		{"pub.error", "boom", false},
		{"pub.panic", "handler panicked: kaboom", false},
		{"pub.slow", "handler exceeded its timeout", true},
	} {
		t.Run(tt.topic, func(t *testing.T) {
			_ = pub.Publish(tt.topic, nil)
			f := fails.next(t)
			if f.module != "sub" || f.topic != tt.topic || !strings.Contains(f.err.Error(), tt.want) {
				t.Fatalf("failure = %+v, want %q", f, tt.want)
			}
			if tt.timeout {
				if !errors.Is(f.err, ErrHandlerTimeout) {
					t.Errorf("timeout error %v is not ErrHandlerTimeout", f.err)
				}
				if cause := recv(t, causes); !errors.Is(cause, ErrHandlerTimeout) {
					t.Errorf("handler's ctx cause = %v", cause)
				}
			}
			_ = pub.Publish("pub.ok", nil)
			if got := recv(t, ok); got != "pub.ok" {
				t.Fatalf("after the failure the lane delivered %q", got)
			}
			fails.none(t)
		})
	}
	t.Run("hung handler", func(t *testing.T) {
		_ = pub.Publish("pub.hung", nil)
		// Reported when its timeout falls due, although it never returns.
		if f := fails.next(t); !errors.Is(f.err, ErrHandlerTimeout) || f.topic != "pub.hung" {
			t.Fatalf("failure = %+v", f)
		}
	})
	if s := settled(t, sub, func(s Stats) bool { return s.Delivered == 3 && s.Failed == 4 }); s.Failed != 4 || s.TimedOut != 2 || s.Delivered != 3 {
		t.Errorf("Stats = %+v, want 4 failed (2 timed out), 3 delivered", s)
	}
}

// TestCoreEventsAreGuildFiltered: a core event of a guild where the module
// is inactive is dropped at enqueue; one whose guild turns inactive while it
// waits is dropped before its handler; a panicking predicate skips; events
// without a guild and module events pass.
func TestCoreEventsAreGuildFiltered(t *testing.T) {
	b := newBus(t, Options{Workers: 1})
	ctx := context.Background()
	var active sync.Map // guild id -> bool
	active.Store(uint64(1), true)
	predicate := func(g uint64) bool {
		if g == 666 {
			panic("predicate bug")
		}
		v, _ := active.Load(g)
		return v == true
	}
	pub := b.Module(ctx, "pub", sdk.Permissions{}, nil)
	sub := b.Module(ctx, "sub", sdk.Permissions{EventTopics: []string{"discord.*", "pub.*"}}, predicate)
	got := make(chan any, 16)
	started, gate := make(chan struct{}), make(chan struct{})
	if _, err := sub.Subscribe("discord.*", func(_ context.Context, e sdk.Event) error {
		if e.Payload == "block" {
			close(started)
			<-gate
		}
		got <- e.Payload
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Subscribe("pub.*", func(_ context.Context, e sdk.Event) error { got <- e.Payload; return nil }); err != nil {
		t.Fatal(err)
	}
	member := func(g uint64) sdk.MemberRemoveEvent { return sdk.MemberRemoveEvent{GuildID: g, UserID: 9} }

	for _, tt := range []struct {
		name     string
		publish  func() error
		want     any // nil: dropped
		filtered uint64
	}{
		{"active guild", func() error { return b.PublishCore(sdk.TopicMemberRemove, member(1)) }, member(1), 0},
		{"inactive guild at enqueue", func() error { return b.PublishCore(sdk.TopicMemberRemove, member(2)) }, nil, 1},
		{"panicking predicate", func() error { return b.PublishCore(sdk.TopicMemberRemove, member(666)) }, nil, 1},
		{"no guild", func() error { return b.PublishCore("discord.custom", "x") }, "x", 0},
		{"module event of an inactive guild's id", func() error { return pub.Publish("pub.tick", member(2)) }, member(2), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := sub.Stats().Filtered
			if err := tt.publish(); err != nil {
				t.Fatal(err)
			}
			// A marker behind it: once it arrives, the event was handled or not.
			_ = b.PublishCore("discord.marker", "marker")
			first := recv(t, got)
			if tt.want != nil {
				if !reflect.DeepEqual(first, tt.want) {
					t.Fatalf("delivered %v, want %v", first, tt.want)
				}
				first = recv(t, got)
			}
			if first != "marker" {
				t.Fatalf("delivered %v, want only the marker", first)
			}
			if d := sub.Stats().Filtered - before; d != tt.filtered {
				t.Errorf("filtered %d, want %d", d, tt.filtered)
			}
		})
	}

	t.Run("guild turns inactive while queued", func(t *testing.T) {
		before := sub.Stats()
		_ = b.PublishCore("discord.custom", "block")
		recv(t, started)
		_ = b.PublishCore(sdk.TopicMemberRemove, member(1)) // queued: guild 1 active now
		active.Store(uint64(1), false)
		_ = b.PublishCore("discord.marker", "marker")
		close(gate)
		if v := recv(t, got); v != "block" {
			t.Fatalf("delivered %v", v)
		}
		if v := recv(t, got); v != "marker" {
			t.Fatalf("delivered %v, want the marker (the queued event of guild 1 skipped)", v)
		}
		after := sub.Stats()
		if after.Filtered-before.Filtered != 1 || after.Dropped-before.Dropped != 1 {
			t.Errorf("Stats before %+v after %+v: want one more filtered (and dropped)", before, after)
		}
	})
}

// TestModuleCloseRevokes: closing a module's view cancels its running
// handler's ctx, drops its queued events, ends its subscriptions and refuses
// later calls with ErrClosed; other modules keep their events.
func TestModuleCloseRevokes(t *testing.T) {
	b := newBus(t, Options{Workers: 1})
	ctx := context.Background()
	pub := b.Module(ctx, "pub", sdk.Permissions{}, nil)
	sub := b.Module(ctx, "sub", subscriberPerms, nil)
	other := b.Module(ctx, "other", subscriberPerms, nil)
	started := make(chan struct{})
	cause := make(chan error, 1)
	var handled atomic.Int32
	if _, err := sub.Subscribe("pub.tick", func(ctx context.Context, _ sdk.Event) error {
		if handled.Add(1) == 1 {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	otherGot := make(chan any, 8)
	if _, err := other.Subscribe("pub.tick", func(_ context.Context, e sdk.Event) error { otherGot <- e.Payload; return nil }); err != nil {
		t.Fatal(err)
	}
	_ = pub.Publish("pub.tick", 1)
	recv(t, started)
	_ = pub.Publish("pub.tick", 2) // queued behind the running handler
	sub.Close(wait)
	if c := recv(t, cause); !errors.Is(c, errModuleClosed) {
		t.Errorf("running handler's cause = %v", c)
	}
	_ = pub.Publish("pub.tick", 3)
	for _, want := range []int{1, 2, 3} {
		if v := recv(t, otherGot); v != want {
			t.Fatalf("other module got %v, want %d", v, want)
		}
	}
	if n := handled.Load(); n != 1 {
		t.Errorf("closed module's handler ran %d times, want 1", n)
	}
	if err := sub.Publish("sub.x", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Publish after Close = %v", err)
	}
	if err := subscribeErr(sub, "sub.x"); !errors.Is(err, ErrClosed) {
		t.Errorf("Subscribe after Close = %v", err)
	}
	if q := sub.Stats().Queued; q != 0 {
		t.Errorf("Queued after Close = %d", q)
	}
	sub.Close(wait) // twice is harmless
}

// TestModuleLifetimeCancelsHandlers: the ctx given to Module bounds every
// handler it runs.
func TestModuleLifetimeCancelsHandlers(t *testing.T) {
	b := newBus(t, Options{})
	lifetime, end := context.WithCancelCause(context.Background())
	pub := b.Module(context.Background(), "pub", sdk.Permissions{}, nil)
	sub := b.Module(lifetime, "sub", subscriberPerms, nil)
	cause := make(chan error, 1)
	started := make(chan struct{})
	if _, err := sub.Subscribe("pub.tick", func(ctx context.Context, _ sdk.Event) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_ = pub.Publish("pub.tick", nil)
	recv(t, started)
	stop := errors.New("module stopping")
	end(stop)
	if c := recv(t, cause); !errors.Is(c, stop) {
		t.Errorf("cause = %v, want the module lifetime's", c)
	}
}

// TestRegistrationCloseEndsDelivery: a closed registration gets no more
// events, queued ones included; the module's other subscriptions do.
func TestRegistrationCloseEndsDelivery(t *testing.T) {
	b := newBus(t, Options{Workers: 1})
	ctx := context.Background()
	pub := b.Module(ctx, "pub", sdk.Permissions{}, nil)
	sub := b.Module(ctx, "sub", subscriberPerms, nil)
	got := make(chan string, 8)
	reg, err := sub.Subscribe("pub.a", func(_ context.Context, e sdk.Event) error { got <- e.Topic; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Subscribe("pub.b", func(_ context.Context, e sdk.Event) error { got <- e.Topic; return nil }); err != nil {
		t.Fatal(err)
	}
	_ = pub.Publish("pub.a", nil)
	if v := recv(t, got); v != "pub.a" {
		t.Fatal(v)
	}
	reg.Close()
	reg.Close()
	_ = pub.Publish("pub.a", nil)
	_ = pub.Publish("pub.b", nil)
	if v := recv(t, got); v != "pub.b" {
		t.Fatalf("after Close delivered %q", v)
	}
}

// TestCloseLeaksNoGoroutine: every lane worker and timer goroutine ends at
// Close, hung-but-cancellable handlers included.
func TestCloseLeaksNoGoroutine(t *testing.T) {
	settle := func() int {
		runtime.GC()
		return runtime.NumGoroutine()
	}
	before := settle()
	b := New(Options{HandlerTimeout: time.Hour})
	ctx := context.Background()
	pub := b.Module(ctx, "pub", sdk.Permissions{}, nil)
	started := make(chan struct{}, 64)
	for i := range 8 {
		m := b.Module(ctx, fmt.Sprintf("m%d", i), subscriberPerms, nil)
		if _, err := m.Subscribe("pub.*", func(ctx context.Context, _ sdk.Event) error {
			started <- struct{}{}
			<-ctx.Done()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	_ = pub.Publish("pub.tick", nil)
	for range 8 {
		recv(t, started)
	}
	if during := runtime.NumGoroutine(); during < before+8*sdk.EventWorkers {
		t.Fatalf("%d goroutines while running, want at least %d", during, before+8*sdk.EventWorkers)
	}
	b.Close(wait)
	if err := pub.Publish("pub.tick", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Publish after Bus.Close = %v", err)
	}
	if err := b.PublishCore("discord.x", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("PublishCore after Bus.Close = %v", err)
	}
	deadline := time.Now().Add(wait)
	for settle() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := settle(); after > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", after, before, buf[:runtime.Stack(buf, true)])
	}
}
