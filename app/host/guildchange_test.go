package host

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

// withGuildSettings gives a spec a guild-settings schema (so it gets
// OnChange callbacks).
func withGuildSettings(s *sdk.Spec) {
	s.GuildSettings = &sdk.GuildSettingsSchema{InvalidPolicy: sdk.DisableModule, Fields: []sdk.GuildSettingField{{Name: "n", Kind: sdk.GuildSettingInt, Default: 1}}}
}

// onChangeModule registers fn as its OnChange callback at start.
func onChangeModule(fn func(ctx context.Context, guildID uint64)) *testModule {
	return &testModule{start: func(ctx context.Context, rt *sdk.Runtime) error {
		rt.GuildSettings.OnChange(fn)
		return nil
	}}
}

// TestGuildChangeHangingModuleDelaysOnlyItself: a module whose OnChange
// never returns (and ignores cancellation; the bound here is an hour) does
// not hold up another module's callbacks, nor the delivery of the change.
func TestGuildChangeHangingModuleDelaysOnlyItself(t *testing.T) {
	release := make(chan struct{})
	hung := onChangeModule(func(context.Context, uint64) { <-release })
	var mu sync.Mutex
	var seen []uint64
	quick := onChangeModule(func(_ context.Context, g uint64) { mu.Lock(); seen = append(seen, g); mu.Unlock() })
	r := newRig(t, []sdk.Spec{spec("hung", hung, withGuildSettings), spec("quick", quick, withGuildSettings)},
		func(o *Options) { o.CallbackTimeout, o.CancelGrace = time.Hour, time.Hour })
	t.Cleanup(func() { close(release) })
	for _, g := range []uint64{1, 2, 3} {
		r.activate(t, g)
	}
	r.start(t)
	done := make(chan struct{})
	go func() { r.h.onGuildChange(guildcfg.Change{Resync: true}); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the change's delivery waits on the hanging module")
	}
	eventually(t, "quick notified for guilds 1, 2, 3", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(seen, 1) && slices.Contains(seen, 2) && slices.Contains(seen, 3)
	})
}

// TestGuildChangeBatchIsBounded: one change's callbacks over many guilds
// share one CallbackTimeout bound (not one per guild): the guilds left
// when it expires are skipped and the module's health says so.
func TestGuildChangeBatchIsBounded(t *testing.T) {
	var calls atomic.Int32
	slow := onChangeModule(func(ctx context.Context, _ uint64) { calls.Add(1); <-ctx.Done() })
	r := newRig(t, []sdk.Spec{spec("slow", slow, withGuildSettings)})
	for _, g := range []uint64{1, 2, 3, 4, 5} {
		r.activate(t, g)
	}
	r.start(t)
	r.h.onGuildChange(guildcfg.Change{Resync: true})
	eventually(t, "slow degraded for the skipped guilds", func() bool {
		st := r.status(t, "slow")
		return st.Health.State == sdk.HealthDegraded && strings.Contains(st.Health.Detail, "guilds not notified")
	})
	if n := calls.Load(); n >= 5 {
		t.Errorf("OnChange ran for %d of 5 guilds past the change's bound", n)
	}
}
