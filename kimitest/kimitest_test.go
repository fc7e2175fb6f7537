package kimitest_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/kimitest"
	"github.com/kimiapp/kimi/modules/hello"
	"github.com/kimiapp/kimi/modules/sdk"
)

// dellog is a module as an author would write one, tested here only
// through kimitest's public API: a migration that adds a column to its
// table, a snapshot of the guild's invites in Start, and every message
// deletion logged to #random and stored.
type dellog struct {
	mu sync.Mutex
	rt *sdk.Runtime
}

func (m *dellog) spec() sdk.Spec {
	return sdk.Spec{Name: "dellog", Version: "1.0.0", APIVersion: sdk.APIVersion,
		Description: "Logs message deletions to #random.",
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return m, nil },
		Permissions: sdk.Permissions{
			EventTopics:    []string{sdk.TopicMessageDelete, sdk.TopicMessageBulkDelete},
			DiscordActions: []sdk.DiscordAction{sdk.ActionSendMessage, sdk.ActionFetchInvites},
		},
	}
}

func (m *dellog) Migrations() []sdk.Migration {
	return []sdk.Migration{
		{Name: "001_create", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
			_, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table("deleted")+` (message_id TEXT PRIMARY KEY);
				CREATE TABLE `+mc.Table("invites")+` (code TEXT PRIMARY KEY, uses INTEGER NOT NULL)`)
			return err
		}},
		{Name: "002_channel", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
			_, err := mc.Tx.ExecContext(ctx, `ALTER TABLE `+mc.Table("deleted")+` ADD COLUMN channel_id TEXT NOT NULL DEFAULT ''`)
			return err
		}},
	}
}

