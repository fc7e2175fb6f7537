package kimitest

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"golang.org/x/crypto/bcrypt"

	"github.com/kimiapp/kimi/app"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/all"
	"github.com/kimiapp/kimi/modules/sdk"
)

// The seeded guild: its ids are fixed, so a test can write them into
// documents and expectations.
const (
	// GuildID is the seeded guild, active (its server setup is written
	// before the start).
	GuildID = "910000000000000001"
	// ChannelID is its #general, ChannelID2 its #random.
	ChannelID  = "920000000000000001"
	ChannelID2 = "920000000000000002"
	// StaffRoleID is the guild's staff role (Bob has it).
	StaffRoleID = "930000000000000001"
	// AdminUsername and AdminPassword sign in to the admin at URL.
	AdminUsername = config.DefaultAdminUsername
	AdminPassword = "kimitest-admin-password"
)

// DefaultServerSetup is the seeded guild's server setup unless
// WithServerSetup replaces it: Kimi active, StaffRoleID staff.
const DefaultServerSetup = "---\nbot_active: true\nstaff_role_ids: [" + StaffRoleID + "]\n---\n"

// Member is a user of the seeded guild the test acts as.
type Member struct {
	ID, Username, GlobalName string
}

// The seeded members: Ann (a member) and Bob (staff); Cat is a user who
// is not in the guild until Join.
var (
	Ann = Member{ID: "940000000000000001", Username: "ann", GlobalName: "Ann"}
	Bob = Member{ID: "940000000000000002", Username: "bob", GlobalName: "Bob"}
	Cat = Member{ID: "940000000000000003", Username: "cat", GlobalName: "Cat"}
)

// DefaultWait bounds every wait of an appliance (WithWait changes it):
// generous, since a shared CI machine can be slow; a wait returns as soon
// as what it waits for happens.
const DefaultWait = 30 * time.Second

// Option configures Start.
type Option func(*options)

type options struct {
	specs     []sdk.Spec
	bundled   bool
	setup     string
	settings  map[string]string // module → its settings document for GuildID
	wait      time.Duration
	env       map[string]string
	onDiscord func(*fakediscord.Server)
	clock     *Clock
	routes    map[string]netip.AddrPort
	roots     *x509.CertPool
	stall     time.Duration
	provider  bool
	turnClock assistant.Clock
	dataDir   string
}

// WithModules runs the given modules (the author's) on the appliance.
func WithModules(specs ...sdk.Spec) Option {
	return func(o *options) { o.specs = append(o.specs, specs...) }
}

// WithBundled also runs the modules bundled with Kimi (modules/all).
func WithBundled() Option { return func(o *options) { o.bundled = true } }

// WithServerSetup replaces the seeded guild's server setup document
// (DefaultServerSetup), written before the start; "" writes none, so the
// guild is as a fresh install has it: Kimi not active there.
func WithServerSetup(text string) Option { return func(o *options) { o.setup = text } }

// WithModuleSettings writes a module's settings document for the seeded
// guild before the start (SetModuleSettings writes one while it runs).
func WithModuleSettings(module, text string) Option {
	return func(o *options) {
		if o.settings == nil {
			o.settings = map[string]string{}
		}
		o.settings[module] = text
	}
}

// WithWait replaces DefaultWait.
func WithWait(d time.Duration) Option { return func(o *options) { o.wait = d } }

// WithEnv sets more of serve's environment (KIMI_* settings; README
// "Configuration").
func WithEnv(key, value string) Option {
	return func(o *options) {
		if o.env == nil {
			o.env = map[string]string{}
		}
		o.env[key] = value
	}
}

// WithModelStall sets how long the assistant's model client lets a
// stream go silent before it gives the turn up (the default is a
// minute), so a test of a stalled model takes milliseconds.
func WithModelStall(d time.Duration) Option { return func(o *options) { o.stall = d } }

