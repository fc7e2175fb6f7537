package e2e

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/kimitest"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Kimi's own end-to-end tests run the composed appliance on kimitest, the
// public harness module authors use: `kimi serve --demo` in-process on
// its built-in fake Discord, seeded with kimitest's guild and the more
// these tests add (e2eSeed). The helpers below only name kimitest's parts
// as these tests use them.

// e2eWait bounds every wait (generous: the machine is shared).
const e2eWait = 60 * time.Second

// The test guilds' fixed ids: kimitest's seeded guild, and one more that
// is never activated.
const (
	e2eGuild     = kimitest.GuildID     // active (kimitest's server setup)
	e2eChannel   = kimitest.ChannelID   // its #general
	e2eSlowChan  = kimitest.ChannelID2  // its #random (rate-limit waits)
	e2eStaffRole = kimitest.StaffRoleID // Bob's
	e2eOther     = "410000000000000002" // inactive
	e2eOtherChan = "420000000000000003" // #general of e2eOther
)

// The members: Ann, and Bob (staff).
var (
	e2eAnn = kimitest.Ann.ID
	e2eBob = kimitest.Bob.ID
)

// e2eGuildDoc is e2eGuild's server setup: active, Bob's role is staff.
const e2eGuildDoc = kimitest.DefaultServerSetup

// e2eSeed adds to kimitest's guild what the default seed of these tests
// has: e2eOther (never activated), with Ann in it.
func e2eSeed(f *fakediscord.Server) {
	f.AddGuild(fakediscord.GuildSpec{ID: e2eOther, Name: "other guild"})
	f.AddChannel(fakediscord.ChannelSpec{ID: e2eOtherChan, GuildID: e2eOther, Name: "general"})
	f.AddMember(e2eOther, e2eAnn)
}

type e2eOptions struct {
	specs   []sdk.Spec
	modules string                      // KIMI_MODULES ("": unset: demo mode's first start selects every spec)
	docs    map[guildcfg.Target]string  // e2eGuild's documents (none: no server setup)
	seed    func(f *fakediscord.Server) // more of the fake (nil: e2eSeed)
	dataDir string                      // "": a fresh one
	env     map[string]string           // more of serve's environment
	stall   time.Duration               // the model client's stall timeout (0: the default)
	// configuredProvider: the assistant uses the provider saved on
	// /assistant (the real llm.Chain), not the demo model.
	configuredProvider bool
	clock              assistant.Clock // the assistant's turns' clock (nil: the wall clock)
}

// e2eApp is a running appliance.
type e2eApp struct {
	*kimitest.Appliance
	t *testing.T
}

func startE2E(t *testing.T, o e2eOptions) *e2eApp {
	t.Helper()
	opts := []kimitest.Option{kimitest.WithModules(o.specs...), kimitest.WithWait(e2eWait), kimitest.WithServerSetup("")}
	guild := guildcfg.GuildTarget(e2eID(t, e2eGuild))
	for target, text := range o.docs {
		switch {
		case target == guild:
			opts = append(opts, kimitest.WithServerSetup(text))
		case target.GuildID == guild.GuildID && target.Module != "":
			opts = append(opts, kimitest.WithModuleSettings(target.Module, text))
		default:
			t.Fatalf("a document for %v: only e2eGuild's are seeded", target)
		}
	}
	seed := o.seed
	if seed == nil {
		seed = e2eSeed
	}
	opts = append(opts, kimitest.WithDiscord(seed))
	if o.modules != "" {
		opts = append(opts, kimitest.WithEnv("KIMI_MODULES", o.modules))
	}
	for k, v := range o.env {
		opts = append(opts, kimitest.WithEnv(k, v))
	}
	if o.dataDir != "" {
		opts = append(opts, kimitest.WithDataDir(o.dataDir))
	}
	if o.stall > 0 {
		opts = append(opts, kimitest.WithModelStall(o.stall))
	}
	if o.configuredProvider {
		opts = append(opts, kimitest.WithConfiguredProvider())
	}
	if o.clock != nil {
		opts = append(opts, kimitest.WithAssistantClock(o.clock))
	}
	return &e2eApp{Appliance: kimitest.Start(t, opts...), t: t}
}

