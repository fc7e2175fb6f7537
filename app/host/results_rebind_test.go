package host

import (
	"context"
	"errors"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestScheduledResultsRebindOnCapabilityChange: a module closed because
// SetCapabilities no longer covers its activation capabilities loses its
// binding (its handlers are unregistered, its old port refuses), and when
// the capabilities return it is relaunched with a new binding whose
// handler the outbox calls; the old incarnation's port and hooks stay
// dead.
func TestScheduledResultsRebindOnCapabilityChange(t *testing.T) {
	ctx := context.Background()
	mod := &testModule{}
	full := sdk.NewCapabilities([]string{sdk.CapScheduledResults, sdk.CapDiscordMembers}, true, false)
	r, rec := newResultsRig(t, []sdk.Spec{spec("m", mod, subscribes("digest"), func(s *sdk.Spec) {
		s.ActivationCapabilities = []string{sdk.CapDiscordMembers}
	})}, func(o *Options) { o.caps = &full })
	r.start(t)
	handler := func(context.Context, sdk.ScheduledResult, sdk.ScheduledResultFiles) error { return nil }
	oldPort, oldHooks := mod.runtime().ScheduledResults, rec.hooksOf(t, "m")
	if oldPort == nil {
		t.Fatal("no port")
	}
	if err := oldPort.Subscribe(ctx, "digest", 42, handler); err != nil {
		t.Fatal(err)
	}

	without := sdk.NewCapabilities([]string{sdk.CapScheduledResults}, false, false)
	if err := r.h.SetCapabilities(ctx, without); err != nil {
		t.Fatal(err)
	}
	if oldHooks.Running() {
		t.Fatal("the closed module's binding still runs")
	}
	if err := oldPort.Subscribe(ctx, "digest", 42, handler); !errors.Is(err, ErrRevoked) {
		t.Fatalf("the closed module's port: %v", err)
	}
	if subs, err := rec.svc.Subscriptions(ctx); err != nil || len(subs) != 1 || subs[0].Registered {
		t.Fatalf("after the close: subscriptions %+v, %v (want kept, not registered)", subs, err)
	}

	if err := r.h.SetCapabilities(ctx, full); err != nil {
		t.Fatal(err)
	}
	newPort, newHooks := mod.runtime().ScheduledResults, rec.hooksOf(t, "m")
	if newPort == nil || newPort == oldPort {
		t.Fatalf("relaunched with port %v (old %v)", newPort, oldPort)
	}
	if !newHooks.Running() || oldHooks.Running() {
		t.Fatalf("running: new %v, old %v", newHooks.Running(), oldHooks.Running())
	}
	if err := newPort.Subscribe(ctx, "digest", 42, handler); err != nil {
		t.Fatal(err)
	}
	if subs, err := rec.svc.Subscriptions(ctx); err != nil || len(subs) != 1 || !subs[0].Registered {
		t.Fatalf("after the relaunch: subscriptions %+v, %v (want registered)", subs, err)
	}
	if err := oldPort.Unsubscribe(ctx, "digest", 42); !errors.Is(err, ErrRevoked) {
		t.Fatalf("the old incarnation's port after the relaunch: %v", err)
	}
}