// WithConfiguredProvider makes the assistant use the model provider saved
// in the appliance's settings (the admin's /assistant page: the real
// provider chain, through the egress) instead of the scripted fake model
// that Model returns. A test saves the settings, pointing them at its own
// server on loopback with private addresses allowed.
func WithConfiguredProvider() Option { return func(o *options) { o.provider = true } }

// WithAssistantClock gives the assistant's turns a clock of the test's
// own (their status throttle, idle notice, deadline and tool timings
// move only when it does), so a test can hold a turn at each step.
func WithAssistantClock(c assistant.Clock) Option { return func(o *options) { o.turnClock = c } }

// WithDataDir runs the appliance on dir instead of a fresh directory in
// t.TempDir(): a data directory a test prepared, or one an earlier
// appliance (or release) left. When dir holds no database, a fresh
// migrated one is written there first, with the guild's documents; when it
// holds one, the appliance opens it as serve would (its migrations run).
func WithDataDir(dir string) Option { return func(o *options) { o.dataDir = dir } }

// WithDiscord calls fn with the fake Discord before the bot connects, to
// seed more of it (channels, roles, users, threads). It must not block.
func WithDiscord(fn func(*fakediscord.Server)) Option {
	return func(o *options) { o.onDiscord = fn }
}

// WithControlledClock gives the module host (the modules' durable jobs,
// the scheduled tasks, the appliance's own retention job, and the modules'
// sdk.Runtime.Now) a clock that stands still from the moment of Start
// until Appliance.Advance moves it: a daily job is tested in
// milliseconds. Discord, the admin, the assistant's turns and the log
// keep the real time, and so does a module that reads time.Now itself
// instead of rt.Now: a job it schedules at time.Now().Add(d) is measured
// against the controlled clock.
func WithControlledClock() Option {
	return func(o *options) {
		if o.clock == nil {
			o.clock = &Clock{t: time.Now()}
		}
	}
}

// Clock is the controlled clock of WithControlledClock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *Clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Appliance is a running Kimi: Start returns it; it stops when the test
// ends (or at Stop).
type Appliance struct {
	t       testing.TB
	o       options
	dataDir string
	log     *lockedBuffer

	// docsDue: the documents are to be written at the next start (a
	// fresh data directory); start's goroutine only.
	docsDue bool

	mu    sync.Mutex
	url   string
	fake  *fakediscord.Server
	demo  fakediscord.DemoGuild
	model *llmfake.Server
	parts app.EmbeddedParts
	stop  func()
}

// Start composes and starts the appliance with opts, waits until it is
// ready (the bot connected to the fake Discord, the modules started, the
// admin listening) and registers its stop with t.Cleanup. It fails the
// test (t.Fatal) when the appliance does not come up, with serve's log.
func Start(t testing.TB, opts ...Option) *Appliance {
	t.Helper()
	o := options{setup: DefaultServerSetup, wait: DefaultWait}
	for _, f := range opts {
		f(&o)
	}
	dir := o.dataDir
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "data")
	}
	a := &Appliance{t: t, o: o, dataDir: dir, log: &lockedBuffer{}}
	t.Cleanup(a.reportLog) // the last cleanup: after every stop
	a.seed()
	a.start()
	return a
}

// specs is the registry the appliance runs with: every one of them is
// selected at the first start (demo mode selects the installed modules),
// and the selection is the operator's from then on (SetModuleEnabled).
func (a *Appliance) specs() []sdk.Spec {
	specs := append([]sdk.Spec(nil), a.o.specs...)
	if a.o.bundled {
		specs = append(specs, all.Specs()...)
	}
	return specs
}

