package host

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/modstore"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// openStore opens and migrates a real SQLite file in a temp dir.
func openStore(t testing.TB) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return st
}

// logs captures records with their attributes (module=…, component=…).
type logs struct {
	mu   sync.Mutex
	recs []string
}

type logHandler struct {
	l     *logs
	attrs []slog.Attr
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	for _, a := range h.attrs {
		b.WriteString(a.String() + " ")
	}
	b.WriteString("msg=" + r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	h.l.mu.Lock()
	h.l.recs = append(h.l.recs, b.String())
	h.l.mu.Unlock()
	return nil
}
func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logHandler{l: h.l, attrs: append(slices.Clone(h.attrs), as...)}
}
func (h *logHandler) WithGroup(string) slog.Handler { return h }

// has reports whether a record contains every part.
func (l *logs) has(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		ok := true
		for _, p := range parts {
			if !strings.Contains(r, p) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// memStorage is a small in-test storage factory (the real one is
// app/modstore): it records migrations and hands out ports.
type memStorage struct {
	mu       sync.Mutex
	migrated []string
	fail     map[string]error
}

func (m *memStorage) Migrate(ctx context.Context, module string, perms sdk.Permissions, migs []sdk.Migration) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail[module]; err != nil {
		return nil, err
	}
	m.migrated = append(m.migrated, module)
	var names []string
	for _, mg := range migs {
		names = append(names, mg.Name)
	}
	return names, nil
}

func (m *memStorage) Open(ctx context.Context, module string, perms sdk.Permissions) (storagePort, error) {
	return &memPort{module: module}, nil
}

func (m *memStorage) wasMigrated(module string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.migrated, module)
}

type memPort struct {
	module string
	closed bool
}

func (p *memPort) Table(name string) string { return hostkit.MustTableName(p.module, name) }
func (p *memPort) Reader() *sql.DB          { return nil }
func (p *memPort) WriteTx(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	return fn(ctx, nil)
}
func (p *memPort) Raw() *sql.DB { return nil }
func (p *memPort) Stats() modstore.WriteStats {
	return modstore.WriteStats{Writes: 3, WaitMax: 2 * time.Millisecond}
}
func (p *memPort) Close() error { p.closed = true; return nil }

// memBus is a small in-test event bus: Publish delivers synchronously to
// matching subscriptions and reports failures like the real bus does.
type memBus struct {
	mu     sync.Mutex
	subs   []*memSub
	report func(module, topic string, err error)
}

type memSub struct {
	module, pattern string
	handler         sdk.EventHandler
	ctx             context.Context
	closed          bool
}

func (b *memBus) Module(ctx context.Context, module string, perms sdk.Permissions, guildActive func(uint64) bool) eventsPort {
	return &memModuleBus{b: b, module: module, perms: perms, ctx: ctx}
}

type memModuleBus struct {
	b      *memBus
	module string
	perms  sdk.Permissions
	ctx    context.Context
	closed bool
}

func (m *memModuleBus) Publish(topic string, payload any) error {
	if err := hostkit.ValidatePublishTopic(m.module, topic); err != nil {
		return err
	}
	m.b.mu.Lock()
	subs := slices.Clone(m.b.subs)
	m.b.mu.Unlock()
	for _, s := range subs {
		if s.closed || !hostkit.MatchTopic(s.pattern, topic) {
			continue
		}
		err := call(s.ctx, func(ctx context.Context) error {
			return s.handler(ctx, sdk.Event{Topic: topic, Payload: payload, SourceModule: m.module, PublishedAt: time.Now()})
		})
		if err != nil && m.b.report != nil {
			m.b.report(s.module, topic, err)
		}
	}
	return nil
}

func (m *memModuleBus) Subscribe(pattern string, handler sdk.EventHandler) (sdk.Registration, error) {
	if err := hostkit.ValidateSubscription(m.module, m.perms, pattern); err != nil {
		return nil, err
	}
	s := &memSub{module: m.module, pattern: pattern, handler: handler, ctx: m.ctx}
	m.b.mu.Lock()
	m.b.subs = append(m.b.subs, s)
	m.b.mu.Unlock()
	return registration(func() { s.closed = true }), nil
}

func (m *memModuleBus) Stats() events.Stats { return events.Stats{} }
func (m *memModuleBus) Close(time.Duration) {
	m.b.mu.Lock()
	defer m.b.mu.Unlock()
	for _, s := range m.b.subs {
		if s.module == m.module {
			s.closed = true
		}
	}
}