// e2eClient is the operator's browser without JavaScript.
type e2eClient struct {
	*kimitest.Admin
	a *e2eApp
}

func (a *e2eApp) signIn() *e2eClient { a.t.Helper(); return &e2eClient{Admin: a.Admin(), a: a} }

func (c *e2eClient) get(path string) (int, string) { c.a.t.Helper(); return c.Get(path) }

func (c *e2eClient) post(path string, form url.Values) (int, string, string) {
	c.a.t.Helper()
	return c.Post(path, form)
}

// waitPage polls a page until its body contains every part.
func (c *e2eClient) waitPage(what, path string, parts ...string) string {
	c.a.t.Helper()
	c.a.t.Logf("waiting for %s", what)
	return c.WaitPage(path, parts...)
}

// waitConnected waits until /discord shows the bot in the test guild, and
// the modules' global commands are registered.
func (a *e2eApp) waitConnected(c *e2eClient, commands ...string) {
	a.t.Helper()
	c.waitPage("the bot connected", "/discord", `data-state="connected"`, `data-testid="discord-guild-`+e2eGuild+`"`)
	a.WaitFor("the global commands "+strings.Join(commands, ", "), func() bool {
		have := map[string]bool{}
		for _, cmd := range a.Discord().Commands("") {
			have[cmd.Name] = true
		}
		for _, n := range commands {
			if !have[n] {
				return false
			}
		}
		return true
	})
}

// answered waits for an interaction's first callback.
func (a *e2eApp) answered(id string) *fakediscord.InteractionState {
	a.t.Helper()
	return a.WaitResponse(id)
}

// e2eModule is a test module: it records the discord.message* events it
// gets and registers what start adds.
type e2eModule struct {
	start  func(rt *sdk.Runtime) error
	events chan sdk.Event

	mu sync.Mutex
	rt *sdk.Runtime
}

func (m *e2eModule) Migrations() []sdk.Migration { return nil }
func (m *e2eModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	m.mu.Lock()
	m.rt = rt
	m.mu.Unlock()
	for _, topic := range []string{sdk.TopicMessage, sdk.TopicMessageEdit, sdk.TopicMessageDelete} {
		if _, err := rt.Events.Subscribe(topic, func(_ context.Context, ev sdk.Event) error {
			m.events <- ev
			return nil
		}); err != nil {
			return err
		}
	}
	if m.start != nil {
		return m.start(rt)
	}
	return nil
}
func (m *e2eModule) Close(context.Context) error { return nil }
func (m *e2eModule) runtime() *sdk.Runtime       { m.mu.Lock(); defer m.mu.Unlock(); return m.rt }

// e2eModuleName is the test module's name.
const e2eModuleName = "e2e"

func newE2EModule() *e2eModule { return &e2eModule{events: make(chan sdk.Event, 1024)} }

func (m *e2eModule) spec() sdk.Spec {
	return sdk.Spec{Name: e2eModuleName, Version: "1.0", APIVersion: sdk.APIVersion,
		Create: func(sdk.LoadContext) (sdk.Module, error) { return m, nil },
		Permissions: sdk.Permissions{
			EventTopics:    []string{sdk.TopicMessage, sdk.TopicMessageEdit, sdk.TopicMessageDelete},
			DiscordActions: []sdk.DiscordAction{sdk.ActionSendMessage},
		},
		Commands: []string{"ping", "slow"}, // e2eInteractionsModule's
	}
}

// next returns the next event the module got, failing after e2eWait.
func (m *e2eModule) next(t *testing.T, what string) sdk.Event {
	t.Helper()
	select {
	case ev := <-m.events:
		return ev
	case <-time.After(e2eWait):
		t.Fatalf("the module got no %s", what)
	}
	return sdk.Event{}
}
