package host

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/modules/sdk"
)

// parked starts n goroutines from the calling goroutine (so they inherit
// its labels) that block until release closes.
func parked(n int, release <-chan struct{}) {
	for range n {
		go func() { <-release }()
	}
}

// leaker starts a goroutine that starts another every millisecond until
// release closes: a module leaking goroutines.
func leaker(release <-chan struct{}) {
	go func() {
		for {
			select {
			case <-release:
				return
			case <-time.After(time.Millisecond):
				go func() { <-release }()
			}
		}
	}()
}

// stepLeaker is a leaking module the test drives: each grow() starts 20
// more goroutines (the table's Growth: any two samples show the growth), from a goroutine of the module's (so they carry its
// labels), and returns once they are started — the count rises between
// any two samples however loaded the machine is.
type stepLeaker struct{ more chan chan struct{} }

func newStepLeaker() *stepLeaker { return &stepLeaker{more: make(chan chan struct{})} }

func (l *stepLeaker) start(release <-chan struct{}) {
	go func() {
		for {
			select {
			case <-release:
				return
			case done := <-l.more:
				parked(20, release)
				close(done)
			}
		}
	}()
}

func (l *stepLeaker) grow() {
	done := make(chan struct{})
	l.more <- done
	<-done
}

// TestGoroutinesAreCountedPerModule starts modules whose Start leaves
// goroutines behind and counts them: each module's count is its own, a
// module above the limit or growing over the window is degraded with the
// figures, and a steady one is not.
func TestGoroutinesAreCountedPerModule(t *testing.T) {
	leaky := newStepLeaker()
	cases := []struct {
		name       string
		start      func(release <-chan struct{})
		limit      int
		wantCount  int // -1: growing, not exact
		wantDetail string
		// grow, when set, runs before each sample.
		grow func()
	}{
		{name: "steady", start: func(r <-chan struct{}) { parked(50, r) }, wantCount: 50},
		{name: "none", start: func(<-chan struct{}) {}, wantCount: 0},
		{name: "over", start: func(r <-chan struct{}) { parked(60, r) }, limit: 50, wantCount: 60,
			wantDetail: "running 60 goroutines, above the limit of 50"},
		{name: "leaky", start: leaky.start, grow: leaky.grow, wantCount: -1, wantDetail: "goroutines keep growing: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			mod := &testModule{start: func(context.Context, *sdk.Runtime) error { c.start(release); return nil }}
			r := newRig(t, []sdk.Spec{spec("m", mod), bystander()}, func(o *Options) {
				// The timer never fires in the test: it samples itself.
				o.Goroutines = GoroutineOptions{Limit: c.limit, Period: time.Hour, Window: 50 * time.Millisecond, Growth: 20}
			})
			r.start(t)
			w := r.h.goroutines
			// Samples until the window is covered three times over (the
			// leak keeps growing between them).
			began := time.Now()
			for i := 0; i < 3 || time.Since(began) < 150*time.Millisecond; i++ {
				if c.grow != nil {
					c.grow()
				}
				w.sample()
				time.Sleep(10 * time.Millisecond)
			}
			if c.grow != nil {
				c.grow()
			}
			w.sample()
			st := r.status(t, "m")
			if !st.HasGoroutines {
				t.Fatalf("no goroutine count for a running module")
			}
			if c.wantCount >= 0 && st.Goroutines != c.wantCount {
				t.Errorf("goroutines = %d, want %d", st.Goroutines, c.wantCount)
			}
			if c.wantCount < 0 && st.Goroutines < 20 {
				t.Errorf("goroutines = %d, want the leak counted", st.Goroutines)
			}
			if by := r.status(t, "bystander"); !by.HasGoroutines || by.Goroutines != 0 {
				t.Errorf("bystander goroutines = %d (%v), want 0: the module's are its own", by.Goroutines, by.HasGoroutines)
			}
			if got := r.h.Goroutines()["m"]; got != st.Goroutines {
				t.Errorf("Goroutines()[m] = %d, want %d", got, st.Goroutines)
			}
			if c.wantDetail == "" {
				if st.Health.State != sdk.HealthHealthy {
					t.Errorf("health = %s %q, want healthy", st.Health.State, st.Health.Detail)
				}
				return
			}
			if st.Health.State != sdk.HealthDegraded || !strings.Contains(st.Health.Detail, c.wantDetail) {
				t.Errorf("health = %s %q, want degraded with %q", st.Health.State, st.Health.Detail, c.wantDetail)
			}
		})
	}
}