func (m *dellog) Start(ctx context.Context, rt *sdk.Runtime) error {
	m.mu.Lock()
	m.rt = rt
	m.mu.Unlock()
	guild, _ := strconv.ParseUint(kimitest.GuildID, 10, 64)
	invites, err := rt.Discord.FetchInvites(ctx, guild)
	if err != nil {
		return fmt.Errorf("dellog: snapshot the invites: %w", err)
	}
	if err := rt.Storage.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, inv := range invites {
			uses := 0
			if inv.Uses != nil {
				uses = *inv.Uses
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+rt.Storage.Table("invites")+` (code, uses) VALUES (?, ?)
				ON CONFLICT (code) DO UPDATE SET uses = excluded.uses`, inv.Code, uses); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("dellog: store the invites: %w", err)
	}
	log, _ := strconv.ParseUint(kimitest.ChannelID2, 10, 64)
	_, err = rt.Events.Subscribe(sdk.TopicMessageDelete, func(ctx context.Context, ev sdk.Event) error {
		del := ev.Payload.(sdk.MessageDeleteEvent)
		id, channel := strconv.FormatUint(del.Ref.MessageID, 10), strconv.FormatUint(del.Ref.ChannelID, 10)
		if err := rt.Storage.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO `+rt.Storage.Table("deleted")+` (message_id, channel_id) VALUES (?, ?)`, id, channel)
			return err
		}); err != nil {
			return err
		}
		_, err := rt.Discord.SendMessage(ctx, log, sdk.OutgoingMessage{Content: "deleted " + id + " in <#" + channel + ">"})
		return err
	})
	if err != nil {
		return err
	}
	_, err = rt.Events.Subscribe(sdk.TopicMessageBulkDelete, func(ctx context.Context, ev sdk.Event) error {
		bulk := ev.Payload.(sdk.MessageBulkDeleteEvent)
		ids := make([]string, 0, len(bulk.Refs))
		if err := rt.Storage.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			for _, ref := range bulk.Refs {
				id := strconv.FormatUint(ref.MessageID, 10)
				ids = append(ids, id)
				if _, err := tx.ExecContext(ctx, `INSERT INTO `+rt.Storage.Table("deleted")+` (message_id, channel_id) VALUES (?, ?)`,
					id, strconv.FormatUint(ref.ChannelID, 10)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		_, err := rt.Discord.SendMessage(ctx, log, sdk.OutgoingMessage{Content: "bulk deleted " + strings.Join(ids, ", ")})
		return err
	})
	return err
}

func (m *dellog) Close(context.Context) error { return nil }

// query reads the module's storage as the module itself would.
func (m *dellog) query(t *testing.T, q string, args ...any) *sql.Row {
	t.Helper()
	m.mu.Lock()
	rt := m.rt
	m.mu.Unlock()
	if rt == nil {
		t.Fatal("dellog was never started")
	}
	return rt.Storage.Reader().QueryRow(strings.ReplaceAll(strings.ReplaceAll(q, "{deleted}", rt.Storage.Table("deleted")), "{invites}", rt.Storage.Table("invites")), args...)
}

// TestModuleOnTheRealAppliance: the module's migrations pass the host's
// authorizer (the second adds a column), Start snapshots the invites the
// guild had before the bot connected (with their use counts), a deletion
// is logged to #random and stored, and all of it survives a restart on
// the same data directory, where the invites are read again.
func TestModuleOnTheRealAppliance(t *testing.T) {
	t.Parallel()
	m := &dellog{}
	var codes []string // the invite seeded in each start's fake
	a := kimitest.Start(t, kimitest.WithModules(m.spec()), kimitest.WithDiscord(func(f *fakediscord.Server) {
		inv, err := f.Session().ChannelInviteCreate(kimitest.ChannelID, discordgo.Invite{MaxUses: 5})
		if err != nil {
			t.Errorf("seed an invite: %v", err)
			return
		}
		if _, err := f.JoinWithInvite(kimitest.GuildID, kimitest.Cat.ID, inv.Code); err != nil {
			t.Errorf("use the invite: %v", err)
		}
		codes = append(codes, inv.Code)
	}))
	code := codes[0]
	if st := a.Module("dellog"); st.State != "running" {
		t.Fatalf("dellog is %s (%s), want running:\n%s", st.State, st.Reason, a.Log())
	}
	var uses int
	if err := m.query(t, `SELECT uses FROM {invites} WHERE code = ?`, code).Scan(&uses); err != nil || uses != 1 {
		t.Fatalf("the snapshot of %s: %d uses (%v), want Cat's 1", code, uses, err)
	}

	msg := a.Post(kimitest.ChannelID, kimitest.Ann, "a message that will go")
	a.Delete(kimitest.ChannelID, msg.ID)
	logged := a.WaitMessage(kimitest.ChannelID2, func(m *discordgo.Message) bool { return strings.Contains(m.Content, msg.ID) })
	if want := "deleted " + msg.ID + " in <#" + kimitest.ChannelID + ">"; logged.Content != want {
		t.Fatalf("logged %q, want %q", logged.Content, want)
	}
	var channel string
	if err := m.query(t, `SELECT channel_id FROM {deleted} WHERE message_id = ?`, msg.ID).Scan(&channel); err != nil || channel != kimitest.ChannelID {
		t.Fatalf("stored deletion: channel %q (%v), want %s", channel, err, kimitest.ChannelID)
	}

	// A moderator's purge of two messages (a third stays): one bulk
	// deletion, both ids logged and stored, in id order.
	first := a.Post(kimitest.ChannelID, kimitest.Ann, "purged one")
	second := a.Post(kimitest.ChannelID, kimitest.Ann, "purged two")
	kept := a.Post(kimitest.ChannelID, kimitest.Ann, "kept")
	a.BulkDelete(kimitest.ChannelID, kimitest.Bob, second.ID, first.ID)
	bulk := a.WaitMessage(kimitest.ChannelID2, func(m *discordgo.Message) bool { return strings.HasPrefix(m.Content, "bulk deleted") })
	if want := "bulk deleted " + first.ID + ", " + second.ID; bulk.Content != want {
		t.Fatalf("logged %q, want %q", bulk.Content, want)
	}
	var purged int
	if err := m.query(t, `SELECT count(*) FROM {deleted} WHERE message_id IN (?, ?, ?)`, first.ID, second.ID, kept.ID).Scan(&purged); err != nil || purged != 2 {
		t.Fatalf("stored %d of the purge's deletions (%v), want the two purged", purged, err)
	}
	if !slices.ContainsFunc(a.Messages(kimitest.ChannelID), func(m *discordgo.Message) bool { return m.ID == kept.ID }) {
		t.Fatal("the purge took the message it did not name")
	}

	// A restart on the same data directory: the module starts again on
	// its migrated tables, the stored row is still there, and the new
	// fake's invite (the same seed) is snapshot beside the first.
	a.Restart()
	if st := a.Module("dellog"); st.State != "running" {
		t.Fatalf("after the restart dellog is %s (%s)", st.State, st.Reason)
	}
	if err := m.query(t, `SELECT channel_id FROM {deleted} WHERE message_id = ?`, msg.ID).Scan(&channel); err != nil || channel != kimitest.ChannelID {
		t.Fatalf("after the restart: channel %q (%v)", channel, err)
	}
	if len(codes) != 2 || codes[1] == codes[0] {
		t.Fatalf("invites seeded: %v, want one per start", codes)
	}
	var n int
	if err := m.query(t, `SELECT count(*) FROM {invites} WHERE code IN (?, ?)`, codes[0], codes[1]).Scan(&n); err != nil || n != 2 {
		t.Fatalf("the snapshots hold %d of the two starts' invites (%v)", n, err)
	}
}

// pinger answers /ping with a button; a click on it answers with the
// button's part.
func pinger() sdk.Spec {
	return sdk.Spec{Name: "pinger", Version: "1.0.0", APIVersion: sdk.APIVersion, Commands: []string{"ping"},
		Create: func(sdk.LoadContext) (sdk.Module, error) { return pingerModule{}, nil }}
}

type pingerModule struct{}

func (pingerModule) Migrations() []sdk.Migration { return nil }
func (pingerModule) Close(context.Context) error { return nil }
func (pingerModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	if _, err := rt.Interactions.AddCommand(sdk.CommandSpec{Name: "ping", Description: "Answer with a button.", MinTier: sdk.TierMember,
		Options: []sdk.CommandOption{{Name: "word", Kind: sdk.OptionString, Description: "A word.", Required: true}}},
		func(ctx context.Context, in sdk.Interaction) error {
			w, _ := in.Options().String("word")
			return in.Respond(ctx, sdk.Response{Content: "pong: " + w, Components: []sdk.Component{
				sdk.ButtonSpec{Key: "again", Label: "Again", Style: sdk.ButtonPrimary, Parts: []string{w}}}})
		}, nil); err != nil {
		return err
	}
	_, err := rt.Interactions.RegisterComponent(sdk.ComponentButton, "again", func(ctx context.Context, in sdk.Interaction) error {
		parts := strings.Split(in.CustomID(), ":")
		return in.Respond(ctx, sdk.Response{Content: "again: " + parts[len(parts)-1], Ephemeral: true})
	}, sdk.ComponentOptions{MinTier: sdk.TierMember})
	return err
}

// TestSlashCommandAndButton: a member runs the module's command with a
// typed option (Command waits for its sync), the answer carries the
// module's button, and a click on it reaches the module's component
// handler, whose ephemeral answer only the clicker sees.
func TestSlashCommandAndButton(t *testing.T) {
	t.Parallel()
	a := kimitest.Start(t, kimitest.WithModules(pinger()))
	st := a.WaitResponse(a.Command(kimitest.ChannelID, kimitest.Ann, "ping", kimitest.StringOption("word", "hi")))
	if st.Response.Data == nil || st.Response.Data.Content != "pong: hi" {
		t.Fatalf("/ping answered %+v", st.Response)
	}
	if st.Original == nil || len(st.Original.Components) != 1 {
		t.Fatalf("/ping's message = %+v", st.Original)
	}
	btn, ok := st.Original.Components[0].(*discordgo.ActionsRow).Components[0].(*discordgo.Button)
	if !ok {
		t.Fatalf("/ping's component = %#v", st.Original.Components[0])
	}
	click := a.WaitResponse(a.Click(kimitest.ChannelID, st.Original.ID, kimitest.Bob, btn.CustomID))
	if d := click.Response.Data; d == nil || d.Content != "again: hi" || d.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("the click answered %+v", click.Response)
	}
}

// TestOperatorSwitchesTheGuildOff: the operator's server setup reaches
// the running appliance at once: with Kimi switched off in the guild, the
// module's command is refused by the host before the module sees it.
func TestOperatorSwitchesTheGuildOff(t *testing.T) {
	t.Parallel()
	a := kimitest.Start(t, kimitest.WithModules(pinger()))
	a.SetServerSetup("---\nbot_active: false\n---\n")
	if got := a.Document(kimitest.GuildSetup()); !strings.Contains(got, "bot_active: false") {
		t.Fatalf("server setup after the write: %q", got)
	}
	st := a.WaitResponse(a.Command(kimitest.ChannelID, kimitest.Ann, "ping", kimitest.StringOption("word", "hi")))
	if d := st.Response.Data; d == nil || d.Content != "Not allowed." || d.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("/ping in a switched-off guild answered %+v, want the host's ephemeral refusal", st.Response)
	}
}

// every posts "tick (<scheduled>)" to #general from a job that runs every d.
func every(d time.Duration) sdk.Spec {
	return sdk.Spec{Name: "every", Version: "1.0.0", APIVersion: sdk.APIVersion,
		Permissions: sdk.Permissions{DiscordActions: []sdk.DiscordAction{sdk.ActionSendMessage}},
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return everyModule{d}, nil }}
}

type everyModule struct{ d time.Duration }

func (everyModule) Migrations() []sdk.Migration { return nil }
func (everyModule) Close(context.Context) error { return nil }
func (m everyModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	general, _ := strconv.ParseUint(kimitest.ChannelID, 10, 64)
	if err := rt.Scheduler.Register("tick", func(ctx context.Context, run sdk.JobRun) error {
		_, err := rt.Discord.SendMessage(ctx, general, sdk.OutgoingMessage{Content: fmt.Sprintf("tick (%s)", run.ScheduledFor.UTC().Format(time.RFC3339))})
		return err
	}); err != nil {
		return err
	}
	return rt.Scheduler.RunEvery(ctx, "tick", m.d, "tick", nil, sdk.EveryOptions{})
}

// TestDailyJobOnTheControlledClock: a job every 24 hours runs at once
// (RunEvery's first run), then each time the controlled clock is moved a
// day on, scheduled for exactly that day — a week in milliseconds of the
// test's time, beside the appliance's own daily job (the assistant's
// retention), which follows the same clock.
func TestDailyJobOnTheControlledClock(t *testing.T) {
	t.Parallel()
	a := kimitest.Start(t, kimitest.WithModules(every(24*time.Hour)), kimitest.WithControlledClock())
	start := a.Now()
	a.WaitMessage(kimitest.ChannelID, tick(start))
	for day := 1; day <= 7; day++ {
		a.Advance(24 * time.Hour)
		a.WaitMessage(kimitest.ChannelID, tick(start.Add(time.Duration(day)*24*time.Hour)))
	}
	if n := ticks(a); n != 8 {
		t.Fatalf("%d runs in a week and a start, want 8", n)
	}
}

// TestAdvanceIsABarrier: two moves of the clock in a row each run what
// fell due before the next move: a job every 12 hours runs at the start,
// at +12h and at +24h, each counted from the run before.
func TestAdvanceIsABarrier(t *testing.T) {
	t.Parallel()
	a := kimitest.Start(t, kimitest.WithModules(every(12*time.Hour)), kimitest.WithControlledClock())
	start := a.Now()
	a.Advance(12 * time.Hour)
	// Advance returned once the run due by then was done: no wait needed.
	if n := ticks(a); n != 2 {
		t.Fatalf("%d runs right after the first Advance, want 2", n)
	}
	a.Advance(12 * time.Hour)
	for i := range 3 {
		a.WaitMessage(kimitest.ChannelID, tick(start.Add(time.Duration(i)*12*time.Hour)))
	}
	if n := ticks(a); n != 3 {
		t.Fatalf("%d runs, want 3", n)
	}
}

// tick matches the message of the run scheduled at at.
func tick(at time.Time) func(*discordgo.Message) bool {
	want := "tick (" + at.UTC().Format(time.RFC3339) + ")"
	return func(m *discordgo.Message) bool { return m.Content == want }
}

// ticks counts the job's messages in #general.
func ticks(a *kimitest.Appliance) int {
	n := 0
	for _, m := range a.Messages(kimitest.ChannelID) {
		if strings.HasPrefix(m.Content, "tick (") {
			n++
		}
	}
	return n
}

// weather asks api.weather.test, the one host it declares, for the sky
// and answers /weather with what it got, or with the error.
func weather() sdk.Spec {
	return sdk.Spec{Name: "weather", Version: "1.0.0", APIVersion: sdk.APIVersion, Commands: []string{"weather"},
		Permissions: sdk.Permissions{HTTPHosts: []sdk.HostRule{{Host: "api.weather.test"}}},
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return weatherModule{}, nil }}
}

type weatherModule struct{}

func (weatherModule) Migrations() []sdk.Migration { return nil }
func (weatherModule) Close(context.Context) error { return nil }
func (weatherModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	_, err := rt.Interactions.AddCommand(sdk.CommandSpec{Name: "weather", Description: "The sky.", MinTier: sdk.TierMember,
		Options: []sdk.CommandOption{{Name: "path", Kind: sdk.OptionString, Description: "Where to ask.", Required: true}}},
		func(ctx context.Context, in sdk.Interaction) error {
			path, _ := in.Options().String("path")
			resp, err := rt.HTTP.Get(ctx, "https://api.weather.test/"+path)
			if err != nil {
				var refused *sdk.HostNotAllowedError
				return in.Respond(ctx, sdk.Response{Content: fmt.Sprintf("error (host not allowed: %t): %v", errors.As(err, &refused), err)})
			}
			var v struct{ Sky string }
			if err := resp.JSON(&v); err != nil {
				return in.Respond(ctx, sdk.Response{Content: "error: " + err.Error()})
			}
			return in.Respond(ctx, sdk.Response{Content: "the sky is " + v.Sky})
		}, nil)
	return err
}

// TestModuleHTTPThroughTheHostsEgress: a module's declared host is served
// by the test's HTTPS server through the host's real egress: the answer
// arrives, and a redirect to a host the module did not declare is refused
// by the host's rules, not followed.
func TestModuleHTTPThroughTheHostsEgress(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/today", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"sky":"blue"}`)
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.test/today", http.StatusFound)
	})
	srv := kimitest.NewTLSServer(t, mux, "api.weather.test")
	a := kimitest.Start(t, kimitest.WithModules(weather()), kimitest.WithHTTPHost("api.weather.test", srv))
	ask := func(path string) string {
		st := a.WaitResponse(a.Command(kimitest.ChannelID, kimitest.Ann, "weather", kimitest.StringOption("path", path)))
		if st.Response.Data == nil {
			t.Fatalf("/weather %s answered %+v", path, st.Response)
		}
		return st.Response.Data.Content
	}
	if got := ask("today"); got != "the sky is blue" {
		t.Fatalf("/weather today: %q", got)
	}
	if got := ask("away"); !strings.HasPrefix(got, "error (host not allowed: true)") || !strings.Contains(got, "elsewhere.test") {
		t.Fatalf("/weather away: %q, want the redirect refused by the host's rules", got)
	}
	if m := a.Module("weather"); m.Metrics["http_requests"] < 2 {
		t.Fatalf("the module's health counts %v requests", m.Metrics["http_requests"])
	}
}

