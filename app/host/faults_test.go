package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

// fakeInteraction is an interaction from guild 1.
type fakeInteraction struct{ customID string }

func (f fakeInteraction) GuildID() uint64                                { return 1 }
func (f fakeInteraction) ChannelID() uint64                              { return 2 }
func (f fakeInteraction) UserID() uint64                                 { return 3 }
func (f fakeInteraction) GuildName() string                              { return "g" }
func (f fakeInteraction) Options() sdk.Options                           { return sdk.Options{} }
func (f fakeInteraction) CustomID() string                               { return f.customID }
func (f fakeInteraction) Values() []string                               { return nil }
func (f fakeInteraction) TextValues() map[string]string                  { return nil }
func (f fakeInteraction) Message() *sdk.MessageRef                       { return nil }
func (f fakeInteraction) Respond(context.Context, sdk.Response) error    { return nil }
func (f fakeInteraction) Defer(context.Context, bool) error              { return nil }
func (f fakeInteraction) ShowModal(context.Context, sdk.ModalSpec) error { return nil }
func (f fakeInteraction) EditOriginal(context.Context, sdk.Response) error {
	return nil
}
func (f fakeInteraction) FollowUp(context.Context, sdk.Response) error { return nil }

var _ sdk.Interaction = fakeInteraction{}

// behaviour is how a faulty callback misbehaves.
type behaviour string

const (
	doPanic  behaviour = "panic"
	doError  behaviour = "error"
	doHang   behaviour = "hang"   // until its ctx is cancelled
	doIgnore behaviour = "ignore" // ignores cancellation (released at cleanup)
)

func misbehave(ctx context.Context, b behaviour, release <-chan struct{}) error {
	switch b {
	case doPanic:
		panic("boom")
	case doError:
		return errors.New("boom")
	case doHang:
		<-ctx.Done()
		return ctx.Err()
	case doIgnore:
		<-release
	}
	return nil
}

// bystander is a healthy module with a tool, run next to the faulty one.
func bystander() sdk.Spec {
	mod := &testModule{}
	return sdk.Spec{Name: "bystander", Version: "1", APIVersion: sdk.APIVersion, Tools: []string{"bystander_ping"}, Create: func(lc sdk.LoadContext) (sdk.Module, error) {
		return mod, lc.Tools().Register(sdk.Tool{Name: "bystander_ping", Description: "ping", Handler: func(context.Context, sdk.ToolContext, json.RawMessage) (string, error) {
			return "pong", nil
		}})
	}}
}

// TestFaultsAreContained makes a module panic, fail and hang in every
// callback kind the host invokes: the host stays up, the faulty module's
// health (or state) says what happened, its logger logged it, and the
// bystander keeps working.
func TestFaultsAreContained(t *testing.T) {
	kinds := []string{"create", "start", "close", "job", "command", "autocomplete", "component", "modal", "tool", "guild_settings", "event"}
	for _, kind := range kinds {
		for _, b := range []behaviour{doPanic, doError, doHang, doIgnore} {
			if (kind == "create" && b == doHang) || (b == doHang && (kind == "guild_settings")) {
				continue // create and OnChange callbacks get no ctx to honour: doIgnore covers the hang
			}
			if kind == "event" && (b == doHang || b == doIgnore) {
				continue // the bus bounds handlers itself (app/events); the host only records its report
			}
			t.Run(kind+"/"+string(b), func(t *testing.T) { runFault(t, kind, b) })
		}
	}
}

