package host

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

// realRig is a host on the real module storage and event bus (newRig
// swaps both for fakes), with short lifecycle bounds.
func realRig(t *testing.T, specs []sdk.Spec) (*Host, *logs, func() error) {
	t.Helper()
	st := openStore(t)
	l := &logs{}
	root := slog.New(&logHandler{l: l})
	guilds, err := guildcfg.New(context.Background(), st, guildcfg.Options{Modules: specs, Logger: root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(guilds.Close)
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	h, err := New(context.Background(), Options{
		Specs: specs, Store: st, Guilds: guilds, Logger: root, Selection: names, SelectionSet: true,
		StartTimeout: 300 * time.Millisecond, CloseTimeout: 300 * time.Millisecond,
		CancelGrace: 100 * time.Millisecond, CallbackTimeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h, l, func() error { return st.SetSetting(context.Background(), "probe", "x") }
}

// TestAudit9HangingMigrationIsContained (audit of issue 9): a module whose
// migration never finishes must fail like a hanging start() does — bounded,
// the writer released, the other modules started, Start returning (serve
// calls Start before it listens, so a Start that never returns means the
// admin UI never comes up).
func TestAudit9HangingMigrationIsContained(t *testing.T) {
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
