package host

import (
	"context"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestWatch: a watcher is signalled when a module's health or state
// changes (a report, a restart), and its channel closes when its context
// ends.
func TestWatch(t *testing.T) {
	mod := &testModule{}
	r := newRig(t, []sdk.Spec{spec("watched", mod)})
	r.start(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := r.h.Watch(ctx)
	waitSignal := func(what string) {
		t.Helper()
		select {
		case _, ok := <-ch:
			if !ok {
				t.Fatalf("%s: channel closed", what)
			}
		case <-waitLong():
			t.Fatalf("%s: no signal", what)
		}
	}

	rt := mod.runtime()
	rt.Health.Report(sdk.HealthDegraded, "queue is full", nil)
	waitSignal("degraded report")
	if st := r.status(t, "watched"); st.Health.State != sdk.HealthDegraded {
		t.Fatalf("after the signal the state is %q, want degraded", st.Health.State)
	}
	rt.Health.Report(sdk.HealthHealthy, "", nil)
	waitSignal("healthy report")

	if err := r.h.Restart(context.Background(), "watched", "test"); err != nil {
		t.Fatal(err)
	}
	waitSignal("restart")

	cancel()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-waitLong():
			t.Fatal("the channel did not close after its context ended")
		}
	}
}

// TestHealthBookChanged: the change hook fires once per change of the
// visible state or detail, and not for a report that changes neither (a
// metrics-only update), so the admin's live view is not woken for nothing.
func TestHealthBookChanged(t *testing.T) {
	b := newHealthBook(timeNow, 0, nil)
	n := 0
	b.changed = func() { n++ }
	steps := []struct {
		name  string
		do    func()
		wantN int
	}{
		{"first report", func() { b.report("m", sdk.HealthHealthy, "", nil) }, 1},
		{"same again", func() { b.report("m", sdk.HealthHealthy, "", nil) }, 1},
		{"metrics only", func() { b.report("m", sdk.HealthHealthy, "", map[string]float64{"x": 1}) }, 1},
		{"merged counters", func() { b.mergeMetrics("m", map[string]float64{"events_handled": 3}) }, 1},
		{"degraded", func() { b.report("m", sdk.HealthDegraded, "slow", nil) }, 2},
		{"new detail", func() { b.report("m", sdk.HealthDegraded, "slower", nil) }, 3},
		{"core constraint wins", func() { b.constrain("m", "services", sdk.HealthFailed, "gone") }, 4},
		{"constraint cleared", func() { b.constrain("m", "services", sdk.HealthHealthy, "") }, 5},
	}
	for _, s := range steps {
		s.do()
		if n != s.wantN {
			t.Fatalf("%s: hook called %d times in all, want %d", s.name, n, s.wantN)
		}
	}
}