func runFault(t *testing.T, kind string, b behaviour) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	act := func(ctx context.Context, k string) error {
		if k == kind {
			return misbehave(ctx, b, release)
		}
		return nil
	}
	mod := &testModule{}
	mod.start = func(ctx context.Context, rt *sdk.Runtime) error {
		if err := act(ctx, "start"); err != nil {
			return err
		}
		if err := rt.Scheduler.Register("h", func(ctx context.Context, _ sdk.JobRun) error { return act(ctx, "job") }); err != nil {
			return err
		}
		if _, err := rt.Interactions.AddCommand(sdk.CommandSpec{Name: "faulty", Description: "d", MinTier: sdk.TierMember},
			func(ctx context.Context, _ sdk.Interaction) error { return act(ctx, "command") },
			func(ctx context.Context, _ sdk.Interaction, _, _ string) ([]sdk.Choice, error) {
				return nil, act(ctx, "autocomplete")
			}); err != nil {
			return err
		}
		for _, k := range []sdk.ComponentKind{sdk.ComponentButton, sdk.ComponentModal} {
			name := "component"
			if k == sdk.ComponentModal {
				name = "modal"
			}
			if _, err := rt.Interactions.RegisterComponent(k, "thing", func(ctx context.Context, _ sdk.Interaction) error { return act(ctx, name) }, sdk.ComponentOptions{}); err != nil {
				return err
			}
		}
		rt.GuildSettings.OnChange(func(ctx context.Context, _ uint64) { _ = act(ctx, "guild_settings") })
		if _, err := rt.Events.Subscribe("faulty.*", func(ctx context.Context, _ sdk.Event) error { return act(ctx, "event") }); err != nil {
			return err
		}
		return nil
	}
	mod.close = func(ctx context.Context) error { return act(ctx, "close") }
	faulty := sdk.Spec{Name: "faulty", Version: "1", APIVersion: sdk.APIVersion, Tools: []string{"faulty_tool"}, Commands: []string{"faulty"},
		GuildSettings: &sdk.GuildSettingsSchema{InvalidPolicy: sdk.DisableModule, Fields: []sdk.GuildSettingField{{Name: "n", Kind: sdk.GuildSettingInt, Default: 1}}},
		Create: func(lc sdk.LoadContext) (sdk.Module, error) {
			if err := lc.Tools().Register(sdk.Tool{Name: "faulty_tool", Description: "d", Handler: func(ctx context.Context, _ sdk.ToolContext, _ json.RawMessage) (string, error) {
				return "", act(ctx, "tool")
			}}); err != nil {
				return nil, err
			}
			if err := act(context.Background(), "create"); err != nil {
				return nil, err
			}
			return mod, nil
		}}
	r := newRig(t, []sdk.Spec{bystander(), faulty})
	r.activate(t, 1)
	r.start(t)
	ctx := context.Background()

	want := map[behaviour]string{doPanic: "panic: boom", doError: "boom", doHang: "exceeded 0.3s", doIgnore: "exceeded 0.3s and ignored cancellation"}[b]
	switch kind {
	case "create", "start":
		st := r.status(t, "faulty")
		if st.State != StateFailed || !strings.Contains(st.Reason, want) {
			t.Fatalf("faulty = %s %q, want failed with %q", st.State, st.Reason, want)
		}
		if kind == "start" && (st.Health.State != sdk.HealthFailed || !strings.Contains(st.Health.Detail, "start")) {
			// the failed report is forgotten at revoke; the history keeps it
			if len(st.History) == 0 || st.History[len(st.History)-1].State != sdk.HealthFailed {
				t.Errorf("health history = %+v, want a failed start", st.History)
			}
		}
		if kind == "create" && len(r.h.ToolsFor(sdk.ToolContext{GuildID: 1})) != 1 {
			t.Errorf("tools = %+v, want only the bystander's (a failed create's tools are removed)", r.h.ToolsFor(sdk.ToolContext{GuildID: 1}))
		}
	case "close":
		if err := r.h.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if !r.logs.has("module=faulty", "close") {
			t.Errorf("no close failure logged with the module's logger: %q", r.logs.recs)
		}
		return
	default:
		if st := r.status(t, "faulty"); st.State != StateRunning {
			t.Fatalf("faulty = %s %q, want running", st.State, st.Reason)
		}
		var err error
		switch kind {
		case "job":
			err = mod.runtime().Scheduler.RunAt(ctx, "k", r.h.now(), "h", nil)
		case "command":
			err = r.h.RunCommand(ctx, "faulty", sdk.TierMember, fakeInteraction{})
		case "autocomplete":
			_, err = r.h.RunAutocomplete(ctx, "faulty", sdk.TierStaff, fakeInteraction{}, "o", "")
		case "component":
			err = r.h.RunComponent(ctx, sdk.ComponentButton, sdk.TierMember, fakeInteraction{customID: "m:faulty:thing"})
		case "modal":
			err = r.h.RunComponent(ctx, sdk.ComponentModal, sdk.TierMember, fakeInteraction{customID: "m:faulty:thing"})
		case "tool":
			_, err = r.h.RunTool(ctx, "faulty_tool", sdk.ToolContext{GuildID: 1, UserID: 3}, json.RawMessage(`{}`))
		case "guild_settings":
			r.write(t, guildcfg.GuildModuleTarget(1, "faulty"), "---\nn: 2\n---\n")
		case "event":
			err = mod.runtime().Events.Publish("faulty.thing", nil)
		}
		if err != nil && kind == "job" {
			t.Fatalf("RunAt: %v", err)
		}
		if kind == "command" || kind == "autocomplete" || kind == "component" || kind == "modal" || kind == "tool" {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("dispatch error = %v, want one with %q", err, want)
			}
		}
		if kind == "guild_settings" {
			want = map[behaviour]string{doPanic: "panic: boom", doError: "", doIgnore: "exceeded 0.3s and ignored cancellation"}[b]
			if b == doError { // OnChange returns nothing: an "error" is not observable
				return
			}
		}
		if kind == "event" {
			want = "event handler for faulty.thing failed: " + want
		}
		eventually(t, "faulty degraded with "+want, func() bool {
			st := r.status(t, "faulty")
			return st.Health.State == sdk.HealthDegraded && strings.Contains(st.Health.Detail, want)
		})
		if !r.logs.has("module=faulty", "boom") && !r.logs.has("module=faulty", "exceeded") {
			t.Errorf("nothing logged with the module's logger: %q", r.logs.recs)
		}
	}
	if st := r.status(t, "bystander"); st.State != StateRunning {
		t.Fatalf("bystander = %s %q, want running", st.State, st.Reason)
	}
	if out, err := r.h.RunTool(ctx, "bystander_ping", sdk.ToolContext{GuildID: 1, UserID: 3}, nil); err != nil || out != "pong" {
		t.Errorf("bystander tool = %q, %v", out, err)
	}
}

