package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/modules/sdk"
)

const guildPUT = "PUT /applications/{app}/guilds/{guild}/commands"

func ixNoop(context.Context, sdk.Interaction) error { return nil }

// ixNames are the names of a fake's command set.
func ixNames(cmds []*discordgo.ApplicationCommand) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

// TestIxDebounceCoalesces: three commands added quickly after READY are
// one sync: the debounce keeps only the last timer, and the fake sees
// exactly one more PUT carrying all three.
func TestIxDebounceCoalesces(t *testing.T) {
	timer := &ixTimer{}
	w := newIxWorld(t, ixKudos(&ixRecorder{}, make(chan struct{})), ixOptions{timer: timer})
	ixEventually(t, "READY sync", func() bool { return w.x.fullSyncs.Load() == 1 })
	rt := w.mod.runtime()
	for _, name := range []string{"one", "two", "three"} {
		if _, err := rt.Interactions.AddCommand(sdk.CommandSpec{Name: name, Description: name, MinTier: sdk.TierMember}, ixNoop, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := timer.fire(); n != 1 {
		t.Fatalf("pending syncs after three changes = %d, want 1 (debounced)", n)
	}
	if n := w.x.fullSyncs.Load(); n != 2 {
		t.Fatalf("full syncs = %d, want 2", n)
	}
	puts := w.f.RequestsTo(globalPUT)
	if len(puts) != 2 {
		t.Fatalf("global PUTs = %d, want 2", len(puts))
	}
	for _, name := range []string{"one", "two", "three"} {
		if !strings.Contains(string(puts[1].Body), `"name":"`+name+`"`) {
			t.Errorf("the debounced PUT lacks /%s: %s", name, puts[1].Body)
		}
	}
}

// TestIxUnknownCommandUnanswered: a command Discord still shows but no
// running module registers gets no callback at all, as in the original
// (discord.py's CommandNotFound, only logged).
func TestIxUnknownCommandUnanswered(t *testing.T) {
	timer, done := &ixTimer{}, make(chan string, 8)
	w := newIxWorld(t, ixKudos(&ixRecorder{}, make(chan struct{})), ixOptions{timer: timer, dispatched: done})
	ixEventually(t, "READY sync", func() bool { return w.x.fullSyncs.Load() == 1 })
	reg, err := w.mod.runtime().Interactions.AddCommand(sdk.CommandSpec{Name: "gone", Description: "soon gone", MinTier: sdk.TierMember}, ixNoop, nil)
	if err != nil {
		t.Fatal(err)
	}
	timer.fire() // Discord now has /gone
	reg.Close()  // the module drops it; the re-sync is still pending
	id, err := w.f.RunCommand(w.text, w.alice, "gone")
	if err != nil {
		t.Fatal(err)
	}
	for got := <-done; got != id; got = <-done {
	}
	if st := w.f.Interaction(id); st.Callbacks != 0 {
		t.Fatalf("unregistered command answered: %d callbacks, %+v", st.Callbacks, st.Response)
	}
}

// TestIxIntegerOptions: an integer option above 2^53 reaches the handler
// exactly (read from the gateway's JSON, not discordgo's float64); a
// max_value of 0 is sent in the synced command.
func TestIxIntegerOptions(t *testing.T) {
	got := make(chan sdk.Options, 1)
	mod := &ixModule{start: func(rt *sdk.Runtime) error {
		_, err := rt.Interactions.AddCommand(sdk.CommandSpec{Name: "count", Description: "count", MinTier: sdk.TierMember,
			Options: []sdk.CommandOption{
				{Name: "n", Kind: sdk.OptionInteger, Description: "n"},
				{Name: "neg", Kind: sdk.OptionInteger, Description: "at most 0", MinValue: new(int64(-5)), MaxValue: new(int64(0))},
			}}, func(ctx context.Context, in sdk.Interaction) error {
			got <- in.Options()
			return in.Respond(ctx, sdk.Response{Content: "counted"})
		}, nil)
		return err
	}}
	w := newIxWorld(t, mod, ixOptions{})
	ixEventually(t, "READY sync", func() bool { return len(w.f.RequestsTo(globalPUT)) == 1 })
	if body := string(w.f.RequestsTo(globalPUT)[0].Body); !strings.Contains(body, `"min_value":-5,"max_value":0`) {
		t.Fatalf("synced command lacks max_value 0: %s", body)
	}
	const big = int64(1<<53 + 1)
	if _, err := w.f.RunCommand(w.text, w.alice, "count",
		&discordgo.ApplicationCommandInteractionDataOption{Name: "n", Type: discordgo.ApplicationCommandOptionInteger, Value: big}); err != nil {
		t.Fatal(err)
	}
	if o := <-got; o["n"] != big {
		t.Fatalf("n = %#v, want int64(%d)", o["n"], big)
	}
}

// TestIxAutocomplete: through fakediscord's Autocomplete — suggestions for
// a caller at the command's tier, none below it, at most 25, none when the
// handler fails.
func TestIxAutocomplete(t *testing.T) {
	mod := &ixModule{start: func(rt *sdk.Runtime) error {
		_, err := rt.Interactions.AddCommand(sdk.CommandSpec{Group: "tag", Name: "show", Description: "show a tag", MinTier: sdk.TierRegular,
			Options: []sdk.CommandOption{{Name: "name", Kind: sdk.OptionString, Description: "the tag", Required: true, Autocomplete: true}}},
			ixNoop, func(ctx context.Context, in sdk.Interaction, option, current string) ([]sdk.Choice, error) {
				switch current {
				case "fail":
					return []sdk.Choice{{Name: "never", Value: "never"}}, errors.New("boom")
				case "many":
					var out []sdk.Choice
					for i := range 30 {
						out = append(out, sdk.Choice{Name: fmt.Sprint("tag", i), Value: fmt.Sprint(i)})
					}
					return out, nil
				}
				return []sdk.Choice{{Name: option + ":" + current, Value: current}, {Name: "help", Value: "help"}}, nil
			})
		return err
	}}
	w := newIxWorld(t, mod, ixOptions{})
	ixEventually(t, "READY sync", func() bool { return len(w.f.RequestsTo(globalPUT)) == 1 })
	for _, c := range []struct {
		user, current string
		want          int
		first         string
	}{
		{w.bob, "he", 2, "name:he"},
		{w.alice, "he", 0, ""}, // a member below regular
		{w.bob, "many", 25, "tag0"},
		{w.bob, "fail", 0, ""},
	} {
		got, err := w.f.Autocomplete(w.text, c.user, "tag show", "name", c.current)
		if err != nil {
			t.Fatalf("autocomplete %q as %s: %v", c.current, c.user, err)
		}
		if len(got) != c.want || (c.want > 0 && got[0].Name != c.first) {
			t.Errorf("autocomplete %q as %s = %d choices %+v, want %d starting %q", c.current, c.user, len(got), got, c.want, c.first)
		}
	}
}

// TestIxGuildCommands: ReplaceGuildCommands pushes the guild's full set
// (every module's) live; a failed push is a *sdk.CommandSyncError and the
// previous set stays, in the host and in Discord; an empty set removes the
// module's; a restarted module that no longer registers its set has it
// cleared at the next sync (kimi_command_guilds tells which guild).
func TestIxGuildCommands(t *testing.T) {
	timer := &ixTimer{}
	ran := make(chan string, 4)
	cmd := func(name string) sdk.GuildCommand {
		return sdk.GuildCommand{Spec: sdk.CommandSpec{Name: name, Description: name, MinTier: sdk.TierMember},
			Handler: func(ctx context.Context, in sdk.Interaction) error {
				ran <- name
				return in.Respond(ctx, sdk.Response{Content: name})
			}}
	}
	second := &ixModule{}
	w := newIxWorld(t, &ixModule{}, ixOptions{timer: timer, more: map[string]*ixModule{"second": second}, caps: []string{sdk.CapDiscordGuildCommands}})
	ixEventually(t, "READY sync", func() bool { return w.x.fullSyncs.Load() == 1 })
	// The guild's GUILD_CREATE checks its command set on its own: once it
	// found none, no sync of it can land between the pushes below.
	ixEventually(t, "GUILD_CREATE's command check", func() bool { return w.x.guildCreates.Load() >= 1 })
	ctx, gid := context.Background(), parseID(w.guild)
	demoIx, secondIx := w.mod.runtime().Interactions, second.runtime().Interactions

	if err := demoIx.ReplaceGuildCommands(ctx, gid, []sdk.GuildCommand{cmd("alpha")}); err != nil {
		t.Fatalf("demo's set: %v", err)
	}
	if err := secondIx.ReplaceGuildCommands(ctx, gid, []sdk.GuildCommand{cmd("beta")}); err != nil {
		t.Fatalf("second's set: %v", err)
	}
	puts := w.f.RequestsTo(guildPUT)
	if len(puts) != 2 || !strings.Contains(string(puts[1].Body), `"name":"alpha"`) || !strings.Contains(string(puts[1].Body), `"name":"beta"`) {
		t.Fatalf("guild PUTs = %d, last %s; want 2, the last with alpha and beta", len(puts), puts[len(puts)-1].Body)
	}
	if names := ixNames(w.f.Commands(w.guild)); !slices.Equal(names, []string{"alpha", "beta"}) {
		t.Fatalf("guild commands in Discord = %v", names)
	}
	id, err := w.f.RunCommand(w.text, w.alice, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if st := ixAnswered(t, w.f, id); st.Original == nil || st.Original.Content != "beta" || <-ran != "beta" {
		t.Fatalf("/beta answered %+v", st.Original)
	}

	w.f.InjectFault(fakediscord.Fault{Route: guildPUT, Status: 500})
	err = secondIx.ReplaceGuildCommands(ctx, gid, []sdk.GuildCommand{cmd("gamma")})
	var se *sdk.CommandSyncError
	if !errors.As(err, &se) {
		t.Fatalf("push against a failing Discord = %v, want *sdk.CommandSyncError", err)
	}
	var hostNames []string
	for _, sp := range w.h.GuildCommands(gid) {
		hostNames = append(hostNames, sp.Name)
	}
	if !slices.Equal(hostNames, []string{"alpha", "beta"}) || !slices.Equal(ixNames(w.f.Commands(w.guild)), []string{"alpha", "beta"}) {
		t.Fatalf("after the failure: host %v, Discord %v; want the previous alpha, beta", hostNames, ixNames(w.f.Commands(w.guild)))
	}

	if err := secondIx.ReplaceGuildCommands(ctx, gid, nil); err != nil {
		t.Fatalf("empty set: %v", err)
	}
	if names := ixNames(w.f.Commands(w.guild)); !slices.Equal(names, []string{"alpha"}) {
		t.Fatalf("after second's empty set Discord has %v, want [alpha]", names)
	}

	// demo restarts and no longer registers its guild set: the next sync
	// clears it, and the bookkeeping row goes.
	if err := w.h.Restart(ctx, "demo", "test"); err != nil {
		t.Fatal(err)
	}
	timer.fire()
	if names := ixNames(w.f.Commands(w.guild)); len(names) != 0 {
		t.Fatalf("after demo's restart Discord has %v, want none", names)
	}
	var rows int
	if err := w.st.Reader().QueryRow(`SELECT COUNT(*) FROM kimi_command_guilds`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("kimi_command_guilds rows = %d, %v; want 0", rows, err)
	}
}

// TestIxGuildCreateAppliesGuildSet: a set staged for a guild Discord did
// not have at READY (its PUT failed) is applied when the guild's
// GUILD_CREATE arrives.
func TestIxGuildCreateAppliesGuildSet(t *testing.T) {
	w := newIxWorld(t, &ixModule{}, ixOptions{noOpen: true, caps: []string{sdk.CapDiscordGuildCommands}})
	const later = "777000000000000001"
	set := []sdk.GuildCommand{{Spec: sdk.CommandSpec{Name: "local", Description: "local", MinTier: sdk.TierMember}, Handler: ixNoop}}
	if err := w.mod.runtime().Interactions.ReplaceGuildCommands(context.Background(), parseID(later), set); err != nil {
		t.Fatalf("staged while not connected: %v", err)
	}
	w.open(t)
	ixEventually(t, "READY sync", func() bool { return w.x.fullSyncs.Load() == 1 })
	if n := len(w.f.RequestsTo(guildPUT)); n != 1 {
		t.Fatalf("guild PUTs at READY = %d, want 1 (refused: the guild is unknown)", n)
	}
	w.f.AddGuild(fakediscord.GuildSpec{ID: later, Name: "later"})
	ixEventually(t, "the guild's set applied on GUILD_CREATE", func() bool {
		return slices.Equal(ixNames(w.f.Commands(later)), []string{"local"})
	})
}

// blockingSyncSource is a session source whose session() is entered by
// the debounced sync and returns only once the interactions' ctx ends
// (Close): it records that it returned.
type blockingSyncSource struct {
	x        *interactions
	entered  chan struct{}
	returned atomic.Bool
}

func (a *blockingSyncSource) session() (*discordgo.Session, error) {
	close(a.entered)
	<-a.x.ctx.Done()
	a.returned.Store(true)
	return nil, ErrNotConnected
}

func (a *blockingSyncSource) self() (uint64, uint64) { return 1, 2 }

// TestIxCloseWaitsForARunningDebouncedSync: a debounced command sync
// whose timer fired just before Close is waited for by Close (the timer's
// Stop does not wait for a func already running), so no sync writes the
// store or Discord after the bot was closed.
func TestIxCloseWaitsForARunningDebouncedSync(t *testing.T) {
	src := &blockingSyncSource{entered: make(chan struct{})}
	x := newInteractions(slog.New(slog.DiscardHandler), src, nil, nil)
	src.x = x
	var fire func()
	x.afterFunc = func(_ time.Duration, f func()) stopper { fire = f; return time.NewTimer(time.Hour) }
	x.mu.Lock()
	x.ready = true
	x.mu.Unlock()
	x.commandsChanged()
	if fire == nil {
		t.Fatal("commandsChanged set no debounce timer")
	}
	go fire() // the timer fired
	select {
	case <-src.entered:
	case <-time.After(connWait):
		t.Fatal("the debounced sync never ran")
	}
	x.close()
	if !src.returned.Load() {
		t.Fatal("close returned while the debounced sync was still running")
	}
}

// TestIxCommandsReadySyncsAtOnce: the host's start registered the whole
// set, so CommandsReady syncs it at once, not after the debounce: one more
// full sync with no timer fired, and a debounced sync still pending from
// an earlier change is dropped (this sync covers it). Before READY it
// does nothing.
func TestIxCommandsReadySyncsAtOnce(t *testing.T) {
	timer := &ixTimer{}
	w := newIxWorld(t, ixKudos(&ixRecorder{}, make(chan struct{})), ixOptions{timer: timer, noOpen: true})
	w.x.commandsReady()
	if n := w.x.fullSyncs.Load(); n != 0 {
		t.Fatalf("full syncs before READY = %d, want 0", n)
	}
	w.open(t)
	ixEventually(t, "READY sync", func() bool { return w.x.fullSyncs.Load() == 1 })
	if _, err := w.mod.runtime().Interactions.AddCommand(sdk.CommandSpec{Name: "one", Description: "one", MinTier: sdk.TierMember}, ixNoop, nil); err != nil {
		t.Fatal(err)
	}
	w.x.commandsReady()
	ixEventually(t, "the sync at once", func() bool { return w.x.fullSyncs.Load() == 2 })
	if n := timer.fire(); n != 0 {
		t.Fatalf("%d debounced syncs still pending after CommandsReady, want none", n)
	}
	puts := w.f.RequestsTo(globalPUT)
	if len(puts) != 2 || !strings.Contains(string(puts[1].Body), `"name":"one"`) {
		t.Fatalf("global PUTs = %d, the last without /one", len(puts))
	}
}
