package discord

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// ixClock is a settable clock for the fake (its interaction deadline).
type ixClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *ixClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *ixClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// ixModule is a module whose Start registers what the test gives it.
type ixModule struct {
	start func(rt *sdk.Runtime) error
	mu    sync.Mutex
	rt    *sdk.Runtime
}

func (m *ixModule) Migrations() []sdk.Migration { return nil }
func (m *ixModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	m.mu.Lock()
	m.rt = rt
	m.mu.Unlock()
	if m.start != nil {
		return m.start(rt)
	}
	return nil
}
func (m *ixModule) Close(context.Context) error { return nil }
func (m *ixModule) runtime() *sdk.Runtime       { m.mu.Lock(); defer m.mu.Unlock(); return m.rt }

// ixWorld is a fake Discord with one active guild (alice a member, bob
// staff through the mod role), a real store, guild configuration and module
// host running mod as module "demo", and the interactions area on a real
// discordgo session.
type ixWorld struct {
	f                       *fakediscord.Server
	clock                   *ixClock
	st                      *store.Store
	h                       *host.Host
	x                       *interactions
	s                       *discordgo.Session
	guild, text, alice, bob string
	mod                     *ixModule
}

type ixOptions struct {
	deadline  time.Duration // the fake's InteractionDeadline
	autoDefer time.Duration // 0: 50 ms
	debounce  time.Duration // 0: 50 ms
	noOpen    bool
	// more are further modules by name; caps replace the host's advertised
	// capabilities; timer drives the debounce by hand.
	more  map[string]*ixModule
	caps  []string
	timer *ixTimer
	// dispatched receives each interaction's id when its dispatch is over.
	dispatched chan string
}

// ixTimer is a hand-driven afterFunc: nothing fires until fire.
type ixTimer struct {
	mu      sync.Mutex
	pending []*ixPending
}

type ixPending struct {
	t       *ixTimer
	f       func()
	stopped bool
}

func (p *ixPending) Stop() bool {
	p.t.mu.Lock()
	defer p.t.mu.Unlock()
	was := !p.stopped
	p.stopped = true
	return was
}

func (t *ixTimer) afterFunc(_ time.Duration, f func()) stopper {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := &ixPending{t: t, f: f}
	t.pending = append(t.pending, p)
	return p
}

// fire runs every timer not stopped (each once) and returns how many ran.
func (t *ixTimer) fire() int {
	t.mu.Lock()
	var run []func()
	for _, p := range t.pending {
		if !p.stopped {
			p.stopped = true
			run = append(run, p.f)
		}
	}
	t.pending = nil
	t.mu.Unlock()
	for _, f := range run {
		f()
	}
	return len(run)
}

func newIxWorld(t *testing.T, mod *ixModule, o ixOptions) *ixWorld {
	t.Helper()
	ctx := context.Background()
	w := &ixWorld{clock: &ixClock{t: time.Now()}, mod: mod}
	w.f = newFake(t, fakediscord.Options{InteractionDeadline: o.deadline, Now: w.clock.now})
	w.guild = w.f.AddGuild(fakediscord.GuildSpec{Name: "test guild"}).ID
	w.text = w.f.AddChannel(fakediscord.ChannelSpec{GuildID: w.guild, Name: "general"}).ID
	w.alice = w.f.AddUser(discordgo.User{Username: "alice"}).ID
	w.bob = w.f.AddUser(discordgo.User{Username: "bob"}).ID
	modRole := w.f.AddRole(w.guild, discordgo.Role{Name: "mod"}).ID
	w.f.AddMember(w.guild, w.alice)
	w.f.AddMember(w.guild, w.bob, modRole)

	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	w.st = st
	specs := []sdk.Spec{{Name: "demo", Version: "1.0", APIVersion: sdk.APIVersion,
		Create: func(sdk.LoadContext) (sdk.Module, error) { return mod, nil },
		// Every command the tests' demo module registers: it owns them.
		Commands: []string{"kudos", "note", "twice", "staffonly", "slow", "later", "one", "two", "three", "gone", "count", "tag",
			"explode", "crash", "form", "afterdefer"}}}
	selection := []string{"demo"}
	for name, m := range o.more {
		specs = append(specs, sdk.Spec{Name: name, Version: "1.0", APIVersion: sdk.APIVersion,
			Create: func(sdk.LoadContext) (sdk.Module, error) { return m, nil }})
		selection = append(selection, name)
	}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Modules: specs, Logger: slog.New(slog.DiscardHandler),
		Trust: guildcfg.TrustSettings{StaffRoleIDs: []uint64{parseID(modRole)}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(guilds.Close)
	target := guildcfg.GuildTarget(parseID(w.guild))
	doc, err := guilds.Document(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guilds.Write(ctx, target, "---\nbot_active: true\n---\n", doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI}); err != nil {
		t.Fatal(err)
	}

	src := newTestSource(w.f, nil)
	w.x = newInteractions(slog.New(slog.DiscardHandler), src, guilds, st)
	w.x.autoDeferAfter, w.x.debounce = cmpDur(o.autoDefer, 50*time.Millisecond), cmpDur(o.debounce, 50*time.Millisecond)
	if o.timer != nil {
		w.x.afterFunc = o.timer.afterFunc
	}
	if o.dispatched != nil {
		w.x.dispatched = func(id string) { o.dispatched <- id }
	}
	var caps *sdk.Capabilities
	if o.caps != nil {
		c := sdk.NewCapabilities(o.caps, false, false)
		caps = &c
	}
	t.Cleanup(w.x.close)
	w.h, err = host.New(ctx, host.Options{Specs: specs, Store: st, Guilds: guilds, Logger: slog.New(slog.DiscardHandler),
		Selection: selection, SelectionSet: true, Discord: ixDiscord{w.x}, CallbackTimeout: 30 * time.Second, Capabilities: caps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.h.Close(context.Background()) })
	if err := w.h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	w.x.attach(w.h)
	if !o.noOpen {
		w.open(t)
	}
	return w
}

// open connects a (new) session: a READY.
func (w *ixWorld) open(t *testing.T) {
	t.Helper()
	s := openSession(t, w.f, discordgo.IntentsGuilds, w.x.handlers()...)
	src := w.x.src.(*testSource)
	src.mu.Lock()
	src.s = s
	src.mu.Unlock()
	w.s = s
}

func cmpDur(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// ixDiscord is host.Discord over the interactions area alone (the other
// areas are not under test here).
type ixDiscord struct{ x *interactions }

func (d ixDiscord) Actions(string) sdk.DiscordActions { return nil }
func (d ixDiscord) Tier(context.Context, uint64, uint64) (sdk.TrustTier, error) {
	return sdk.TierMember, nil
}
func (d ixDiscord) CommandsChanged() { d.x.commandsChanged() }
func (d ixDiscord) SyncGuildCommands(ctx context.Context, guildID uint64) error {
	return d.x.syncGuild(ctx, guildID)
}

var _ host.Discord = ixDiscord{}

// ixEventually polls cond up to a generous bound (not a timed assertion).
func ixEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ixAnswered waits for an interaction's first callback and returns its state.
func ixAnswered(t *testing.T, f *fakediscord.Server, id string) *fakediscord.InteractionState {
	t.Helper()
	var st *fakediscord.InteractionState
	ixEventually(t, "interaction "+id+" answered", func() bool {
		st = f.Interaction(id)
		return st != nil && st.Response != nil
	})
	return st
}

const globalPUT = "PUT /applications/{app}/commands"