// TestMigrateFaultsAreContained runs a module's migration that panics,
// fails, hangs (honouring its ctx) and ignores cancellation, on the real
// module storage: Start returns, the module fails in its migration with
// the step rolled back (no table, no ledger row), its dependent is
// disabled, the bystander runs and the single writer is free.
func TestMigrateFaultsAreContained(t *testing.T) {
	for _, tt := range []struct {
		b    behaviour
		want string
	}{
		{doPanic, "panic: boom"},
		{doError, "boom"},
		{doHang, "migrate() exceeded 0.3s"},
		{doIgnore, "migrate() exceeded 0.3s"},
	} {
		t.Run(string(tt.b), func(t *testing.T) {
			release := make(chan struct{})
			faulty := &testModule{migrations: []sdk.Migration{{Name: "001_faulty", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
				if _, err := mc.Tx.ExecContext(ctx, `CREATE TABLE faulty_half (x)`); err != nil {
					return err
				}
				return misbehave(ctx, tt.b, release)
			}}}}
			h, _, coreWrite := realRig(t, []sdk.Spec{
				spec("faulty", faulty),
				spec("dependent", &testModule{}, func(s *sdk.Spec) { s.Dependencies = []string{"faulty"} }),
				bystander(),
			})
			t.Cleanup(func() { h.Close(context.Background()) })
			t.Cleanup(func() { close(release) })
			done := make(chan error, 1)
			go func() { done <- h.Start(context.Background()) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Start has not returned 30 s after the migration misbehaved")
			}
			for name, want := range map[string]struct {
				state  State
				reason string
			}{
				"faulty":    {StateFailed, "migrate failed: "},
				"dependent": {StateDisabled, "dependency failed: faulty"},
				"bystander": {StateRunning, ""},
			} {
				st, _ := h.Module(name)
				if st.State != want.state || !strings.Contains(st.Reason, want.reason) {
					t.Errorf("%s = %s %q, want %s %q", name, st.State, st.Reason, want.state, want.reason)
				}
			}
			if st, _ := h.Module("faulty"); !strings.Contains(st.Reason, tt.want) {
				t.Errorf("faulty reason %q, want it to contain %q", st.Reason, tt.want)
			}
			w := make(chan error, 1)
			go func() { w <- coreWrite() }()
			select {
			case err := <-w:
				if err != nil {
					t.Fatalf("core write: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the failed migration still holds the single writer")
			}
			var tables, ledger int
			if err := h.store.Reader().QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'faulty_half'`).Scan(&tables); err != nil {
				t.Fatal(err)
			}
			if err := h.store.Reader().QueryRow(`SELECT count(*) FROM kimi_module_migrations WHERE module = 'faulty'`).Scan(&ledger); err != nil {
				t.Fatal(err)
			}
			if tables != 0 || ledger != 0 {
				t.Errorf("the failed step left %d tables and %d ledger rows, want it rolled back", tables, ledger)
			}
		})
	}
}

// TestHangingMigrationIsContained: a module whose migration never
// finishes must fail like a hanging start() does — bounded, the writer
// released, the other modules started, Start returning (serve calls Start
// before it listens, so a Start that never returns means the admin UI
// never comes up).
func TestHangingMigrationIsContained(t *testing.T) {
	release := make(chan struct{})
	stuck := &testModule{migrations: []sdk.Migration{{Name: "001_forever", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
		select { // honours its ctx: the politest possible hang
		case <-ctx.Done():
			return ctx.Err()
		case <-release:
			return nil
		}
	}}}}
	h, _, coreWrite := realRig(t, []sdk.Spec{spec("stuck", stuck), bystander()})
	t.Cleanup(func() { h.Close(context.Background()) })
	t.Cleanup(func() { close(release) }) // runs first: frees the migration so Close can take the host
	done := make(chan error, 1)
	go func() { done <- h.Start(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Start has not returned 20 s after a migration hung (StartTimeout is 0.3 s): the appliance would never serve")
	}
	if st, _ := h.Module("stuck"); st.State != StateFailed || !strings.Contains(st.Reason, "migrat") {
		t.Errorf("stuck = %s %q, want failed in its migration", st.State, st.Reason)
	}
	if st, _ := h.Module("bystander"); st.State != StateRunning {
		t.Errorf("bystander = %s %q, want running", st.State, st.Reason)
	}
	w := make(chan error, 1)
	go func() { w <- coreWrite() }()
	select {
	case err := <-w:
		if err != nil {
			t.Errorf("core write after the hung migration: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the hung migration still holds the single writer")
	}
}
