package host

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// gcDiscord is a host.Discord recording guild syncs; fail makes them fail.
type gcDiscord struct {
	mu      sync.Mutex
	synced  []uint64
	changed int
	fail    error
}

func (d *gcDiscord) Actions(string) sdk.DiscordActions { return nil }
func (d *gcDiscord) Tier(context.Context, uint64, uint64) (sdk.TrustTier, error) {
	return sdk.TierMember, nil
}
func (d *gcDiscord) CommandsChanged() { d.mu.Lock(); d.changed++; d.mu.Unlock() }
func (d *gcDiscord) SyncGuildCommands(ctx context.Context, guildID uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.synced = append(d.synced, guildID)
	return d.fail
}

// TestReplaceGuildCommands: a guild set is checked, staged (routed only in
// its guild), recorded and pushed live; a failed push is a
// *sdk.CommandSyncError and the previous set stays; the capability is
// required; AddCommand and module close tell Discord the commands changed.
func TestReplaceGuildCommands(t *testing.T) {
	mod := &testModule{}
	d := &gcDiscord{}
	r := newRig(t, []sdk.Spec{spec("demo", mod, func(s *sdk.Spec) { s.Commands = []string{"global"} })}, withCaps(sdk.CapDiscordGuildCommands), func(o *Options) { o.Discord = d })
	r.start(t)
	r.activate(t, 7)
	r.activate(t, 8)
	ix := mod.runtime().Interactions
	ctx := context.Background()
	ran := ""
	cmd := func(name string) sdk.GuildCommand {
		return sdk.GuildCommand{Spec: sdk.CommandSpec{Name: name, Description: "d", MinTier: sdk.TierMember},
			Handler: func(context.Context, sdk.Interaction) error { ran = name; return nil }}
	}
	if err := ix.ReplaceGuildCommands(ctx, 7, []sdk.GuildCommand{cmd("local")}); err != nil {
		t.Fatalf("ReplaceGuildCommands: %v", err)
	}
	if len(d.synced) != 1 || d.synced[0] != 7 {
		t.Fatalf("synced = %v, want [7]", d.synced)
	}
	if specs := r.h.GuildCommands(7); len(specs) != 1 || specs[0].Name != "local" {
		t.Fatalf("GuildCommands(7) = %+v", specs)
	}
	if gs, err := r.h.CommandGuilds(ctx); err != nil || len(gs) != 1 || gs[0] != 7 {
		t.Fatalf("CommandGuilds = %v, %v", gs, err)
	}
	if err := r.h.RunCommand(ctx, "local", sdk.TierMember, gcIn{guild: 7}); err != nil || ran != "local" {
		t.Fatalf("guild command in its guild: %v (ran %q)", err, ran)
	}
	if err := r.h.RunCommand(ctx, "local", sdk.TierMember, gcIn{guild: 8}); !errors.Is(err, ErrNoHandler) {
		t.Fatalf("guild command in another guild = %v, want ErrNoHandler", err)
	}

	d.fail = errors.New("400 invalid form body")
	err := ix.ReplaceGuildCommands(ctx, 7, []sdk.GuildCommand{cmd("other")})
	var se *sdk.CommandSyncError
	if !errors.As(err, &se) || !errors.Is(err, d.fail) {
		t.Fatalf("failed live sync = %v, want *sdk.CommandSyncError wrapping the cause", err)
	}
	if specs := r.h.GuildCommands(7); len(specs) != 1 || specs[0].Name != "local" {
		t.Fatalf("after a failed sync GuildCommands(7) = %+v, want the previous set", specs)
	}
	d.fail = ErrDiscordNotConnected
	if err := ix.ReplaceGuildCommands(ctx, 7, nil); err != nil {
		t.Fatalf("empty set while not connected = %v, want staged", err)
	}
	if specs := r.h.GuildCommands(7); len(specs) != 0 {
		t.Fatalf("after removal GuildCommands(7) = %+v", specs)
	}
	if gs, _ := r.h.CommandGuilds(ctx); len(gs) != 1 {
		t.Fatalf("the recorded guild must stay until a sync clears it: %v", gs)
	}
	if err := r.h.GuildCommandsSynced(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if gs, _ := r.h.CommandGuilds(ctx); len(gs) != 0 {
		t.Fatalf("after the sync CommandGuilds = %v, want none", gs)
	}

	before := d.changed
	reg, err := ix.AddCommand(sdk.CommandSpec{Name: "global", Description: "d"}, func(context.Context, sdk.Interaction) error { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.ReplaceGuildCommands(ctx, 8, []sdk.GuildCommand{cmd("global")}); err == nil {
		t.Fatal("a guild command shadowing a global one was accepted")
	}
	reg.Close()
	if d.changed != before+2 {
		t.Fatalf("CommandsChanged calls = %d, want %d (add and close)", d.changed, before+2)
	}

	bare := &testModule{}
	r2 := newRig(t, []sdk.Spec{spec("bare", bare)}, func(o *Options) { o.Discord = d })
	r2.start(t)
	if err := bare.runtime().Interactions.ReplaceGuildCommands(ctx, 7, nil); err == nil || err.Error() != "the host does not provide required capability 'discord.guild_commands.v1'" {
		t.Fatalf("without the capability = %v", err)
	}
}

// TestRunComponentOutcomes: expired (and then unregistered), unavailable
// after close, the tier error's minimum.
func TestRunComponentOutcomes(t *testing.T) {
	mod := &testModule{}
	r := newRig(t, []sdk.Spec{spec("demo", mod)})
	r.start(t)
	r.activate(t, 7)
	ix := mod.runtime().Interactions
	ok := func(context.Context, sdk.Interaction) error { return nil }
	if _, err := ix.RegisterComponent(sdk.ComponentButton, "short", ok, sdk.ComponentOptions{ExpiresAfter: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.RegisterComponent(sdk.ComponentButton, "staff", ok, sdk.ComponentOptions{MinTier: sdk.TierStaff}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func(key string, guild uint64) error {
		return r.h.RunComponent(ctx, sdk.ComponentButton, sdk.TierMember, gcIn{guild: guild, custom: "m:demo:" + key})
	}
	if err := run("short", 7); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired = %v", err)
	}
	if err := run("short", 7); !errors.Is(err, ErrNoHandler) {
		t.Fatalf("after expiry = %v, want ErrNoHandler", err)
	}
	var te *TierError
	if err := run("staff", 7); !errors.As(err, &te) || te.MinTier != sdk.TierStaff || !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("below min tier = %v", err)
	}
	if err := run("staff", 0); !errors.As(err, &te) {
		t.Fatalf("in a DM = %v, want a TierError", err)
	}
	mod.runtime() // still registered while running; now make it unavailable
	entry := r.h.entries["demo"]
	entry.inst.runningFlag.Store(false)
	if err := run("staff", 7); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("module not running = %v, want ErrUnavailable", err)
	}
	entry.inst.runningFlag.Store(true)
}

type gcIn struct {
	fakeInteraction
	guild  uint64
	custom string
}

func (g gcIn) GuildID() uint64  { return g.guild }
func (g gcIn) CustomID() string { return g.custom }

// readyDiscord is a gcDiscord that can sync the commands at once.
type readyDiscord struct {
	gcDiscord
	ready int
}

func (d *readyDiscord) CommandsReady() { d.mu.Lock(); d.ready++; d.mu.Unlock() }

// TestStartTellsDiscordTheCommandsAreReady: once Start has started every
// module, a connection that can sync at once (CommandsReadier) is told so,
// once, instead of being left to CommandsChanged's debounce; one that
// cannot is told the commands changed.
func TestStartTellsDiscordTheCommandsAreReady(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready bool
	}{{"a connection that syncs at once", true}, {"one that only debounces", false}} {
		t.Run(tc.name, func(t *testing.T) {
			mod := &testModule{}
			rd := &readyDiscord{}
			var d Discord = &rd.gcDiscord
			if tc.ready {
				d = rd
			}
			r := newRig(t, []sdk.Spec{spec("demo", mod)}, func(o *Options) { o.Discord = d })
			r.start(t)
			rd.mu.Lock()
			defer rd.mu.Unlock()
			switch {
			case tc.ready && rd.ready != 1:
				t.Fatalf("CommandsReady called %d times, want once", rd.ready)
			case !tc.ready && rd.changed == 0:
				t.Fatal("CommandsChanged never called after the start")
			}
		})
	}
}