// seed prepares the data directory as an operator would have it: a fresh
// one gets the template database (migrated, both privileged intents on,
// the admin); the guild's documents are written when the parts are built
// (writeDocs).
func (a *Appliance) seed() {
	t := a.t
	t.Helper()
	if err := os.MkdirAll(a.dataDir, 0o700); err != nil {
		t.Fatalf("kimitest: %v", err)
	}
	dbFile := filepath.Join(a.dataDir, config.DBFile)
	if _, err := os.Stat(dbFile); err == nil {
		return // a restart: the data is the appliance's own
	}
	data, err := migratedTemplate()
	if err != nil {
		t.Fatalf("kimitest: %v", err)
	}
	if err := os.WriteFile(dbFile, data, 0o600); err != nil {
		t.Fatalf("kimitest: %v", err)
	}
	a.docsDue = true
}

// writeDocs writes the seeded guild's documents through the appliance's
// own guild configuration, before its parts start (the bot's first READY
// sees the guild active); once, at the first start.
func (a *Appliance) writeDocs(guilds *guildcfg.Service) error {
	if !a.docsDue {
		return nil
	}
	a.docsDue = false
	ctx := context.Background()
	actor := guildcfg.Actor{Kind: guildcfg.ActorCLI, Name: "kimitest"}
	if a.o.setup != "" {
		if err := writeDocument(ctx, guilds, GuildSetup(), a.o.setup, actor); err != nil {
			return err
		}
	}
	for module, text := range a.o.settings {
		if err := writeDocument(ctx, guilds, ModuleSettings(module), text, actor); err != nil {
			return err
		}
	}
	return nil
}

// seedDiscord adds the seeded guild to the fake.
func (a *Appliance) seedDiscord(f *fakediscord.Server) {
	f.AddGuild(fakediscord.GuildSpec{ID: GuildID, Name: "kimitest guild"})
	f.AddChannel(fakediscord.ChannelSpec{ID: ChannelID, GuildID: GuildID, Name: "general"})
	f.AddChannel(fakediscord.ChannelSpec{ID: ChannelID2, GuildID: GuildID, Name: "random"})
	f.AddRole(GuildID, discordgo.Role{ID: StaffRoleID, Name: "staff"})
	for _, m := range []Member{Ann, Bob, Cat} {
		f.AddUser(discordgo.User{ID: m.ID, Username: m.Username, GlobalName: m.GlobalName})
	}
	f.AddMember(GuildID, Ann.ID)
	f.AddMember(GuildID, Bob.ID, StaffRoleID)
	if a.o.onDiscord != nil {
		a.o.onDiscord(f)
	}
}

