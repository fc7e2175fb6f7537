package host

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestStartShowsModulesStartingWhileTheyWait: from the moment Start begins
// every selected module is starting (with the moment it began), first
// waiting for Discord, then while its own Start runs; once it returns the
// module runs and the directory says so.
func TestStartShowsModulesStartingWhileTheyWait(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := &testModule{start: func(ctx context.Context, _ *sdk.Runtime) error {
		close(entered)
		<-release
		return nil
	}}
	awaiting, ready := make(chan struct{}), make(chan struct{})
	dir := NewDirectory()
	r := newRig(t, []sdk.Spec{spec("slow", slow)}, func(o *Options) {
		o.StartTimeout = time.Minute
		o.Directory = dir
		o.AwaitDiscord = func(ctx context.Context) error { close(awaiting); <-ready; return nil }
	})
	before := time.Now()
	done := make(chan error, 1)
	go func() { done <- r.h.Start(context.Background()) }()

	<-awaiting
	st := r.status(t, "slow")
	if st.State != StateStarting || st.Reason != reasonAwaitingDiscord || st.Since.Before(before) {
		t.Fatalf("while awaiting Discord: state %q reason %q since %v (start began %v)", st.State, st.Reason, st.Since, before)
	}
	if dir.Running("slow") {
		t.Fatal("the directory says a starting module runs")
	}
	close(ready)
	<-entered
	if st := r.status(t, "slow"); st.State != StateStarting || st.Reason != "" {
		t.Fatalf("while its Start runs: state %q reason %q", st.State, st.Reason)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := r.status(t, "slow"); st.State != StateRunning || !dir.Running("slow") {
		t.Fatalf("after Start: state %q, directory running %v", st.State, dir.Running("slow"))
	}
	if err := r.h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if dir.Running("slow") {
		t.Fatal("the directory says a closed module runs")
	}
}

// TestStartGoesOnWhenDiscordIsNotReady: an AwaitDiscord that gives up
// (the bounded wait ran out) is logged and the modules start anyway.
func TestStartGoesOnWhenDiscordIsNotReady(t *testing.T) {
	r := newRig(t, []sdk.Spec{spec("a", &testModule{})}, func(o *Options) {
		o.AwaitDiscord = func(context.Context) error { return errors.New("discord: await ready: context deadline exceeded") }
	})
	r.start(t)
	if st := r.status(t, "a"); st.State != StateRunning {
		t.Fatalf("state %q after a wait that gave up", st.State)
	}
	if !r.logs.has("starting the modules without a ready Discord connection", "context deadline exceeded") {
		t.Fatal("the wait that gave up was not logged")
	}
}

// TestStartEndedLeavesTheRestStopped: a Start whose ctx ends while a
// module hangs in its Start cancels that start, and the modules after it
// are not started.
func TestStartEndedLeavesTheRestStopped(t *testing.T) {
	entered := make(chan struct{})
	hang := &testModule{start: func(ctx context.Context, _ *sdk.Runtime) error { close(entered); <-ctx.Done(); return ctx.Err() }}
	r := newRig(t, []sdk.Spec{spec("hang", hang), spec("after", &testModule{})}, func(o *Options) { o.StartTimeout = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.h.Start(ctx) }()
	<-entered
	cancel()
	select {
	case <-done:
	case <-waitLong():
		t.Fatal("Start did not end after its ctx did (the module's start runs until its 1-minute timeout)")
	}
	if st := r.status(t, "hang"); st.State != StateFailed {
		t.Fatalf("the cancelled module is %q", st.State)
	}
	if st := r.status(t, "after"); st.State != StateStopped || st.Reason != reasonShuttingDown {
		t.Fatalf("the module after it is %q (%q)", st.State, st.Reason)
	}
}

// TestCloseFitsItsDeadline: with a module hung in Close (ignoring its ctx)
// and its configured close timeout far longer, Close with a deadline
// returns about then, abandons the hung module with the bound it really
// had, and still closes the module started before it.
func TestCloseFitsItsDeadline(t *testing.T) {
	first := &testModule{}
	hung := &testModule{close: func(context.Context) error { select {} }}
	r := newRig(t, []sdk.Spec{spec("first", first), spec("hung", hung, func(s *sdk.Spec) { s.Dependencies = []string{"first"} })},
		func(o *Options) { o.CloseTimeout, o.CancelGrace = time.Minute, time.Minute })
	r.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.h.Close(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-waitLong():
		t.Fatal("Close ran past its deadline into the module's own 1-minute close timeout")
	}
	first.mu.Lock()
	closed := first.closed
	first.mu.Unlock()
	if closed != 1 {
		t.Fatalf("the module before the hung one was closed %d times", closed)
	}
	if !r.logs.has("Kimi module hung close() exceeded", "and ignored cancellation; continuing shutdown") || r.logs.has("close() exceeded 60s") {
		t.Fatal("the hung close was not logged with the bound it had")
	}
}

// TestCloseFitsItsDeadlineWithAHungHandler: a module hung in Close whose
// event handler is hung too: the module's close bound and the wait for its
// handlers together fit the deadline on Close's ctx (the handlers' wait
// comes out of the same bound, not on top of it).
func TestCloseFitsItsDeadlineWithAHungHandler(t *testing.T) {
	running := make(chan struct{})
	hung := &testModule{
		start: func(ctx context.Context, rt *sdk.Runtime) error {
			topic := rt.ModuleName + ".ping"
			if _, err := rt.Events.Subscribe(topic, func(context.Context, sdk.Event) error { close(running); select {} }); err != nil {
				return err
			}
			return rt.Events.Publish(topic, map[string]any{"n": 1})
		},
		close: func(context.Context) error { select {} },
	}
	h, _, _ := realRig(t, []sdk.Spec{spec("hung", hung)})
	h.opts.CloseTimeout, h.opts.CancelGrace = time.Minute, time.Minute
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-running
	const budget = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	began := time.Now()
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Slack for a loaded machine; the overrun this guards is a fifth of
	// the budget (400 ms here).
	if took := time.Since(began); took > budget+150*time.Millisecond {
		t.Fatalf("Close took %s with a %s deadline", took, budget)
	}
}

// TestStartEndedByShutdownSaysSo: a module hung in Start, ignoring its
// ctx, whose start the host's Start ending cut short, is failed with that
// reason, not with a start timeout it never reached.
func TestStartEndedByShutdownSaysSo(t *testing.T) {
	entered := make(chan struct{})
	hang := &testModule{start: func(context.Context, *sdk.Runtime) error { close(entered); select {} }}
	r := newRig(t, []sdk.Spec{spec("hang", hang)}, func(o *Options) { o.StartTimeout, o.CancelGrace = time.Minute, 50*time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.h.Start(ctx) }()
	<-entered
	cancel()
	select {
	case <-done:
	case <-waitLong():
		t.Fatal("Start did not end after its ctx did")
	}
	st := r.status(t, "hang")
	if st.State != StateFailed || strings.Contains(st.Reason, "exceeded") || !strings.Contains(st.Reason, "shutting down") {
		t.Fatalf("the module cut short by the shutdown is %q (%q)", st.State, st.Reason)
	}
}