// TestToolOfferedAndCalledWithTheSpeakersContext: with the bundled hello
// module, a member's mention reaches the scripted model with hello's tool
// offered; the model calls it, the tool answers with the speaker's name
// from the trusted context (not from the model's arguments), and the
// model's last reply is the bot's answer in Discord.
func TestToolOfferedAndCalledWithTheSpeakersContext(t *testing.T) {
	t.Parallel()
	a := kimitest.Start(t, kimitest.WithBundled())
	const call = "call_hello_1"
	a.Model().SetSteps(
		llmfake.Step{Match: llmfake.Match{ToolResultFor: call}, Reply: func(r llmfake.Recorded) llmfake.Plan {
			// The host hands the model a tool's output as untrusted context.
			var out struct{ Result string }
			if err := json.Unmarshal([]byte(r.Body.Last().Content), &out); err != nil {
				return llmfake.Text("unreadable tool result: " + r.Body.Last().Content)
			}
			return llmfake.Text("the tool said: " + out.Result)
		}},
		llmfake.Step{Match: llmfake.Match{Contains: "greet me"}, Plan: llmfake.ToolCall(call, hello.ToolGreet, `{"name":"Mallory"}`)},
	)
	before := len(a.Model().Requests())
	trigger := a.Mention(kimitest.ChannelID, kimitest.Ann, "greet me")
	// The bot replies with a placeholder, then edits the answer into it.
	answer := a.WaitMessage(kimitest.ChannelID, func(m *discordgo.Message) bool {
		return m.MessageReference != nil && m.MessageReference.MessageID == trigger.ID && strings.HasPrefix(m.Content, "the tool said")
	})
	if want := "the tool said: Hello, Ann!"; answer.Content != want {
		t.Fatalf("the bot answered %q, want %q", answer.Content, want)
	}
	reqs := a.Model().Requests()[before:]
	if len(reqs) != 2 || !slices.Contains(reqs[0].Body.ToolNames(), hello.ToolGreet) {
		t.Fatalf("%d model requests; the first offered %v", len(reqs), reqs[0].Body.ToolNames())
	}
}