// rig is a host on a real store and guild configuration with in-test
// storage and events.
type rig struct {
	h       *Host
	st      *store.Store
	guilds  *guildcfg.Service
	storage *memStorage
	bus     *memBus
	logs    *logs
}

type rigOption func(*Options)

func withEnv(env map[string]string) rigOption {
	return func(o *Options) { o.Getenv = func(k string) string { return env[k] } }
}

func withCaps(names ...string) rigOption {
	return func(o *Options) { c := sdk.NewCapabilities(names, false, false); o.caps = &c }
}

func withSelection(names ...string) rigOption {
	return func(o *Options) { o.Selection, o.SelectionSet = names, true }
}

// newRig builds (not starts) a host over specs; with no selection option
// every spec is selected through KIMI_MODULES. Bounds are short so a hung
// module is given up quickly; no assertion depends on them.
func newRig(t *testing.T, specs []sdk.Spec, opts ...rigOption) *rig {
	t.Helper()
	st := openStore(t)
	l := &logs{}
	root := slog.New(&logHandler{l: l})
	guilds, err := guildcfg.New(context.Background(), st, guildcfg.Options{Modules: specs, Logger: root})
	if err != nil {
		t.Fatalf("guildcfg.New: %v", err)
	}
	t.Cleanup(guilds.Close)
	r := &rig{st: st, guilds: guilds, storage: &memStorage{fail: map[string]error{}}, bus: &memBus{}, logs: l}
	o := Options{
		Specs: specs, Store: st, Guilds: guilds, Logger: root,
		StartTimeout: 300 * time.Millisecond, CloseTimeout: 300 * time.Millisecond,
		CancelGrace: 100 * time.Millisecond, CallbackTimeout: 300 * time.Millisecond,
		storage: r.storage, events: r.bus,
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	o.Selection, o.SelectionSet = names, true
	for _, opt := range opts {
		opt(&o)
	}
	h, err := New(context.Background(), o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.bus.report = h.onHandlerFailure
	r.h = h
	t.Cleanup(func() { h.Close(context.Background()) })
	return r
}

func (r *rig) start(t *testing.T) {
	t.Helper()
	if err := r.h.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

func (r *rig) status(t *testing.T, name string) ModuleStatus {
	t.Helper()
	st, ok := r.h.Module(name)
	if !ok {
		t.Fatalf("no module %s", name)
	}
	return st
}

// activate writes a guild's server-setup document with bot_active: true.
func (r *rig) activate(t *testing.T, guildID uint64) {
	t.Helper()
	r.write(t, guildcfg.GuildTarget(guildID), "---\nbot_active: true\n---\n")
}

func (r *rig) write(t *testing.T, target guildcfg.Target, text string) {
	t.Helper()
	doc, err := r.guilds.Document(context.Background(), target)
	if err != nil {
		t.Fatalf("Document: %v", err)
	}
	if _, err := r.guilds.Write(context.Background(), target, text, doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI}); err != nil {
		t.Fatalf("Write %s: %v", target, err)
	}
}

// eventually polls cond up to a generous bound (never a timed assertion:
// only a bound on waiting for something that must happen).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testModule is a configurable module for lifecycle and fault tests.
type testModule struct {
	migrations []sdk.Migration
	start      func(ctx context.Context, rt *sdk.Runtime) error
	close      func(ctx context.Context) error
	mu         sync.Mutex
	rt         *sdk.Runtime
	closed     int
}

func (m *testModule) Migrations() []sdk.Migration { return m.migrations }
func (m *testModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	m.mu.Lock()
	m.rt = rt
	m.mu.Unlock()
	if m.start != nil {
		return m.start(ctx, rt)
	}
	return nil
}
func (m *testModule) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed++
	m.mu.Unlock()
	if m.close != nil {
		return m.close(ctx)
	}
	return nil
}
func (m *testModule) runtime() *sdk.Runtime { m.mu.Lock(); defer m.mu.Unlock(); return m.rt }

// spec builds a minimal valid spec whose Create returns mod.
func spec(name string, mod sdk.Module, edit ...func(*sdk.Spec)) sdk.Spec {
	s := sdk.Spec{Name: name, Version: "1.0", APIVersion: sdk.APIVersion,
		Create: func(sdk.LoadContext) (sdk.Module, error) { return mod, nil }}
	for _, e := range edit {
		e(&s)
	}
	return s
}

func timeNow() time.Time { return time.Now() }

// waitLong is a generous bound for something that must happen.
func waitLong() <-chan time.Time { return time.After(10 * time.Second) }

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
