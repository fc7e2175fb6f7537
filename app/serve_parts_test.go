package app

import (
	"context"
	"flag"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/internal/lifecycle"
	"github.com/kimiapp/kimi/modules/sdk"
)

// discordAtStart is a module whose Start calls Discord at once, as the
// real discord_logging module does (it snapshots the invites there): it
// posts a message and reads the guild's invites, and reports what Discord
// answered.
type discordAtStart struct {
	channel, guild uint64
	report         func(sent sdk.MessageRef, invites []sdk.InviteSnapshot, sendErr, inviteErr error)
}

func (m *discordAtStart) Migrations() []sdk.Migration { return nil }
func (m *discordAtStart) Start(ctx context.Context, rt *sdk.Runtime) error {
	ref, sendErr := rt.Discord.SendMessage(ctx, m.channel, sdk.OutgoingMessage{Content: "hello from Start"})
	invites, inviteErr := rt.Discord.FetchInvites(ctx, m.guild)
	m.report(ref, invites, sendErr, inviteErr)
	return nil
}
func (m *discordAtStart) Close(context.Context) error { return nil }

// TestModulesStartOnceDiscordIsReady: with a bot token (demo mode's fake
// Discord), the module host starts after the bot's first READY, so a
// module whose Start sends a message and reads the invite list succeeds
// at both — the message reaches the fake's channel — and the log says
// Discord was waited for.
func TestModulesStartOnceDiscordIsReady(t *testing.T) {
	type outcome struct {
		ref               sdk.MessageRef
		invites           []sdk.InviteSnapshot
		sendErr, inviteEr error
	}
	got := make(chan outcome, 1)
	var (
		mu   sync.Mutex
		fake *fakediscord.Server
		mod  = &discordAtStart{report: func(ref sdk.MessageRef, inv []sdk.InviteSnapshot, se, ie error) {
			got <- outcome{ref, inv, se, ie}
		}}
	)
	spec := sdk.Spec{Name: "discord_at_start", Version: "1.0.0", APIVersion: sdk.APIVersion,
		Permissions: sdk.Permissions{DiscordActions: []sdk.DiscordAction{sdk.ActionSendMessage, sdk.ActionFetchInvites}},
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return mod, nil }}

	dataDir := filepath.Join(t.TempDir(), "data")
	c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0", "KIMI_DEMO": "true",
		"KIMI_MODULES": "discord_at_start"}, "")
	c.specs = []sdk.Spec{spec}
	c.onDemoFake = func(f *fakediscord.Server, g fakediscord.DemoGuild) {
		mu.Lock()
		defer mu.Unlock()
		fake = f
		mod.guild, _ = strconv.ParseUint(g.GuildID, 10, 64)
		mod.channel, _ = strconv.ParseUint(g.Channels[0], 10, 64)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- c.main(ctx, []string{"serve"}) }()
	var o outcome
	select {
	case o = <-got:
	case rc := <-code:
		t.Fatalf("serve exited with %d before the module started:\n%s", rc, stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("the module never started:\n%s", stderr)
	}
	if o.sendErr != nil || o.inviteEr != nil || o.ref.MessageID == 0 {
		t.Fatalf("Discord from a module's Start: send %+v, %v; invites %v:\n%s", o.ref, o.sendErr, o.inviteEr, stderr)
	}
	mu.Lock()
	msgs := fake.Messages(strconv.FormatUint(mod.channel, 10))
	mu.Unlock()
	if !slicesContainContent(msgs, "hello from Start") {
		t.Fatalf("the fake's channel has no message from Start: %d messages", len(msgs))
	}
	if !regexp.MustCompile(`msg="Discord is ready; starting the modules"`).MatchString(stderr.String()) {
		t.Fatalf("the log does not say the modules waited for Discord:\n%s", stderr)
	}
	cancel()
	select {
	case rc := <-code:
		if rc != ExitOK {
			t.Fatalf("exit code %d:\n%s", rc, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestModulesStartAfterTheBoundedWait: a Discord whose gateway URL lookup
// keeps failing (the fake answers GET /gateway with 502) is never ready;
// the modules start after KIMI_DISCORD_READY_WAIT all the same, and a
// module's Discord call then fails with the existing not-connected error.
func TestModulesStartAfterTheBoundedWait(t *testing.T) {
	got := make(chan error, 1)
	mod := &discordAtStart{channel: 1, guild: 1, report: func(_ sdk.MessageRef, _ []sdk.InviteSnapshot, se, _ error) { got <- se }}
	spec := sdk.Spec{Name: "discord_at_start", Version: "1.0.0", APIVersion: sdk.APIVersion,
		Permissions: sdk.Permissions{DiscordActions: []sdk.DiscordAction{sdk.ActionSendMessage, sdk.ActionFetchInvites}},
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return mod, nil }}
	dataDir := filepath.Join(t.TempDir(), "data")
	c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0", "KIMI_DEMO": "true",
		"KIMI_MODULES": "discord_at_start", "KIMI_DISCORD_READY_WAIT": "300ms"}, "")
	c.specs = []sdk.Spec{spec}
	c.onDemoFake = func(f *fakediscord.Server, _ fakediscord.DemoGuild) {
		f.InjectFault(fakediscord.Fault{Route: "GET /gateway", Status: http.StatusBadGateway, Times: 1 << 30})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- c.main(ctx, []string{"serve"}) }()
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "not connected") {
			t.Fatalf("a Discord call before the gateway is ready = %v, want the not-connected error", err)
		}
	case rc := <-code:
		t.Fatalf("serve exited with %d:\n%s", rc, stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("the module never started:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "starting the modules without a ready Discord connection") {
		t.Fatalf("the log does not say the wait ran out:\n%s", stderr)
	}
	cancel()
	<-code
}

func slicesContainContent(msgs []*discordgo.Message, want string) bool {
	for _, m := range msgs {
		if m.Content == want {
			return true
		}
	}
	return false
}

// TestCloseBudgetsFitTheShutdownBound: the close budgets of every part
// serve builds — demo mode's, which has the most — each with the grace
// the runner gives a part that overruns it, add up to the 15 s bound, so
// the store's checkpoint keeps its own budget even when every other part
// hangs; and the parts start in the documented order.
func TestCloseBudgetsFitTheShutdownBound(t *testing.T) {
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "data")
	c, _, _ := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0", "KIMI_DEMO": "true"}, "")
	cfg, err := c.loadConfig(config.Bind(flag.NewFlagSet("serve", flag.ContinueOnError)))
	if err != nil {
		t.Fatal(err)
	}
	if err := ensureDataDir(cfg.DataDir, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	run := lifecycle.New(slog.New(slog.DiscardHandler))
	db := newStorePart(cfg, slog.New(slog.DiscardHandler), slog.New(slog.DiscardHandler))
	if err := run.Start(ctx, db.part()); err != nil {
		t.Fatal(err)
	}
	a, err := newAppliance(ctx, c, cfg, slog.New(slog.DiscardHandler), db.st, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	run.Add(a.parts...)
	t.Cleanup(func() { _ = run.Close(ctx) })

	var names []string
	total := db.part().CloseBudget + lifecycle.AbandonGrace
	for _, p := range a.parts {
		names = append(names, p.Name)
		if p.Close == nil {
			continue
		}
		if p.CloseBudget <= 0 {
			t.Errorf("part %s closes without a budget", p.Name)
		}
		total += p.CloseBudget + lifecycle.AbandonGrace
	}
	if total > shutdownTimeout {
		t.Fatalf("close budgets with their graces add up to %s, past the %s shutdown bound", total, shutdownTimeout)
	}
	want := []string{"demo fakes", "configuration", "proposals", "assistant", "admin", "discord", "modules", "results", "tasks", "assistant retention"}
	if !slices.Equal(names, want) {
		t.Fatalf("parts = %q, want %q", names, want)
	}
}
