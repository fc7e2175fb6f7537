package host

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// journal records lifecycle calls across modules, in order.
type journal struct {
	mu    sync.Mutex
	calls []string
}

func (j *journal) add(s string) { j.mu.Lock(); j.calls = append(j.calls, s); j.mu.Unlock() }
func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.calls)
}

func journaled(j *journal, name string, edit ...func(*sdk.Spec)) sdk.Spec {
	mod := &testModule{
		migrations: []sdk.Migration{{Name: "001", Up: func(context.Context, sdk.MigrationContext) error { return nil }}},
		start:      func(context.Context, *sdk.Runtime) error { j.add("start " + name); return nil },
		close:      func(context.Context) error { j.add("close " + name); return nil },
	}
	s := spec(name, mod, edit...)
	create := s.Create
	s.Create = func(lc sdk.LoadContext) (sdk.Module, error) { j.add("create " + name); return create(lc) }
	return s
}

// TestLifecycleOrder: create all → migrate all → start in dependency order
// → close newest-first; a soft-disabled module is neither created nor
// migrated, and its dependents are disabled.
func TestLifecycleOrder(t *testing.T) {
	j := &journal{}
	specs := []sdk.Spec{
		journaled(j, "b", deps("a")), journaled(j, "a"),
		journaled(j, "gated", func(s *sdk.Spec) { s.ActivationCapabilities = []string{"nope.v1", "other.v1"} }),
		journaled(j, "after", deps("gated")),
	}
	r := newRig(t, specs, withSelection("b", "a", "gated", "after"))
	r.start(t)
	if got, want := j.list(), []string{"create a", "create b", "start a", "start b"}; !slices.Equal(got, want) {
		t.Fatalf("calls = %q, want %q", got, want)
	}
	if r.storage.wasMigrated("gated") || !r.storage.wasMigrated("a") || !r.storage.wasMigrated("b") {
		t.Errorf("migrated = %q", r.storage.migrated)
	}
	for name, want := range map[string]string{"gated": "missing activation capability nope.v1, other.v1", "after": "dependency disabled: gated"} {
		if st := r.status(t, name); st.State != StateDisabled || st.Reason != want {
			t.Errorf("%s = %s %q, want disabled %q", name, st.State, st.Reason, want)
		}
	}
	if err := r.h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := j.list()[4:]; !slices.Equal(got, []string{"close b", "close a"}) {
		t.Errorf("close order = %q, want newest first", got)
	}
}

// TestFailuresSpreadToDependents: settings, migrate and start failures
// mark the module failed and disable its dependents; the rest start.
func TestFailuresSpreadToDependents(t *testing.T) {
	for _, stage := range []string{"migrate", "start"} {
		t.Run(stage, func(t *testing.T) {
			bad := &testModule{start: func(context.Context, *sdk.Runtime) error {
				if stage == "start" {
					return errors.New("no luck")
				}
				return nil
			}}
			r := newRig(t, []sdk.Spec{spec("bad", bad), spec("child", &testModule{}, deps("bad")), spec("fine", &testModule{})})
			if stage == "migrate" {
				r.storage.fail["bad"] = errors.New("disk on fire")
			}
			r.start(t)
			st := r.status(t, "bad")
			want := map[string]string{"migrate": "migrate failed: disk on fire", "start": "no luck"}[stage]
			if st.State != StateFailed || st.Reason != want {
				t.Errorf("bad = %s %q, want failed %q", st.State, st.Reason, want)
			}
			if st := r.status(t, "child"); st.State != StateDisabled || st.Reason != "dependency failed: bad" {
				t.Errorf("child = %s %q", st.State, st.Reason)
			}
			if st := r.status(t, "fine"); st.State != StateRunning {
				t.Errorf("fine = %s %q", st.State, st.Reason)
			}
			if stage == "start" && bad.closed != 1 {
				t.Errorf("a failed start was closed %d times, want 1", bad.closed)
			}
		})
	}
}