// start runs serve on the data directory until stop.
func (a *Appliance) start() {
	t := a.t
	t.Helper()
	specs := a.specs()
	env := map[string]string{
		"KIMI_DATA_DIR": a.dataDir, "KIMI_ADDR": "127.0.0.1:0", "KIMI_DEMO": "true",
		"KIMI_LOG_LEVEL": "debug",
	}
	for k, v := range a.o.env {
		env[k] = v
	}
	ready := make(chan string, 1)
	docErr := make(chan error, 1)
	ext := app.Extensions{Specs: specs, OnDemoFake: func(f *fakediscord.Server, d fakediscord.DemoGuild) {
		a.mu.Lock()
		a.fake, a.demo = f, d
		a.mu.Unlock()
		a.seedDiscord(f)
	}, OnDemoModel: func(m *llmfake.Server) {
		a.mu.Lock()
		a.model = m
		a.mu.Unlock()
	}}
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	var now func() time.Time
	if a.o.clock != nil {
		now = a.o.clock.Now
	}
	go func() {
		exit <- app.RunEmbedded(ctx, nil, app.EmbeddedOptions{
			Env: env, Stdout: a.log, Stderr: a.log, Ext: ext, Now: now, HTTPRoutes: a.o.routes, HTTPRoots: a.o.roots,
			// discordgo's gateway close sleeps a second: not waited for.
			QuickStop:  true,
			ModelStall: a.o.stall, ConfiguredProvider: a.o.provider,
			AssistantClock: a.o.turnClock,
			OnParts: func(p app.EmbeddedParts) {
				a.mu.Lock()
				a.parts = p
				a.mu.Unlock()
				if err := a.writeDocs(p.Guilds); err != nil {
					docErr <- err
					cancel() // the test fails below
				}
			},
			OnReady: func(url string) { ready <- url },
		})
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case rc := <-exit:
				if rc != app.ExitOK {
					t.Errorf("kimitest: the appliance exited with %d", rc)
				}
			case <-time.After(a.o.wait):
				t.Errorf("kimitest: the appliance did not stop within %s", a.o.wait)
			}
		})
	}
	a.mu.Lock()
	a.stop = stop
	a.mu.Unlock()
	t.Cleanup(stop)
	select {
	case url := <-ready:
		a.mu.Lock()
		a.url = url
		a.mu.Unlock()
	case err := <-docErr:
		t.Fatalf("kimitest: write the seeded guild's documents: %v", err)
	case rc := <-exit:
		exit <- rc
		t.Fatalf("kimitest: the appliance exited with %d before it was ready", rc)
	case <-time.After(a.o.wait):
		t.Fatalf("kimitest: the appliance was not ready within %s", a.o.wait)
	}
	// serve is ready once its parts started; the module host waits for the
	// bot's READY only when a module runs. The bot connected, with the
	// guilds of its READY arrived, is part of Start's promise either way.
	ctx, cancelWait := context.WithTimeout(context.Background(), a.o.wait)
	defer cancelWait()
	if err := a.services().Discord.AwaitReady(ctx); err != nil {
		t.Fatalf("kimitest: the bot did not connect to the fake Discord: %v", err)
	}
}

// Stop stops the appliance now (Start registered it with t.Cleanup too).
func (a *Appliance) Stop() {
	a.mu.Lock()
	stop := a.stop
	a.mu.Unlock()
	stop()
}

// Restart stops the appliance and starts it again on the same data
// directory, with a fresh fake Discord seeded the same way: what the
// modules stored, their jobs and the guild's documents carry over, as
// across a restart of `kimi serve`.
func (a *Appliance) Restart() {
	a.t.Helper()
	a.Stop()
	a.start()
}

// URL is the admin's base URL (sign in with AdminUsername, AdminPassword).
func (a *Appliance) URL() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.url
}

// Discord is the fake Discord, for what the helpers do not cover.
func (a *Appliance) Discord() *fakediscord.Server {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fake
}

// Model is the assistant's model: a scripted fake on loopback
// (llmfake). By default it plays demo mode's script; SetSteps replaces
// it, and Requests shows what the assistant sent (the tools it offered,
// the tool results).
func (a *Appliance) Model() *llmfake.Server {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.model
}

// Demo is the demo guild that demo mode seeds beside the test's own (its
// ids are snowflakes of the run): the guild `kimi serve --demo` shows.
func (a *Appliance) Demo() fakediscord.DemoGuild {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.demo
}

// BotID is the bot user's id.
func (a *Appliance) BotID() string { return a.Discord().BotID() }

// Log is what the appliance logged so far (slog text, debug level).
func (a *Appliance) Log() string { return a.log.String() }

// DataDir is the appliance's data directory (KIMI_DATA_DIR).
func (a *Appliance) DataDir() string { return a.dataDir }

// template is a database with every migration applied, made once per
// test binary: each appliance starts from a copy of its bytes (running
// the migrations is most of a fresh start's cost).
var template struct {
	once sync.Once
	data []byte
	err  error
}

func migratedTemplate() ([]byte, error) {
	template.once.Do(func() {
		template.data, template.err = buildTemplate()
	})
	return template.data, template.err
}