// later schedules one job an hour after it starts, by the host's clock
// (sdk.Runtime.Now), and posts the present it reads when the job runs.
func later() sdk.Spec {
	return sdk.Spec{Name: "later", Version: "1.0.0", APIVersion: sdk.APIVersion,
		Permissions: sdk.Permissions{DiscordActions: []sdk.DiscordAction{sdk.ActionSendMessage}},
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return laterModule{}, nil }}
}

type laterModule struct{}

func (laterModule) Migrations() []sdk.Migration { return nil }
func (laterModule) Close(context.Context) error { return nil }
func (laterModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	general, _ := strconv.ParseUint(kimitest.ChannelID, 10, 64)
	if err := rt.Scheduler.Register("later", func(ctx context.Context, run sdk.JobRun) error {
		_, err := rt.Discord.SendMessage(ctx, general, sdk.OutgoingMessage{Content: "later, at " + rt.Now().UTC().Format(time.RFC3339Nano)})
		return err
	}); err != nil {
		return err
	}
	return rt.Scheduler.RunAt(ctx, "later", rt.Now().Add(time.Hour), "later", nil)
}

// TestModuleReadsTheControlledClock: a module that schedules a job an
// hour from rt.Now and reads rt.Now when it runs sees the controlled
// clock, not the wall clock: nothing a minute before the hour, the run at
// exactly the hour.
func TestModuleReadsTheControlledClock(t *testing.T) {
	t.Parallel()
	a := kimitest.Start(t, kimitest.WithModules(later()), kimitest.WithControlledClock())
	start := a.Now()
	a.Advance(time.Hour - time.Minute)
	if ran := laterRuns(a); len(ran) != 0 {
		t.Fatalf("the job ran before its hour: %q", ran)
	}
	a.Advance(time.Minute)
	want := "later, at " + start.Add(time.Hour).UTC().Format(time.RFC3339Nano)
	if ran := laterRuns(a); len(ran) != 1 || ran[0] != want {
		t.Fatalf("after the hour: %q, want [%q]", ran, want)
	}
}

