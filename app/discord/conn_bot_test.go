package discord

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Connection tests: the real Bot against fakediscord, over a real SQLite
// store. Waits are bounded generously and assert states, never durations.

const connWait = 30 * time.Second

// connStore opens and migrates a real SQLite file in a temp dir.
func connStore(t testing.TB) *store.Store {
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

// connLog is a concurrency-safe log buffer.
type connLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *connLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *connLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type connOpts struct {
	token   string // stored token ("" none)
	members bool
	env     map[string]string
}

// connBot builds a Bot against f over st, with a short backoff, closed
// with the test.
func connBot(t *testing.T, f *fakediscord.Server, st *store.Store, o connOpts) (*Bot, *connLog) {
	t.Helper()
	ctx := context.Background()
	who := settings.Actor{Name: "test", IP: "127.0.0.1"}
	if o.token != "" {
		if err := settings.SaveDiscordToken(ctx, st, o.token, who); err != nil {
			t.Fatal(err)
		}
	}
	if o.members {
		if err := settings.SaveDiscordIntents(ctx, st, true, false, who); err != nil {
			t.Fatal(err)
		}
	}
	logs := &connLog{}
	b, err := New(Options{Store: st, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Transport: f.Transport(), Dialer: f.Dialer(),
		Getenv: func(k string) string { return o.env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	b.backoffBase = 20 * time.Millisecond
	t.Cleanup(func() { _ = b.Close() })
	return b, logs
}

// connWaitFor polls cond until it holds or connWait passes.
func connWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(connWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func connWaitState(t *testing.T, b *Bot, want State) Status {
	t.Helper()
	var st Status
	connWaitFor(t, "state "+string(want), func() bool { st = b.Status(); return st.State == want })
	return st
}

func TestConnConnectsAndReportsStatus(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	f.AddGuild(fakediscord.GuildSpec{ID: "111111111111111111", Name: "Zeta"})
	f.AddGuild(fakediscord.GuildSpec{ID: "222222222222222222", Name: "alpha"})
	b, logs := connBot(t, f, connStore(t), connOpts{token: "Bot " + f.Token()})
	if got := b.Status().State; got != StateNotConfigured {
		t.Fatalf("state before Start = %q", got)
	}
	b.Start(context.Background())
	connWaitFor(t, "both guilds named", func() bool {
		st := b.Status()
		return st.State == StateConnected && len(st.Guilds) == 2 && st.Guilds[0].Name != "" && st.Guilds[1].Name != ""
	})
	connWaitFor(t, "gateway/bot read", func() bool { return b.Status().Shards == 1 })
	// The application (its owner) is read after READY sets the state.
	connWaitFor(t, "the application read", func() bool { return b.OwnerID() != 0 })
	st := b.Status()
	if st.Guilds[0].Name != "alpha" || st.Guilds[1].Name != "Zeta" {
		t.Errorf("guilds = %+v, want alpha then Zeta", st.Guilds)
	}
	if st.BotID != f.BotID() || st.AppID != f.AppID() || st.OwnerID != "900000000000000003" || b.OwnerID() != 900000000000000003 {
		t.Errorf("ids: bot %s app %s owner %s", st.BotID, st.AppID, st.OwnerID)
	}
	if st.TokenSource != TokenFromStore || st.LastHeartbeatAck.IsZero() || st.ConnectedSince.IsZero() {
		t.Errorf("status = %+v", st)
	}
	if st.SessionStartLimit.Total == 0 {
		t.Errorf("session start limit = %+v", st.SessionStartLimit)
	}
	if _, err := b.session(); err != nil {
		t.Errorf("session() = %v while connected", err)
	}
	if gs := f.GatewayStats(); gs.Identifies != 1 {
		t.Errorf("identifies = %d", gs.Identifies)
	}
	// Identify carried the base intents without privileged ones.
	if in := b.Status().Intents.Gateway(); in&discordgo.IntentGuildMembers != 0 || in&discordgo.IntentGuilds == 0 {
		t.Errorf("intents = %b", in)
	}
	if strings.Contains(logs.String(), f.Token()) {
		t.Error("the token is in the log")
	}
	_ = b.Close()
	if st := b.Status(); st.State != StateStopped {
		t.Errorf("state after Close = %q", st.State)
	}
	if _, err := b.session(); !errors.Is(err, ErrNotConnected) {
		t.Errorf("session() after Close = %v", err)
	}
}

func TestConnNoTokenIsNotConfiguredUntilReconnect(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	st := connStore(t)
	b, _ := connBot(t, f, st, connOpts{})
	b.Start(context.Background())
	connWaitState(t, b, StateNotConfigured)
	if gs := f.GatewayStats(); gs.Identifies != 0 {
		t.Fatalf("identifies without a token = %d", gs.Identifies)
	}
	if err := settings.SaveDiscordToken(context.Background(), st, f.Token(), settings.Actor{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	b.Reconnect()
	connWaitState(t, b, StateConnected)
}

func TestConnFatal4004StopsReconnecting(t *testing.T) {
	t.Run("at connect", func(t *testing.T) {
		f := newFake(t, fakediscord.Options{})
		b, _ := connBot(t, f, connStore(t), connOpts{token: "wrong-token"})
		b.Start(context.Background())
		st := connWaitState(t, b, StateStopped)
		if st.Fatal == nil || st.Fatal.Code != 4004 || !strings.Contains(st.Fatal.Message, "token") || !strings.Contains(st.Summary(time.Now()), "rejected the bot token") {
			t.Fatalf("status = %+v", st)
		}
		if gs := f.GatewayStats(); gs.Identifies != 1 || gs.Resumes != 0 {
			t.Fatalf("gateway saw %+v, want one identify and no more", gs)
		}
	})
	t.Run("mid-session token reset", func(t *testing.T) {
		f := newFake(t, fakediscord.Options{})
		b, _ := connBot(t, f, connStore(t), connOpts{token: f.Token()})
		b.Start(context.Background())
		connWaitState(t, b, StateConnected)
		f.SetToken("reset-in-the-portal")
		f.CloseGateway(fakediscord.CloseAuthenticationFailed)
		st := connWaitState(t, b, StateStopped)
		if st.Fatal == nil || st.Fatal.Code != 4004 {
			t.Fatalf("status = %+v", st)
		}
		gs := f.GatewayStats()
		if gs.Identifies != 1 || gs.Resumes != 1 {
			t.Fatalf("gateway saw %+v, want one identify and the one resume refused", gs)
		}
		if st.Reconnects != 1 {
			t.Errorf("reconnects = %d", st.Reconnects)
		}
	})
}

func TestConnResumesAfterDrop(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	f.AddGuild(fakediscord.GuildSpec{ID: "111111111111111111", Name: "G"})
	b, _ := connBot(t, f, connStore(t), connOpts{token: f.Token()})
	b.Start(context.Background())
	connWaitState(t, b, StateConnected)
	f.DropConnections()
	connWaitFor(t, "a resume", func() bool { return f.GatewayStats().Resumes == 1 && b.Status().State == StateConnected })
	gs := f.GatewayStats()
	if gs.Identifies != 1 {
		t.Fatalf("identifies = %d, want the session resumed, not identified again", gs.Identifies)
	}
	if st := b.Status(); st.Reconnects != 1 || len(st.Guilds) != 1 {
		t.Fatalf("status = %+v", st)
	}
	// A recoverable close code also resumes.
	f.CloseGateway(fakediscord.CloseUnknownError)
	connWaitFor(t, "a second resume", func() bool { return f.GatewayStats().Resumes == 2 && b.Status().State == StateConnected })
}

func TestConnFatal4014ExplainedAndReconnectWithout(t *testing.T) {
	none := discordgo.Intent(0)
	f := newFake(t, fakediscord.Options{AllowedIntents: &none})
	st := connStore(t)
	b, _ := connBot(t, f, st, connOpts{token: f.Token(), members: true})
	b.Start(context.Background())
	s := connWaitState(t, b, StateStopped)
	if s.Fatal == nil || s.Fatal.Code != 4014 || !slices.Equal(s.Fatal.DisallowedIntents, []string{"Server Members Intent"}) ||
		!strings.Contains(s.Fatal.Message, "Server Members Intent") || !strings.Contains(s.Fatal.Message, "developer portal") {
		t.Fatalf("status = %+v", s)
	}
	if gs := f.GatewayStats(); gs.Identifies != 1 {
		t.Fatalf("identifies = %d", gs.Identifies)
	}
	// "Reconnect without it": the page stores the intents off, then reconnects.
	if err := settings.SaveDiscordIntents(context.Background(), st, false, false, settings.Actor{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	b.Reconnect()
	s = connWaitState(t, b, StateConnected)
	if s.Intents.Members || f.GatewayStats().Identifies != 2 {
		t.Fatalf("after reconnect without: %+v, %+v", s, f.GatewayStats())
	}
}

func TestConnFatal4014MidSessionStops(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	b, _ := connBot(t, f, connStore(t), connOpts{token: f.Token(), members: true})
	b.Start(context.Background())
	connWaitState(t, b, StateConnected)
	f.SetAllowedIntents(0)
	f.CloseGateway(fakediscord.CloseDisallowedIntents)
	s := connWaitState(t, b, StateStopped)
	if s.Fatal == nil || s.Fatal.Code != 4014 {
		t.Fatalf("status = %+v", s)
	}
	identifies := f.GatewayStats().Identifies
	if identifies > 3 {
		t.Fatalf("identifies = %d: the loop kept trying", identifies)
	}
}

func TestConnValidateToken(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	b, logs := connBot(t, f, connStore(t), connOpts{})
	ctx := context.Background()
	for _, tok := range []string{f.Token(), "Bot " + f.Token(), "  " + f.Token() + "\n"} {
		id, err := b.ValidateToken(ctx, tok)
		if err != nil || id.ID != f.BotID() || !id.Bot {
			t.Fatalf("ValidateToken(%q) = %+v, %v", tok, id, err)
		}
	}
	if _, err := b.ValidateToken(ctx, "not-the-token"); !errors.Is(err, ErrTokenRejected) {
		t.Fatalf("wrong token: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.ValidateToken(cctx, f.Token()); err == nil || strings.Contains(err.Error(), f.Token()) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	if strings.Contains(logs.String(), f.Token()) {
		t.Error("the token is in the log")
	}
	if n := len(f.RequestsTo("GET /users/@me")); n != 4 {
		t.Errorf("users/@me requests = %d, want 4", n)
	}
}

func TestConnEnvTokenOverridesStored(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(f.Token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		want   State
		source string
	}{
		{"KIMI_DISCORD_TOKEN", map[string]string{EnvToken: f.Token()}, StateConnected, EnvToken},
		{"KIMI_DISCORD_TOKEN_FILE trimmed", map[string]string{EnvTokenFile: file}, StateConnected, EnvTokenFile},
		{"both set", map[string]string{EnvToken: f.Token(), EnvTokenFile: file}, StateStopped, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := connBot(t, f, connStore(t), connOpts{token: "stored-wrong-token", env: tc.env})
			b.Start(context.Background())
			st := connWaitState(t, b, tc.want)
			if tc.want == StateStopped {
				if !strings.Contains(st.Reason, "not both") {
					t.Fatalf("reason = %q", st.Reason)
				}
				return
			}
			if st.TokenSource != tc.source {
				t.Fatalf("source = %q", st.TokenSource)
			}
		})
	}
}

func TestConnTokenIsASecretSetting(t *testing.T) {
	st := connStore(t)
	if err := settings.SaveDiscordToken(context.Background(), st, "Bot abc.def", settings.Actor{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	var v string
	var secret bool
	if err := st.Reader().QueryRow(`SELECT value, secret FROM kimi_settings WHERE key = ?`, settings.SettingDiscordToken).Scan(&v, &secret); err != nil {
		t.Fatal(err)
	}
	if v != "abc.def" || !secret {
		t.Fatalf("stored %q secret=%t, want the token without its prefix, secret", v, secret)
	}
	var detail string
	if err := st.Reader().QueryRow(`SELECT detail FROM kimi_audit_log WHERE action = ?`, settings.AuditActionDiscordToken).Scan(&detail); err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	if strings.Contains(detail, "abc.def") {
		t.Fatal("the audit detail holds the token")
	}
}

// connModule is a module that only records that it started.
type connModule struct{ started chan struct{} }

func (m *connModule) Migrations() []sdk.Migration { return nil }
func (m *connModule) Start(context.Context, *sdk.Runtime) error {
	select {
	case m.started <- struct{}{}:
	default:
	}
	return nil
}
func (m *connModule) Close(context.Context) error { return nil }

func TestConnSetCapabilitiesSoftDisablesAndStarts(t *testing.T) {
	ctx := context.Background()
	st := connStore(t)
	mod := &connModule{started: make(chan struct{}, 4)}
	spec := sdk.Spec{Name: "watcher", Version: "1", APIVersion: sdk.APIVersion,
		ActivationCapabilities: []string{sdk.CapDiscordMembers},
		Create:                 func(sdk.LoadContext) (sdk.Module, error) { return mod, nil }}
	f := newFake(t, fakediscord.Options{})
	b, _ := connBot(t, f, st, connOpts{})
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Modules: []sdk.Spec{spec}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(ctx, host.Options{Store: st, Guilds: guilds, Specs: []sdk.Spec{spec}, Selection: []string{"watcher"}, SelectionSet: true,
		Logger: slog.New(slog.DiscardHandler), Discord: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	b.Attach(h)
	if err := b.ApplyCapabilities(ctx); err != nil { // before Start: only sets what Start advertises
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ms, _ := h.Module("watcher")
	if ms.State != host.StateDisabled || ms.Reason != "missing activation capability discord.members.v1" {
		t.Fatalf("without the members intent: %s (%s)", ms.State, ms.Reason)
	}
	if !h.Capabilities().Has(sdk.CapDiscordGuildCommands) || h.Capabilities().Has(sdk.CapProposals) || h.Capabilities().Has(sdk.CapScheduledResults) {
		t.Fatalf("advertised %v", h.Capabilities().Names())
	}
	who := settings.Actor{Name: "t"}
	if err := settings.SaveDiscordIntents(ctx, st, true, false, who); err != nil {
		t.Fatal(err)
	}
	if err := b.ApplyCapabilities(ctx); err != nil {
		t.Fatal(err)
	}
	if ms, _ := h.Module("watcher"); ms.State != host.StateRunning {
		t.Fatalf("with the members intent: %s (%s)", ms.State, ms.Reason)
	}
	if err := settings.SaveDiscordIntents(ctx, st, false, false, who); err != nil {
		t.Fatal(err)
	}
	if err := b.ApplyCapabilities(ctx); err != nil {
		t.Fatal(err)
	}
	if ms, _ := h.Module("watcher"); ms.State != host.StateDisabled || !strings.Contains(ms.Reason, "discord.members.v1") {
		t.Fatalf("after turning it off: %s (%s)", ms.State, ms.Reason)
	}
}
