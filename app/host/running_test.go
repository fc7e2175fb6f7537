package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestHungCallbackShowsRunningLong hangs a command, a tool, an event
// handler (on the real bus) and a job past their budget: each shows as
// running long at once, while the module is still healthy (its timeout is
// far off), and no longer once it returns.
func TestHungCallbackShowsRunningLong(t *testing.T) {
	cases := []struct {
		kind, want string
		run        func(ctx context.Context, r *rig, rt *sdk.Runtime) error
	}{
		{"command", "running long: command /slow for ", func(ctx context.Context, r *rig, _ *sdk.Runtime) error {
			return r.h.RunCommand(ctx, "slow", sdk.TierMember, fakeInteraction{})
		}},
		{"tool", "running long: tool slow_tool for ", func(ctx context.Context, r *rig, _ *sdk.Runtime) error {
			_, err := r.h.RunTool(ctx, "slow_tool", sdk.ToolContext{GuildID: 1, UserID: 3}, json.RawMessage(`{}`))
			return err
		}},
		{"event", "running long: event slow.x for ", func(_ context.Context, _ *rig, rt *sdk.Runtime) error {
			return rt.Events.Publish("slow.x", nil)
		}},
		{"job", "running long: job k for ", func(ctx context.Context, r *rig, rt *sdk.Runtime) error {
			return rt.Scheduler.RunAt(ctx, "k", time.Now(), "h", nil)
		}},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			release, returned := make(chan struct{}), make(chan struct{}, 1)
			hang := func() { <-release; returned <- struct{}{} }
			mod := &testModule{start: func(_ context.Context, rt *sdk.Runtime) error {
				if err := rt.Scheduler.Register("h", func(context.Context, sdk.JobRun) error { hang(); return nil }); err != nil {
					return err
				}
				if _, err := rt.Events.Subscribe("slow.*", func(context.Context, sdk.Event) error { hang(); return nil }); err != nil {
					return err
				}
				_, err := rt.Interactions.AddCommand(sdk.CommandSpec{Name: "slow", Description: "d", MinTier: sdk.TierMember},
					func(context.Context, sdk.Interaction) error { hang(); return nil }, nil)
				return err
			}}
			s := spec("slow", mod, func(s *sdk.Spec) {
				s.Tools, s.Commands = []string{"slow_tool"}, []string{"slow"} // a module owns the names it declares
				s.Create = func(lc sdk.LoadContext) (sdk.Module, error) {
					return mod, lc.Tools().Register(sdk.Tool{Name: "slow_tool", Description: "d", Handler: func(context.Context, sdk.ToolContext, json.RawMessage) (string, error) {
						hang()
						return "", nil
					}})
				}
			})
			r := newRig(t, []sdk.Spec{s}, func(o *Options) {
				o.CallbackTimeout, o.RunningLongAfter = time.Minute, 10*time.Millisecond
				o.events, o.Bus = nil, events.New(events.Options{HandlerTimeout: time.Minute}) // the real bus
			})
			r.activate(t, 1)
			r.start(t)
			errs := make(chan error, 1)
			go func() { errs <- c.run(context.Background(), r, mod.runtime()) }()
			eventually(t, "the callback shown running long", func() bool {
				l := r.status(t, "slow").RunningLong
				return len(l) == 1 && strings.HasPrefix(l[0], c.want) && strings.HasSuffix(l[0], " s")
			})
			if st := r.status(t, "slow"); st.Health.State != sdk.HealthHealthy {
				t.Errorf("health = %s %q, want healthy until the timeout", st.Health.State, st.Health.Detail)
			}
			close(release)
			<-returned
			if err := <-errs; err != nil {
				t.Fatalf("%s: %v", c.kind, err)
			}
			eventually(t, "the running-long mark gone", func() bool { return len(r.status(t, "slow").RunningLong) == 0 })
		})
	}
}

// TestLongBookText renders a long run with its whole seconds.
func TestLongBookText(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		after time.Duration
		want  string
	}{
		{3500 * time.Millisecond, "running long: command /x for 3 s"},
		{61 * time.Second, "running long: command /x for 61 s"},
	}
	for _, c := range cases {
		if got := (LongRun{What: "command /x", Since: at}).Text(at.Add(c.after)); got != c.want {
			t.Errorf("Text(+%s) = %q, want %q", c.after, got, c.want)
		}
	}
}