func laterRuns(a *kimitest.Appliance) []string {
	var out []string
	for _, m := range a.Messages(kimitest.ChannelID) {
		if strings.HasPrefix(m.Content, "later, at ") {
			out = append(out, m.Content)
		}
	}
	return out
}

// TestScheduledTaskOnTheControlledClock: a daily task the operator
// creates through the admin's /tasks form posts when the controlled clock
// reaches its time of day, and again a day later — neither sooner.
func TestScheduledTaskOnTheControlledClock(t *testing.T) {
	t.Parallel()
	a := kimitest.Start(t, kimitest.WithControlledClock(), kimitest.WithServerSetup(kimitest.DefaultServerSetup[:len(kimitest.DefaultServerSetup)-len("---\n")]+
		"scheduled_tasks:\n  enabled: true\n  min_tier: member\n  destinations: ["+kimitest.ChannelID+"]\n---\n"))
	at := a.Now().UTC().Add(2 * time.Hour).Truncate(time.Minute)
	admin := a.Admin()
	admin.Get("/tasks/new")
	code, body, loc := admin.Post("/tasks", url.Values{
		"guild": {kimitest.GuildID}, "name": {"Standup"}, "owner": {kimitest.Bob.ID},
		"destinations": {kimitest.ChannelID}, "content": {"Standup time"},
		"kind": {"daily"}, "time": {at.Format("15:04")}, "timezone": {"UTC"}, "late": {"catch_up"},
	})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/tasks/") {
		t.Fatalf("POST /tasks = %d to %q:\n%s", code, loc, body)
	}
	posts := func() int {
		n := 0
		for _, m := range a.Messages(kimitest.ChannelID) {
			if m.Content == "Standup time" && m.Author != nil && m.Author.ID == a.BotID() {
				n++
			}
		}
		return n
	}
	a.Advance(at.Sub(a.Now()) - time.Minute)
	if n := posts(); n != 0 {
		t.Fatalf("%d posts a minute before the task's time", n)
	}
	a.Advance(time.Minute)
	a.WaitFor("the task's first post", func() bool { return posts() == 1 })
	// Advance settles the due jobs, the task's post among them: a day less
	// a minute later there is still the one post — a cadence firing sooner
	// (twice a day, hourly) would have been caught up by then, once, late:
	// catch_up, not skip, so that no missed occurrence goes unseen — and a
	// minute after that, the next.
	a.Advance(24*time.Hour - time.Minute)
	if n := posts(); n != 1 {
		t.Fatalf("%d posts a minute before the task's second day, want 1", n)
	}
	a.Advance(time.Minute)
	a.WaitFor("the task's second post", func() bool { return posts() == 2 })
}

