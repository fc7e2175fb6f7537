package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/sdk"
)

// The /discord page against the harness's real Bot over its fakediscord.

// discordWait polls cond up to a generous bound (no timed assertion).
func discordWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// storedToken is the token in the settings table ("" none).
func storedToken(t *testing.T, h *harness) string {
	t.Helper()
	ds, err := settings.LoadDiscord(context.Background(), h.st)
	if err != nil {
		t.Fatal(err)
	}
	return ds.Token
}

// withToken stores the fake's token (tok "" ) or tok, as the page would.
func withToken(tok string) func(*testing.T, *harness) {
	return func(t *testing.T, h *harness) {
		t.Helper()
		if tok == "" {
			tok = h.fake.Token()
		}
		if err := settings.SaveDiscordToken(context.Background(), h.st, tok, settings.Actor{Name: "test"}); err != nil {
			t.Fatal(err)
		}
	}
}

// startBot starts the harness's bot after setup steps.
func startBot(steps ...func(*testing.T, *harness)) func(*testing.T, *harness) {
	return func(t *testing.T, h *harness) {
		t.Helper()
		for _, s := range steps {
			s(t, h)
		}
		h.bot.Start(context.Background())
	}
}

func waitDiscordState(want discord.State) func(*testing.T, *harness, *client, *response) {
	return func(t *testing.T, h *harness, _ *client, _ *response) {
		t.Helper()
		discordWait(t, "state "+string(want), func() bool { return h.bot.Status().State == want })
	}
}

// withIntentModule gives the server a host with a module whose activation
// needs the members intent, attached to the harness's bot.
func withIntentModule(o *Options) {
	ctx := context.Background()
	spec := sdk.Spec{Name: "memberwatch", Version: "1", APIVersion: sdk.APIVersion, ActivationCapabilities: []string{sdk.CapDiscordMembers},
		Create: func(sdk.LoadContext) (sdk.Module, error) { return nopModule{}, nil }}
	mh, err := host.New(ctx, host.Options{Specs: []sdk.Spec{spec}, Store: o.Store, Guilds: o.Guilds.(*guildcfg.Service), Logger: o.Logger,
		Selection: []string{spec.Name}, SelectionSet: true})
	if err != nil {
		panic(err)
	}
	bot := o.Discord.(*discord.Bot)
	bot.Attach(mh)
	if err := bot.ApplyCapabilities(ctx); err != nil {
		panic(err)
	}
	if err := mh.Start(ctx); err != nil {
		panic(err)
	}
	o.Host = mh
}

type nopModule struct{}

func (nopModule) Migrations() []sdk.Migration               { return nil }
func (nopModule) Start(context.Context, *sdk.Runtime) error { return nil }
func (nopModule) Close(context.Context) error               { return nil }

func discordModuleIs(t *testing.T, h *harness, name string, want host.State) {
	t.Helper()
	if st, _ := h.modHost.Module(name); st.State != want {
		t.Fatalf("module %s is %s (%s), want %s", name, st.State, st.Reason, want)
	}
}