// TestLeakingModuleIsDegradedByTheTimer leaves the counting to the
// watch's own timer: the leaking module is degraded within the bound, and
// the steady one next to it stays healthy — also on a host whose clock
// stands still (a test's controlled clock): the watch's window is real
// time, as its period is.
func TestLeakingModuleIsDegradedByTheTimer(t *testing.T) {
	frozen := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		now  func() time.Time
	}{
		{"the wall clock", nil},
		{"a host clock standing still", func() time.Time { return frozen }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			leaky := &testModule{start: func(context.Context, *sdk.Runtime) error { leaker(release); return nil }}
			steady := &testModule{start: func(context.Context, *sdk.Runtime) error { parked(50, release); return nil }}
			r := newRig(t, []sdk.Spec{spec("leaky", leaky), spec("steady", steady)}, func(o *Options) {
				o.Goroutines = GoroutineOptions{Period: 10 * time.Millisecond, Window: 100 * time.Millisecond, Growth: 20}
				o.Now = tc.now
			})
			r.start(t)
			eventually(t, "the leaking module degraded", func() bool {
				return r.status(t, "leaky").Health.State == sdk.HealthDegraded
			})
			if d := r.status(t, "leaky").Health.Detail; !strings.Contains(d, "goroutines keep growing") {
				t.Errorf("leaky detail = %q, want the growth", d)
			}
			st := r.status(t, "steady")
			if st.Health.State != sdk.HealthHealthy || st.Goroutines != 50 {
				t.Errorf("steady = %s %q with %d goroutines, want healthy with 50", st.Health.State, st.Health.Detail, st.Goroutines)
			}
		})
	}
}

// TestCallbackGoroutinesCarryTheModule counts the goroutines a command
// handler, a tool and an event handler (on the real event bus) start as their
// module's.
func TestCallbackGoroutinesCarryTheModule(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var (
		mu sync.Mutex
		rt *sdk.Runtime
	)
	mod := &testModule{start: func(_ context.Context, r *sdk.Runtime) error {
		mu.Lock()
		rt = r
		mu.Unlock()
		if _, err := r.Interactions.AddCommand(sdk.CommandSpec{Name: "spawn", Description: "d", MinTier: sdk.TierMember},
			func(context.Context, sdk.Interaction) error { parked(3, release); return nil }, nil); err != nil {
			return err
		}
		_, err := r.Events.Subscribe("spawner.*", func(context.Context, sdk.Event) error { parked(4, release); return nil })
		return err
	}}
	s := spec("spawner", mod, func(s *sdk.Spec) {
		s.Tools, s.Commands = []string{"spawner_tool"}, []string{"spawn"} // a module owns the names it declares
		s.Create = func(lc sdk.LoadContext) (sdk.Module, error) {
			return mod, lc.Tools().Register(sdk.Tool{Name: "spawner_tool", Description: "d", Handler: func(context.Context, sdk.ToolContext, json.RawMessage) (string, error) {
				parked(2, release)
				return "", nil
			}})
		}
	})
	r := newRig(t, []sdk.Spec{s}, func(o *Options) {
		o.events, o.Bus = nil, events.New(events.Options{}) // the real bus and its lane workers
	})
	r.activate(t, 1)
	r.start(t)
	h := r.h
	if st := r.status(t, "spawner"); st.State != StateRunning {
		t.Fatalf("spawner = %s %q, want running", st.State, st.Reason)
	}
	count := func() int {
		h.goroutines.sample()
		n, _ := h.goroutines.count("spawner")
		return n
	}
	base := count() // the bus's lane workers, which run under the module's labels
	if base == 0 {
		t.Errorf("no goroutine counted for the module's event lane workers")
	}
	ctx := context.Background()
	if err := h.RunCommand(ctx, "spawn", sdk.TierMember, fakeInteraction{}); err != nil {
		t.Fatalf("RunCommand: %v", err)
	}
	if _, err := h.RunTool(ctx, "spawner_tool", sdk.ToolContext{GuildID: 1, UserID: 3}, json.RawMessage(`{}`)); err != nil {
		t.Fatalf("RunTool: %v", err)
	}
	if n := count(); n != base+5 {
		t.Fatalf("after the command and the tool: %d goroutines, want %d+5", n, base)
	}
	mu.Lock()
	err := rt.Events.Publish("spawner.x", nil)
	mu.Unlock()
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	eventually(t, "the event handler's goroutines counted", func() bool { return count() == base+9 })
}