// poller answers /poll with a select menu; a pick opens a modal asking
// why, and its submit answers with the pick and the reason.
func poller() sdk.Spec {
	return sdk.Spec{Name: "poller", Version: "1.0.0", APIVersion: sdk.APIVersion, Commands: []string{"poll"},
		Create: func(sdk.LoadContext) (sdk.Module, error) { return pollerModule{}, nil }}
}

type pollerModule struct{}

func (pollerModule) Migrations() []sdk.Migration { return nil }
func (pollerModule) Close(context.Context) error { return nil }
func (pollerModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	if _, err := rt.Interactions.AddCommand(sdk.CommandSpec{Name: "poll", Description: "Pick a colour.", MinTier: sdk.TierMember},
		func(ctx context.Context, in sdk.Interaction) error {
			return in.Respond(ctx, sdk.Response{Content: "Pick one", Components: []sdk.Component{sdk.SelectSpec{Key: "colour",
				Options: []sdk.SelectOption{{Label: "Red", Value: "red"}, {Label: "Blue", Value: "blue"}}}}})
		}, nil); err != nil {
		return err
	}
	if _, err := rt.Interactions.RegisterComponent(sdk.ComponentSelect, "colour", func(ctx context.Context, in sdk.Interaction) error {
		return in.ShowModal(ctx, sdk.ModalSpec{Key: "why", Title: "Why this one?", Parts: in.Values(),
			Inputs: []sdk.TextInputSpec{{Key: "reason", Label: "Reason"}}})
	}, sdk.ComponentOptions{MinTier: sdk.TierMember}); err != nil {
		return err
	}
	_, err := rt.Interactions.RegisterComponent(sdk.ComponentModal, "why", func(ctx context.Context, in sdk.Interaction) error {
		parts := strings.Split(in.CustomID(), ":")
		return in.Respond(ctx, sdk.Response{Content: parts[len(parts)-1] + ", because " + in.TextValues()["reason"]})
	}, sdk.ComponentOptions{MinTier: sdk.TierMember})
	return err
}