// TestPortsRevokedAtClose: after Close every port view refuses clearly.
func TestPortsRevokedAtClose(t *testing.T) {
	mod := &testModule{}
	r := newRig(t, []sdk.Spec{spec("m", mod, func(s *sdk.Spec) {
		s.Permissions.DiscordActions = []sdk.DiscordAction{sdk.ActionSendMessage}
		s.Provides = []sdk.ServiceDeclaration{{Name: "svc", Version: 1}}
	})})
	r.start(t)
	rt := mod.runtime()
	ctx := context.Background()
	if _, err := rt.Discord.SendMessage(ctx, 1, sdk.OutgoingMessage{Content: "x"}); !errors.Is(err, ErrDiscordNotConnected) {
		t.Errorf("SendMessage before close = %v, want Discord is not connected", err)
	}
	if err := rt.Discord.Ban(ctx, 1, 2, sdk.Moderation{}, 0); !errors.As(err, new(*sdk.UndeclaredDiscordActionError)) {
		t.Errorf("undeclared Ban = %v", err)
	}
	if err := r.h.Restart(ctx, "m", "tester"); err != nil {
		t.Fatal(err)
	}
	checks := map[string]error{}
	checks["events"] = rt.Events.Publish("m.x", nil)
	_, checks["subscribe"] = rt.Events.Subscribe("m.*", func(context.Context, sdk.Event) error { return nil })
	checks["scheduler"] = rt.Scheduler.Register("h", func(context.Context, sdk.JobRun) error { return nil })
	checks["storage"] = rt.Storage.WriteTx(ctx, func(context.Context, *sql.Tx) error { return nil })
	_, checks["discord"] = rt.Discord.SendMessage(ctx, 1, sdk.OutgoingMessage{})
	_, checks["interactions"] = rt.Interactions.AddCommand(sdk.CommandSpec{Name: "x", Description: "d"}, func(context.Context, sdk.Interaction) error { return nil }, nil)
	_, checks["http"] = rt.HTTP.Get(ctx, "https://example.com/")
	_, checks["services"] = rt.Services.Provide("svc", 1, 1)
	_, checks["trust"] = rt.Trust.Tier(ctx, 1, 2)
	for port, err := range checks {
		if !errors.Is(err, ErrRevoked) || !strings.Contains(err.Error(), "module \"m\" is closed") {
			t.Errorf("%s after close = %v, want a revoked-port error", port, err)
		}
	}
	if st := r.status(t, "m"); st.State != StateRunning {
		t.Errorf("restarted m = %s %q", st.State, st.Reason)
	}
	if mod.runtime() == rt {
		t.Error("restart reused the old runtime")
	}
}

// TestClosedHostStartsNothing: after Close, Start, Restart (all or one)
// and SetEnabled refuse with ErrClosed and no module starts again on the
// closed storage.
func TestClosedHostStartsNothing(t *testing.T) {
	for _, tt := range []struct {
		name string
		call func(*Host) error
	}{
		{"start", func(h *Host) error { return h.Start(context.Background()) }},
		{"restart all", func(h *Host) error { return h.Restart(context.Background(), "", "admin") }},
		{"restart one", func(h *Host) error { return h.Restart(context.Background(), "m", "admin") }},
		{"enable", func(h *Host) error { return h.SetEnabled(context.Background(), "m", true, "admin") }},
		{"disable", func(h *Host) error { return h.SetEnabled(context.Background(), "m", false, "admin") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var starts atomic.Int32
			mod := &testModule{start: func(context.Context, *sdk.Runtime) error { starts.Add(1); return nil }}
			// the stored selection (empty: m is off), so SetEnabled restarts
			r := newRig(t, []sdk.Spec{spec("m", mod)}, func(o *Options) { o.Selection, o.SelectionSet = nil, false })
			r.start(t)
			if err := r.h.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			before := starts.Load()
			if err := tt.call(r.h); !errors.Is(err, ErrClosed) {
				t.Errorf("after Close: %v, want ErrClosed", err)
			}
			if starts.Load() != before {
				t.Errorf("a module started on the closed host")
			}
			if st := r.status(t, "m"); st.State == StateRunning {
				t.Errorf("m = %s after Close", st.State)
			}
		})
	}
}