var discordScenarios = []scenario{
	{name: "discord: anonymous is sent to sign in", method: "GET", url: "/discord",
		wantStatus: http.StatusSeeOther, wantLocation: "/login?next=%2Fdiscord"},
	{name: "discord: anonymous event stream is sent to sign in", method: "GET", url: "/discord/events",
		wantStatus: http.StatusSeeOther},
	{name: "discord: the page without a token", method: "GET", url: "/discord", signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{`data-state="not configured"`, `action="/discord/token"`, `type="password"`, "No token saved.",
			`action="/discord/intents"`, `name="members"`, `name="message_content"`, "discord.members.v1", "discord.message_content.v1",
			"Server Members Intent", "Message Content Intent", `action="/discord/cache"`, `action="/discord/reconnect"`,
			`data-live="/discord/events"`, "No installed module needs it."},
		wantNotContains: []string{`action="/discord/token/remove"`, "Coming soon"}},
	{name: "discord: without the bot the page answers 503", method: "GET", url: "/discord", signedIn: true,
		opts: []func(*Options){func(o *Options) { o.Discord = nil }}, wantStatus: http.StatusServiceUnavailable},
	{name: "discord: the intents list the modules that need them", method: "GET", url: "/discord", signedIn: true,
		opts: []func(*Options){withIntentModule}, wantStatus: http.StatusOK,
		wantContains: []string{"Needed by:", `href="/modules/memberwatch"`}},

	{name: "discord: a token Discord accepts is stored and the bot connects", method: "POST", url: "/discord/token", signedIn: true,
		setup: startBot(), form: url.Values{"token": {"{token}"}},
		wantStatus: http.StatusSeeOther, wantLocation: "/discord", wantAudit: []string{settings.AuditActionDiscordToken},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if storedToken(t, h) != h.fake.Token() {
				t.Fatal("the token was not stored")
			}
			discordWait(t, "connected", func() bool { return h.bot.Status().State == discord.StateConnected })
			page := c.get("/discord")
			wantBody(t, page, "Discord accepted the token", `data-state="connected"`, `action="/discord/token/remove"`)
			if strings.Contains(page.body, h.fake.Token()) {
				t.Fatal("the page shows the token")
			}
		}},
	{name: "discord: the Bot prefix is accepted", method: "POST", url: "/discord/token", signedIn: true,
		form: url.Values{"token": {"Bot {token}"}}, wantStatus: http.StatusSeeOther, wantAudit: []string{settings.AuditActionDiscordToken},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			if storedToken(t, h) != h.fake.Token() {
				t.Fatal("the token was not stored without its prefix")
			}
		}},
	{name: "discord: a token Discord rejects is not stored", method: "POST", url: "/discord/token", signedIn: true,
		form:       url.Values{"token": {"wrong-secret-token-value"}},
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains:    []string{"Discord rejected this token (401 Unauthorized)", msgTokenNotSaved},
		wantNotContains: []string{"wrong-secret-token-value"},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			if storedToken(t, h) != "" {
				t.Fatal("a rejected token was stored")
			}
		}},
	{name: "discord: an empty token is refused before Discord is asked", method: "POST", url: "/discord/token", signedIn: true,
		form: url.Values{"token": {"  "}}, wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{"Enter the bot token"},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			if n := len(h.fake.RequestsTo("GET /users/@me")); n != 0 {
				t.Fatalf("users/@me asked %d times", n)
			}
		}},
	{name: "discord: saving a token without CSRF is refused", method: "POST", url: "/discord/token", signedIn: true, noCSRF: true,
		form: url.Values{"token": {"{token}"}}, wantStatus: http.StatusForbidden, wantNoAudit: true},
	{name: "discord: removing the token asks first", method: "POST", url: "/discord/token/remove", signedIn: true, setup: withToken(""),
		wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains: []string{"Remove the bot token?", `name="confirm" value="yes"`, `href="/discord#token"`}},
	{name: "discord: removing the token confirmed", method: "POST", url: "/discord/token/remove", signedIn: true,
		setup: startBot(withToken("")), form: url.Values{"confirm": {"yes"}},
		wantStatus: http.StatusSeeOther, wantLocation: "/discord", wantAudit: []string{settings.AuditActionDiscordToken},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if storedToken(t, h) != "" {
				t.Fatal("the token is still stored")
			}
			waitDiscordState(discord.StateNotConfigured)(t, h, c, res)
		}},
	{name: "discord: saving the intents asks first, naming what starts and the portal switch", method: "POST", url: "/discord/intents",
		signedIn: true, opts: []func(*Options){withIntentModule}, form: url.Values{"members": {"1"}},
		wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains: []string{"Save the intents and reconnect?", "Server members on, Message content off", "Events sent while it reconnects are missed",
			"These modules can start once the intent is on: memberwatch.", "Enable Server Members Intent for your application",
			`name="members" value="1"`, `name="confirm" value="yes"`, `action="/discord/intents"`, `href="/discord#intents"`},
		wantNotContains: []string{`name="message_content"`},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			if ds, _ := settings.LoadDiscord(context.Background(), h.st); ds.Members || ds.MessageContent {
				t.Fatalf("stored %v before the confirmation", ds)
			}
			discordModuleIs(t, h, "memberwatch", host.StateDisabled)
		}},
	{name: "discord: saving the intents stores them and starts the module that needs them", method: "POST", url: "/discord/intents",
		signedIn: true, opts: []func(*Options){withIntentModule}, form: url.Values{"members": {"1"}, "confirm": {"yes"}},
		wantStatus: http.StatusSeeOther, wantLocation: "/discord", wantAudit: []string{settings.AuditActionDiscordIntents},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			ds, _ := settings.LoadDiscord(context.Background(), h.st)
			if !ds.Members || ds.MessageContent {
				t.Fatalf("stored %v", ds)
			}
			discordModuleIs(t, h, "memberwatch", host.StateRunning)
			if !h.modHost.Capabilities().Has(sdk.CapDiscordMembers) {
				t.Fatal("discord.members.v1 not advertised")
			}
		}},
	{name: "discord: turning an intent off asks first, naming the module it disables", method: "POST", url: "/discord/intents",
		signedIn: true, opts: []func(*Options){withIntentModule}, form: url.Values{},
		setup: func(t *testing.T, h *harness) {
			if err := settings.SaveDiscordIntents(context.Background(), h.st, true, false, settings.Actor{Name: "t"}); err != nil {
				t.Fatal(err)
			}
			if err := h.bot.ApplyCapabilities(context.Background()); err != nil {
				t.Fatal(err)
			}
		},
		wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains:    []string{"Server members off, Message content off", "disabled until it is on again: memberwatch."},
		wantNotContains: []string{`name="members"`, "can start once", "developer portal first"},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			if ds, _ := settings.LoadDiscord(context.Background(), h.st); !ds.Members {
				t.Fatalf("stored %v before the confirmation", ds)
			}
			discordModuleIs(t, h, "memberwatch", host.StateRunning)
		}},
	{name: "discord: turning an intent off soft-disables the module", method: "POST", url: "/discord/intents",
		signedIn: true, opts: []func(*Options){withIntentModule}, form: url.Values{"confirm": {"yes"}},
		setup: func(t *testing.T, h *harness) {
			if err := settings.SaveDiscordIntents(context.Background(), h.st, true, false, settings.Actor{Name: "t"}); err != nil {
				t.Fatal(err)
			}
			if err := h.bot.ApplyCapabilities(context.Background()); err != nil {
				t.Fatal(err)
			}
			discordModuleIs(t, h, "memberwatch", host.StateRunning)
		},
		wantStatus: http.StatusSeeOther, wantAudit: []string{settings.AuditActionDiscordIntents},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			discordModuleIs(t, h, "memberwatch", host.StateDisabled)
			if st, _ := h.modHost.Module("memberwatch"); st.Reason != "missing activation capability discord.members.v1" {
				t.Fatalf("reason %q", st.Reason)
			}
		}},
	{name: "discord: cache sizes are stored", method: "POST", url: "/discord/cache", signedIn: true,
		form:       url.Values{"cache_messages": {"500"}, "cache_members": {""}},
		wantStatus: http.StatusSeeOther, wantLocation: "/discord", wantAudit: []string{settings.AuditActionDiscordCache},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			if ds, _ := settings.LoadDiscord(context.Background(), h.st); ds.CacheMessages != 500 || ds.CacheMembers != 0 {
				t.Fatalf("stored %v", ds)
			}
		}},
	{name: "discord: bad cache sizes are refused with the input kept", method: "POST", url: "/discord/cache", signedIn: true,
		form:       url.Values{"cache_messages": {"lots"}, "cache_members": {"-3"}},
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{"The cache sizes were not saved", "Enter a whole number", `value="lots"`}},
	{name: "discord: reconnect asks first", method: "POST", url: "/discord/reconnect", signedIn: true,
		wantStatus: http.StatusOK, wantNoAudit: true, wantContains: []string{"Reconnect to Discord now?", `action="/discord/reconnect"`}},
	{name: "discord: reconnect confirmed after a 4004 connects with the new token", method: "POST", url: "/discord/reconnect", signedIn: true,
		setup: func(t *testing.T, h *harness) {
			withToken("a-wrong-token")(t, h)
			h.bot.Start(context.Background())
			discordWait(t, "the 4004", func() bool { return h.bot.Status().State == discord.StateStopped })
			withToken("")(t, h)
		},
		form: url.Values{"confirm": {"yes"}}, wantStatus: http.StatusSeeOther, wantLocation: "/discord",
		wantAudit: []string{settings.AuditActionDiscordReconnect}, check: waitDiscordState(discord.StateConnected)},
	{name: "discord: a 4004 shows on the page", method: "GET", url: "/discord", signedIn: true,
		setup: func(t *testing.T, h *harness) {
			withToken("a-wrong-token")(t, h)
			h.bot.Start(context.Background())
			discordWait(t, "the 4004", func() bool { return h.bot.Status().State == discord.StateStopped })
		},
		wantStatus: http.StatusOK, wantContains: []string{`data-state="stopped"`, `data-code="4004"`, "rejected the bot token", "Reset Token"},
		wantNotContains: []string{"a-wrong-token"}},
	{name: "discord: a 4014 names the intent and offers to reconnect without it", method: "GET", url: "/discord", signedIn: true,
		setup: func(t *testing.T, h *harness) {
			h.fake.SetAllowedIntents(0)
			if err := settings.SaveDiscordIntents(context.Background(), h.st, true, false, settings.Actor{Name: "t"}); err != nil {
				t.Fatal(err)
			}
			startBot(withToken(""))(t, h)
			discordWait(t, "the 4014", func() bool { return h.bot.Status().State == discord.StateStopped })
		},
		wantStatus: http.StatusOK, wantContains: []string{`data-code="4014"`, "Enable Server Members Intent in the Discord developer portal",
			`data-testid="discord-without"`, "Reconnect without Server Members Intent", `action="/discord/intents"`}},
	{name: "discord: a spent session start budget stops and explains, with the count", method: "GET", url: "/discord", signedIn: true,
		setup: func(t *testing.T, h *harness) {
			h.fake.SetSessionStartLimit(1000, 50, 150*time.Minute) // 50 is the reserve: no identify is left to spend
			startBot(withToken(""))(t, h)
			discordWait(t, "the budget stop", func() bool { return h.bot.Status().StartLimitStop != nil })
			if n := h.fake.GatewayStats().Identifies; n != 0 {
				t.Fatalf("%d identifies sent past the budget", n)
			}
		},
		wantStatus: http.StatusOK, wantContains: []string{`data-state="stopped"`, `data-testid="discord-start-budget"`,
			"session start budget is nearly spent (50 of 1000 left, resets at", "stopped reconnecting until then",
			"50 of 1000 left, resets at", "(in 2h "}},
	{name: "discord: the overview shows the state", method: "GET", url: "/", signedIn: true,
		setup: func(t *testing.T, h *harness) {
			startBot(withToken(""))(t, h)
			discordWait(t, "connected", func() bool { return h.bot.Status().State == discord.StateConnected })
		},
		wantStatus: http.StatusOK, wantContains: []string{`data-testid="overview-discord"`, "connected", `href="/discord"`}},
}