// TestSelectAndModal: a member picks in the module's select menu, which
// opens the module's modal; the submitted reason reaches the modal's
// handler with the pick carried in its custom id.
func TestSelectAndModal(t *testing.T) {
	t.Parallel()
	a := kimitest.Start(t, kimitest.WithModules(poller()))
	poll := a.WaitResponse(a.Command(kimitest.ChannelID, kimitest.Ann, "poll"))
	if poll.Original == nil || len(poll.Original.Components) != 1 {
		t.Fatalf("/poll's message = %+v", poll.Original)
	}
	menu, ok := poll.Original.Components[0].(*discordgo.ActionsRow).Components[0].(*discordgo.SelectMenu)
	if !ok {
		t.Fatalf("/poll's component = %#v", poll.Original.Components[0])
	}
	pick := a.WaitResponse(a.Pick(kimitest.ChannelID, poll.Original.ID, kimitest.Ann, menu.CustomID, "blue"))
	if pick.Response.Type != discordgo.InteractionResponseModal || pick.Response.Data == nil || pick.Response.Data.Title != "Why this one?" {
		t.Fatalf("the pick answered %+v, want the modal", pick.Response)
	}
	submit := a.WaitResponse(a.SubmitModal(pick.ID, map[string]string{"reason": "the sky"}))
	if d := submit.Response.Data; d == nil || d.Content != "blue, because the sky" {
		t.Fatalf("the submit answered %+v", submit.Response)
	}
}

// greeter answers /greet with its deployment setting "greeting".
func greeter() sdk.Spec {
	return sdk.Spec{Name: "greeter", Version: "1.0.0", APIVersion: sdk.APIVersion, Commands: []string{"greet"},
		Settings: &sdk.SettingsDefinition{Fields: []sdk.SettingField{{Name: "greeting", Kind: sdk.SettingString, Default: "hello"}}},
		Create: func(lc sdk.LoadContext) (sdk.Module, error) {
			return greeterModule{greeting: lc.Settings().String("greeting")}, nil
		}}
}

type greeterModule struct{ greeting string }

func (greeterModule) Migrations() []sdk.Migration { return nil }
func (greeterModule) Close(context.Context) error { return nil }
func (m greeterModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	_, err := rt.Interactions.AddCommand(sdk.CommandSpec{Name: "greet", Description: "Greet.", MinTier: sdk.TierMember},
		func(ctx context.Context, in sdk.Interaction) error {
			return in.Respond(ctx, sdk.Response{Content: m.greeting})
		}, nil)
	return err
}