func buildTemplate() ([]byte, error) {
	dir, err := os.MkdirTemp("", "kimitest-template-")
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, config.DBFile)
	st, err := store.Open(ctx, path, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	if _, err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("template: migrate: %w", err)
	}
	// As an operator would have set them on /discord: both privileged
	// intents (message content for the snapshots, members for the cache).
	if err := settings.SaveDiscordIntents(ctx, st, true, true, settings.Actor{Name: "kimitest"}); err != nil {
		st.Close()
		return nil, fmt.Errorf("template: intents: %w", err)
	}
	// The admin, hashed at bcrypt's least cost (serve would spend a
	// quarter of a second on the default one).
	accounts := auth.New(st, slog.New(slog.DiscardHandler), auth.Options{BcryptCost: bcrypt.MinCost})
	if err := accounts.CreateAdmin(ctx, AdminUsername, AdminPassword, "kimitest"); err != nil {
		st.Close()
		return nil, fmt.Errorf("template: the admin: %w", err)
	}
	if err := st.Close(); err != nil { // checkpoints everything into the file
		return nil, fmt.Errorf("template: %w", err)
	}
	return os.ReadFile(path)
}

func mustID(s string) uint64 {
	var id uint64
	if _, err := fmt.Sscan(s, &id); err != nil {
		panic("kimitest: bad id " + s)
	}
	return id
}

// writeDocument replaces target's document with text.
func writeDocument(ctx context.Context, guilds *guildcfg.Service, target guildcfg.Target, text string, actor guildcfg.Actor) error {
	d, err := guilds.Document(ctx, target)
	if err != nil {
		return fmt.Errorf("read %v: %w", target, err)
	}
	if _, err := guilds.Write(ctx, target, text, d.Revision, actor); err != nil {
		return fmt.Errorf("write %v: %w", target, err)
	}
	return nil
}

// logTail is how many of the log's last lines a failed test shows.
const logTail = 40

// reportLog shows a failed test the appliance's log (every run's, across
// restarts): its last lines in the test's output, so that the failure's
// own message stays near the end, and the whole of it in a
// file that outlives the test (keepLog).
func (a *Appliance) reportLog() {
	if !a.t.Failed() {
		return
	}
	log := a.log.String()
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) <= logTail {
		a.t.Logf("kimitest: the appliance's log:\n%s", log)
		return
	}
	path, err := keepLog(a.t.Name(), log)
	if err != nil {
		a.t.Logf("kimitest: keep the appliance's log: %v", err)
		path = "(not kept)"
	}
	a.t.Logf("kimitest: the appliance's log (%d lines, the whole in %s); its last %d:\n%s",
		len(lines), path, logTail, strings.Join(lines[len(lines)-logTail:], "\n"))
}

// keepLog writes a failed test's log to a new file of ArtifactDir.
func keepLog(test, log string) (string, error) {
	return keepArtifact(ArtifactDir(), strings.ReplaceAll(test, "/", "_")+"-kimi-*.log", []byte(log))
}

// ArtifactDir is where a failed test's files are kept: $KIMI_ARTIFACTS,
// default the system's temporary directory's kimi-artifacts. Unlike
// t.ArtifactDir (kept only under go test -artifacts), it outlives the test.
func ArtifactDir() string {
	if dir := os.Getenv("KIMI_ARTIFACTS"); dir != "" {
		return dir
	}
	return filepath.Join(os.TempDir(), "kimi-artifacts")
}

// KeepArtifact writes data — a screenshot, a dump — to a new file of
// ArtifactDir, beside the appliance's log, and logs and returns its path
// ("" when it could not be written, which is logged, not a failure).
// pattern names the file as os.CreateTemp's does: its last "*" is made
// unique, so two failures never share a name.
func KeepArtifact(t testing.TB, pattern string, data []byte) string {
	t.Helper()
	path, err := keepArtifact(ArtifactDir(), pattern, data)
	if err != nil {
		t.Logf("kimitest: keep %s: %v", pattern, err)
		return ""
	}
	t.Logf("kimitest: kept %s", path)
	return path
}

func keepArtifact(dir, pattern string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

// lockedBuffer is the appliance's log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