// msgTokenNotSaved is the page-level message of a refused token.
const msgTokenNotSaved = "The bot token was not saved."

func TestDiscordScenarios(t *testing.T) {
	for i := range discordScenarios {
		sc := &discordScenarios[i]
		if strings.Contains(sc.form.Get("token"), "{token}") {
			old := sc.setup
			sc.setup = func(t *testing.T, h *harness) {
				h.vars["token"] = h.fake.Token()
				if old != nil {
					old(t, h)
				}
			}
		}
	}
	runScenarios(t, discordScenarios)
}

// TestDiscordTokenNeverInAPage stores a token, connects, and reads every
// page of the admin: the token is in none of them.
func TestDiscordTokenNeverInAPage(t *testing.T) {
	h := newHarness(t, withModules(nil, false))
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	withToken("")(t, h)
	h.bot.Start(context.Background())
	discordWait(t, "connected", func() bool { return h.bot.Status().State == discord.StateConnected })
	tok := h.fake.Token()
	for _, p := range []string{"/", "/discord", "/settings", "/audit", "/modules", "/guilds", "/modules/hello"} {
		res := c.get(p)
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d", p, res.StatusCode)
		}
		if strings.Contains(res.body, tok) {
			t.Errorf("GET %s shows the token", p)
		}
	}
	// A refused save of a new token does not echo it.
	res := c.post("/discord/token", url.Values{"token": {"Bot another-secret-value"}})
	if res.StatusCode != http.StatusUnprocessableEntity || strings.Contains(res.body, "another-secret-value") {
		t.Errorf("refused save = %d, echoes the token: %t", res.StatusCode, strings.Contains(res.body, "another-secret-value"))
	}
	if strings.Contains(h.logs.String(), tok) {
		t.Error("the token is in the log")
	}
}

// TestDiscordEvents: the status region arrives when the stream opens and
// again after the bot's state changes (here: it connects), with no polling.
func TestDiscordEvents(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	events, _ := openStream(t, c, "/discord/events")
	first := readEvent(t, events)
	if !strings.Contains(first, `data-state="not configured"`) {
		t.Fatalf("first fragment: %.600s", first)
	}
	startBot(withToken(""))(t, h)
	for {
		ev := readEvent(t, events)
		if strings.Contains(ev, `data-state="connected"`) {
			if strings.Contains(ev, h.fake.Token()) {
				t.Fatal("the stream shows the token")
			}
			break
		}
	}
}