// TestOperatorSelectsAndConfiguresModules: the operator's deployment
// settings reach the module at its restart; a deselected module is not
// run (its neighbour is), also after a restart of the appliance, and it
// runs again, on its saved settings, once selected.
func TestOperatorSelectsAndConfiguresModules(t *testing.T) {
	t.Parallel()
	a := kimitest.Start(t, kimitest.WithModules(greeter(), pinger()))
	greet := func() string {
		t.Helper()
		r := a.WaitResponse(a.Command(kimitest.ChannelID, kimitest.Ann, "greet"))
		if r.Response.Data == nil {
			t.Fatalf("/greet answered %+v", r.Response)
		}
		return r.Response.Data.Content
	}
	if got := greet(); got != "hello" {
		t.Fatalf("/greet = %q, want the default", got)
	}
	a.SaveModuleSettings("greeter", map[string]string{"greeting": "good morning"})
	if got := greet(); got != "good morning" {
		t.Fatalf("/greet after the save = %q", got)
	}

	a.SetModuleEnabled("greeter", false)
	if st := a.Module("greeter"); st.State != host.StateNotSelected {
		t.Fatalf("greeter deselected is %s, want %s", st.State, host.StateNotSelected)
	}
	if st := a.Module("pinger"); st.State != "running" {
		t.Fatalf("pinger beside it is %s (%s)", st.State, st.Reason)
	}
	a.Restart()
	if st := a.Module("greeter"); st.State != host.StateNotSelected {
		t.Fatalf("greeter deselected is %s after a restart", st.State)
	}
	a.SetModuleEnabled("greeter", true)
	if st := a.Module("greeter"); st.State != "running" {
		t.Fatalf("greeter selected again is %s (%s)", st.State, st.Reason)
	}
	if got := greet(); got != "good morning" {
		t.Fatalf("/greet selected again = %q, want the saved setting", got)
	}
}

// worrier reports itself degraded, without a word to Discord, once
// release is closed.
func worrier(release <-chan struct{}) sdk.Spec {
	return sdk.Spec{Name: "worrier", Version: "1.0.0", APIVersion: sdk.APIVersion,
		Create: func(sdk.LoadContext) (sdk.Module, error) { return worrierModule{release}, nil }}
}

type worrierModule struct{ release <-chan struct{} }

func (worrierModule) Migrations() []sdk.Migration { return nil }
func (worrierModule) Close(context.Context) error { return nil }
func (m worrierModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	go func() {
		<-m.release
		rt.Health.Report(sdk.HealthDegraded, "the upstream is slow", nil)
	}()
	return nil
}

// TestWaitForSeesAModulesHealth: WaitFor re-checks a condition on a
// module's health when the health changes, though Discord sees nothing
// then (the wait begins once the bot's start-up traffic, its command
// sync, is over).
func TestWaitForSeesAModulesHealth(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	a := kimitest.Start(t, kimitest.WithModules(worrier(release)), kimitest.WithWait(10*time.Second))
	a.WaitFor("the command sync", func() bool { return len(a.Discord().RequestsTo("PUT /applications/{app}/commands")) > 0 })
	first := true
	a.WaitFor("the module degraded", func() bool {
		if first { // the change comes after the first check, so only a re-check sees it
			first = false
			close(release)
			return false
		}
		st := a.Module("worrier")
		return st.Health.State == sdk.HealthDegraded && st.Health.Detail == "the upstream is slow"
	})
}

// TestStartReturnsWithTheBotConnected: Start returns once the bot is
// connected and has the seeded guild, also when no module runs (the
// module host then has nothing to wait for Discord for) and the bot's
// connection comes late: the admin shows the bot connected in the guild
// at once.
func TestStartReturnsWithTheBotConnected(t *testing.T) {
	t.Parallel()
	a := kimitest.Start(t, kimitest.WithDiscord(func(f *fakediscord.Server) {
		// The bot's first call, for the gateway's address, is held back.
		f.InjectFault(fakediscord.Fault{Route: "GET /gateway/bot", Status: http.StatusTooManyRequests, RetryAfter: 300 * time.Millisecond})
	}))
	code, body := a.Admin().Get("/discord")
	if code != http.StatusOK || !strings.Contains(body, `data-state="connected"`) || !strings.Contains(body, `data-testid="discord-guild-`+kimitest.GuildID+`"`) {
		t.Fatalf("right after Start /discord = %d, not connected in the seeded guild", code)
	}
}