// TestParseGoroutineProfile sums the profile's groups by module label.
func TestParseGoroutineProfile(t *testing.T) {
	cases := []struct {
		name, profile string
		want          map[string]int
	}{
		{"labelled and not", "goroutine profile: total 8\n5 @ 0x1 0x2\n# labels: {\"kimi_module\":\"a\"}\n#\t0x1\tf+0x1\tx.go:1\n\n2 @ 0x3\n#\t0x3\tg\n\n1 @ 0x4\n# labels: {\"kimi_module\":\"a\", \"x\":\"y\"}\n",
			map[string]int{"a": 6, "": 2}},
		{"other labels only", "3 @ 0x1\n# labels: {\"other\":\"a\"}\n", map[string]int{"": 3}},
		{"empty", "goroutine profile: total 0\n", map[string]int{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := parseGoroutineProfile([]byte(c.profile))
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

// BenchmarkGoroutineCount measures one count with 5,000 labelled
// goroutines (µs/count): what the watch spends every Period, beside its
// baseline in the same run, the runtime's own profile written without
// parsing (what any per-label count must pay).
func BenchmarkGoroutineCount(b *testing.B) {
	release := make(chan struct{})
	defer close(release)
	pprof.Do(context.Background(), pprof.Labels(ModuleLabel, "bench"), func(context.Context) { parked(5000, release) })
	var buf bytes.Buffer
	perCount := func(b *testing.B, count func() error) {
		began := time.Now()
		for b.Loop() {
			if err := count(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(time.Since(began).Microseconds())/float64(b.N), "µs/count")
	}
	b.Run("count", func(b *testing.B) {
		perCount(b, func() error { _, err := countGoroutines(&buf); return err })
	})
	b.Run("profile-only", func(b *testing.B) {
		perCount(b, func() error { buf.Reset(); return pprof.Lookup("goroutine").WriteTo(&buf, 1) })
	})
}

// TestGoroutineCountKeepsTheHealthAge: a count that finds nothing wrong
// changes neither the module's health nor its age (/modules' Age column),
// so the periodic count does not make every health look 10 s old at most.
func TestGoroutineCountKeepsTheHealthAge(t *testing.T) {
	mod := &testModule{start: func(context.Context, *sdk.Runtime) error { return nil }}
	r := newRig(t, []sdk.Spec{spec("m", mod)}, func(o *Options) {
		o.Goroutines = GoroutineOptions{Period: time.Hour} // counted only by the test
	})
	r.start(t)
	time.Sleep(50 * time.Millisecond) // the health ages
	before := r.status(t, "m").HealthAge
	r.h.goroutines.sample()
	if after := r.status(t, "m").HealthAge; after < before {
		t.Fatalf("a healthy count reset the health age: %v -> %v", before, after)
	}
}
