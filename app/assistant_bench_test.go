package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/internal/benchbase"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/hello"
	"github.com/kimiapp/kimi/modules/sdk"
)

// The assistant turn's benchmark (issue 25 item 21): a member's mention to
// the bot's answer through the pieces serve composes for it, wired as
// newAppliance wires them — a real SQLite file in b.TempDir(), the bot
// connected to the fake Discord, the module host running the bundled
// hello module, the assistant's provider built by newAssistant on a
// zero-latency llmfake model (as demo mode builds it on its scripted
// one), and the turns attached to the bot.

// Fixed ids of the benchmark's guild.
const (
	tbGuild    = "610000000000000001"
	tbIngest   = "620000000000000001" // where the ingest baseline's messages go
	tbChannel0 = 620000000000001000   // turn i's channel is tbChannel0+i
	tbUser0    = 640000000000000001   // the first member; the others follow
)

// tbMembers is how many members mention the bot at once, each waiting for
// its answer before its next mention.
const tbMembers = 8

// tbChannel is turn i's channel.
func tbChannel(i int) string { return strconv.FormatUint(tbChannel0+uint64(i), 10) }

// tbMaxTurns is the benchmark's admission, at once and per caller
// (serve's: assistant.DefaultMaxTurns, DefaultMaxTurnsPerUser). A turn
// holds its slot through its cleanup after the answer, which waits on
// discordgo's own limit of the channel's reactions (one request per
// 200 ms: ⏳ removed 200 ms after it was added, ✅ 200 ms later), so each
// turn holds one for at least 400 ms: serve's 16 would cap the appliance
// at 40 turns/s, and a member's 2 at 5 a second, whatever Kimi's own
// cost. At most tbMembers turns are ever before their answer.
const tbMaxTurns = 1 << 16

// tbAnswerRE is the scripted model's answer to turn N (tbReply).
var tbAnswerRE = regexp.MustCompile(`^answer turn-(\d+)$`)

// tbTurnRE finds the turn's number in the mention.
var tbTurnRE = regexp.MustCompile(`turn-(\d+)`)

// tbReply is the zero-latency model: hello_member first, then, after its
// result, "answer turn-N" (N from the caller's mention). A result other
// than hello's greeting answers "bad …", which fails the benchmark.
func tbReply(rec llmfake.Recorded) llmfake.Plan {
	var turn string
	for _, m := range rec.Body.Messages {
		if m.Role == "user" {
			if g := tbTurnRE.FindStringSubmatch(m.Content); g != nil {
				turn = g[1]
			}
		}
	}
	last := rec.Body.Last()
	if last.Role != "tool" {
		return llmfake.Plan{Calls: []llmfake.Call{{ID: "h1", Name: hello.ToolGreet, Args: []string{"{}"}}},
			Usage: llmfake.Usage{Prompt: 90, Completion: 5}}
	}
	if !strings.Contains(last.Content, "Hello, ") {
		return llmfake.Text("bad tool result for turn-" + turn + ": " + last.Content)
	}
	return llmfake.Plan{Content: []string{"answer ", "turn-" + turn}, Usage: llmfake.Usage{Prompt: 100, Completion: 2}}
}

// tbCounter is a module that counts the discord.message events of
// tbIngest's channel: the ingest baseline's end.
type tbCounter struct {
	n    atomic.Int64
	want atomic.Int64
	done chan struct{}
	// inflight holds the dispatched frames not yet handled, so the
	// module's lane (sdk.EventQueueSize) never drops one.
	inflight chan struct{}
}

const tbCounterName = "turnbench"

func (m *tbCounter) Migrations() []sdk.Migration { return nil }
func (m *tbCounter) Close(context.Context) error { return nil }
func (m *tbCounter) Start(_ context.Context, rt *sdk.Runtime) error {
	channel := tbID(tbIngest)
	_, err := rt.Events.Subscribe(sdk.TopicMessage, func(_ context.Context, ev sdk.Event) error {
		if p, ok := ev.Payload.(sdk.MessageEvent); !ok || p.Message.Ref.ChannelID != channel {
			return nil
		}
		<-m.inflight
		if m.n.Add(1) == m.want.Load() {
			m.done <- struct{}{}
		}
		return nil
	})
	return err
}

func (m *tbCounter) spec() sdk.Spec {
	return sdk.Spec{Name: tbCounterName, Version: "1.0", APIVersion: sdk.APIVersion,
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return m, nil },
		Permissions: sdk.Permissions{EventTopics: []string{sdk.TopicMessage}}}
}

// tbID parses a fixed id.
func tbID(s string) uint64 {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return v
}

// turnBench is the running composition and the turns' answers as the
// fake received them.
type turnBench struct {
	st      *store.Store
	fake    *fakediscord.Server
	turns   *assistant.Assistant
	counter *tbCounter
	db      *benchbase.Counter // the store's statements, commits and WAL frames
	users   []string

	// answered[i] receives when the fake stored turn i's answer.
	answered []chan time.Time
	failed   chan struct{} // closed at the first unexpected bot message
	failOnce sync.Once
	failMsg  atomic.Pointer[string]
}

func startTurnBench(b *testing.B, turns int) *turnBench {
	b.Helper()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	db := &benchbase.Counter{}
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), config.DBFile), store.Options{Logger: logger, WrapConnector: db.Wrap})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	if err := settings.SaveDiscordIntents(ctx, st, true, true, settings.Actor{Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	// The members' turns stay within the limits, whose reads still run.
	if _, err := settings.SaveAssistantLimits(ctx, st, settings.AssistantLimitsUpdate{UserTurnsPer10Min: "10000",
		UserDailyTokens: "1000000000", GuildDailyTokens: "1000000000", MonthlyTokens: "0"}, settings.Actor{Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	counter := &tbCounter{done: make(chan struct{}, 1), inflight: make(chan struct{}, sdk.EventQueueSize/2)}
	specs := []sdk.Spec{hello.Spec(), counter.spec()}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Modules: specs, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(guilds.Close)
	target := guildcfg.GuildTarget(tbID(tbGuild))
	doc, err := guilds.Document(ctx, target)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := guilds.Write(ctx, target, "---\nbot_active: true\n---\n", doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI, Name: "bench"}); err != nil {
		b.Fatal(err)
	}

	// Kimi's own cost: not the fake's buckets (50 requests a second per
	// route and channel by default), which Kimi's transport honours, nor
	// the fake's compression of every frame (about 1 ms each; the bot asks
	// for payload compression, discordgo's default), where Discord
	// compresses only large payloads.
	fake := fakediscord.New(fakediscord.Options{RouteLimit: 1 << 30, CompressMin: 4096})
	b.Cleanup(fake.Close)
	fake.AddGuild(fakediscord.GuildSpec{ID: tbGuild, Name: "bench guild"})
	for i := range turns {
		fake.AddChannel(fakediscord.ChannelSpec{ID: tbChannel(i), GuildID: tbGuild, Name: "talk-" + strconv.Itoa(i)})
	}
	fake.AddChannel(fakediscord.ChannelSpec{ID: tbIngest, GuildID: tbGuild, Name: "chatter"})
	w := &turnBench{st: st, fake: fake, counter: counter, db: db, failed: make(chan struct{})}
	for i := range tbMembers {
		id := strconv.FormatUint(tbUser0+uint64(i), 10)
		fake.AddUser(discordgo.User{ID: id, Username: fmt.Sprintf("member%d", i), GlobalName: fmt.Sprintf("Member %d", i)})
		fake.AddMember(tbGuild, id)
		w.users = append(w.users, id)
	}
	w.answered = make([]chan time.Time, turns)
	for i := range w.answered {
		w.answered[i] = make(chan time.Time, 1)
	}
	fake.OnMessageCreate(w.onBotMessage)

	model := llmfake.New(llmfake.Step{Repeat: true, Reply: tbReply})
	model.SetModels(llmfake.ModelEntry{ID: DemoModelID, OwnedBy: "kimi"})
	b.Cleanup(model.Close)
	provider, err := newAssistant(config.Config{Origins: map[string]string{}}, logger, st, model, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := provider.Reload(ctx); err != nil {
		b.Fatal(err)
	}

	bus := events.New(events.Options{Logger: logger})
	bot, err := newBot(ctx, st, guilds, bus, logger, config.Config{Origins: map[string]string{}}, fake)
	if err != nil {
		b.Fatal(err)
	}
	h, err := host.New(ctx, host.Options{Specs: specs, Store: st, Guilds: guilds, Logger: logger,
		Selection: []string{hello.Name, tbCounterName}, SelectionSet: true, Discord: bot, Bus: bus})
	if err != nil {
		b.Fatal(err)
	}
	bot.Attach(withServices{Host: h})
	w.turns, err = assistant.NewAssistant(assistant.AssistantOptions{
		Store: assistant.NewConversations(st, nil), Provider: provider, Tools: h, Guilds: guilds,
		Settings: st, Identity: bot.Identity, Logger: logger,
		MaxTurns: tbMaxTurns, MaxTurnsPerUser: tbMaxTurns,
	})
	if err != nil {
		b.Fatal(err)
	}
	bot.AttachAssistant(discord.ResponderPort{Assistant: w.turns, Policies: guilds})
	if err := bot.ApplyCapabilities(ctx); err != nil {
		b.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close(context.Background()) })
	bot.Start(ctx)
	b.Cleanup(func() { _ = bot.Close() })
	// Turns end before the bot closes, as in serve (the last Cleanup runs first).
	b.Cleanup(func() { _ = w.turns.Close(context.Background()) })
	rctx, cancel := context.WithTimeout(ctx, e2eWait)
	defer cancel()
	if err := bot.AwaitReady(rctx); err != nil {
		b.Fatal(err)
	}
	return w
}

// onBotMessage is the fake's hook on every message the bot creates: the
// status message ("Thinking..."), or a turn's answer, which signals its
// turn; anything else (the busy reply, a failure's text, a second answer)
// fails the run.
func (w *turnBench) onBotMessage(m *discordgo.Message) {
	at := time.Now()
	if m.Content == assistant.ThinkingText {
		return
	}
	if g := tbAnswerRE.FindStringSubmatch(m.Content); g != nil {
		if i, err := strconv.Atoi(g[1]); err == nil && i < len(w.answered) {
			select {
			case w.answered[i] <- at:
				return
			default: // a second answer to one turn
			}
		}
	}
	w.failOnce.Do(func() {
		text := m.Content
		w.failMsg.Store(&text)
		close(w.failed)
	})
}

// run posts turns [from, to): members members (at most tbMembers) each
// mention the bot and wait for its answer before the next. It returns the
// wall time and sets each turn's trigger→answer latency in lat.
func (w *turnBench) run(b *testing.B, members, from, to int, lat []time.Duration) time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bot := w.fake.BotID()
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	start := time.Now()
	for _, user := range w.users[:members] {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= to {
					return
				}
				t0 := time.Now()
				if _, err := w.fake.PostMessage(tbChannel(i), user, "<@"+bot+"> hello turn-"+strconv.Itoa(i)); err != nil {
					b.Error(err)
					return
				}
				select {
				case t1 := <-w.answered[i]:
					lat[i] = t1.Sub(t0)
				case <-w.failed:
					return
				case <-ctx.Done():
					b.Errorf("turn %d got no answer", i)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if p := w.failMsg.Load(); p != nil {
		b.Fatalf("the bot posted %q, not an answer", *p)
	}
	if b.Failed() {
		b.FailNow()
	}
	return elapsed
}

// tbIngestFrame is one MESSAGE_CREATE's d in tbIngest's channel from
// member user, mentioning no one (the assistant's gates drop it).
func tbIngestFrame(id uint64, user string) json.RawMessage {
	return json.RawMessage(`{"id":"` + strconv.FormatUint(id, 10) + `","type":0,"channel_id":"` + tbIngest + `","guild_id":"` + tbGuild +
		`","content":"a message of ordinary length, with a few words in it","timestamp":"2025-06-01T12:00:00.000000+00:00",` +
		`"edited_timestamp":null,"tts":false,"mention_everyone":false,"mentions":[],"mention_roles":[],"attachments":[],"embeds":[],` +
		`"pinned":false,"author":{"id":"` + user + `","username":"member0","global_name":"Member 0","discriminator":"0","avatar":null},` +
		`"member":{"roles":[],"joined_at":"2024-01-01T00:00:00.000000+00:00","nick":null,"deaf":false,"mute":false}}`)
}

// ingestRate dispatches n plain MESSAGE_CREATE frames through the same
// fake and bot to the counting module's handler (the path
// BenchmarkGatewayIngest measures in app/discord) and returns events/s.
func (w *turnBench) ingestRate(b *testing.B, n int) float64 {
	b.Helper()
	frames := make([]json.RawMessage, 256)
	for i := range frames {
		frames[i] = tbIngestFrame(1<<40+uint64(i), w.users[0])
	}
	c := w.counter
	c.n.Store(0)
	c.want.Store(int64(n))
	start := time.Now()
	for i := range n {
		c.inflight <- struct{}{}
		if err := w.fake.DispatchRaw(tbGuild, "MESSAGE_CREATE", frames[i%len(frames)]); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-c.done:
	case <-time.After(2 * time.Minute):
		b.Fatalf("%d of %d events delivered", c.n.Load(), n)
	}
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkAssistantTurn is a member's mention to the bot's answer as a
// user meets it: the mention posted to the fake Discord, its
// MESSAGE_CREATE through the real discordgo bot and the assistant's gates,
// the turn on real SQLite, a zero-latency model over loopback HTTP that
// calls hello_member (run by the real module host) and then answers, the
// answer posted back through Kimi's transport to the fake. Each turn is
// in a channel of its own (a channel's next ⏳ would wait for the last
// turn's reactions: tbMaxTurns), each member waits for its answer before
// its next mention, and an op is one turn. Reported:
//
//   - turns/s: b.N turns, tbMembers members at once; cpu-ms/turn (Linux),
//     allocs/op and B/op for them (the whole process: the fake Discord
//     and the fake model included; the CPU time, unlike turns/s, does not
//     depend on what else the machine runs); load-p50-ms and load-p99-ms
//     their trigger→answer;
//   - p50-ms and p99-ms: trigger→answer (the mention posted to the fake
//     holding the answer, OnMessageCreate) of tbLatencyTurns more turns
//     one at a time, after the timed ones: Kimi's own overhead without
//     the queueing of the load;
//   - in the same run, on the same store and bot: raw-commits/s
//     (benchbase.RawCommitRate) and ingest-events/s (plain MESSAGE_CREATEs
//     from the fake to a module's handler, BenchmarkGatewayIngest's path
//     in app/discord), and turns/s ÷ each (turns/raw-commit,
//     turns/ingest-event);
//   - statements/op, reads/op, commits/op and wal-frames/op of the timed
//     turns (benchbase.Counter on the store's connections).
//
// A turn makes seven commits of its own (open, begin, two usages, the tool call, the
// delivered map, the finish) and six REST calls (⏳, the status, the
// answer, the status deleted, ⏳ removed, ✅); the answer comes before the
// last three. The status edit for the tool is throttled
// (assistant.StatusInterval) and never sent.
func BenchmarkAssistantTurn(b *testing.B) {
	const warm = 4 * tbMembers // connections, caches, the first conversations
	w := startTurnBench(b, warm+b.N+tbLatencyTurns)
	lat := make([]time.Duration, warm+b.N+tbLatencyTurns)
	w.run(b, tbMembers, 0, warm, lat)

	b.ReportAllocs()
	cpu0 := processCPU()
	db0 := w.db.Counts()
	b.ResetTimer()
	elapsed := w.run(b, tbMembers, warm, warm+b.N, lat)
	b.StopTimer()
	cpu := processCPU() - cpu0
	w.db.Report(b, db0, b.N)
	w.run(b, 1, warm+b.N, warm+b.N+tbLatencyTurns, lat)
	// The last turns' cleanup ends before the baselines.
	ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
	defer cancel()
	if err := w.turns.Close(ctx); err != nil {
		b.Fatal(err)
	}
	tps := float64(b.N) / elapsed.Seconds()
	commits := benchbase.RawCommitRate(b, w.st, 1000)
	ingest := w.ingestRate(b, 5000)
	loaded, alone := lat[warm:warm+b.N], lat[warm+b.N:]
	b.ReportMetric(tps, "turns/s")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/turn")
	}
	b.ReportMetric(percentileMS(alone, 0.50), "p50-ms")
	b.ReportMetric(percentileMS(alone, 0.99), "p99-ms")
	b.ReportMetric(percentileMS(loaded, 0.50), "load-p50-ms")
	b.ReportMetric(percentileMS(loaded, 0.99), "load-p99-ms")
	b.ReportMetric(commits, "raw-commits/s")
	b.ReportMetric(ingest, "ingest-events/s")
	b.ReportMetric(tps/commits, "turns/raw-commit")
	b.ReportMetric(tps/ingest, "turns/ingest-event")
}

// tbLatencyTurns is how many turns BenchmarkAssistantTurn runs one at a
// time for its p50 and p99.
const tbLatencyTurns = 200

// percentileMS sorts d and returns its p-th percentile in milliseconds.
func percentileMS(d []time.Duration, p float64) float64 {
	slices.Sort(d)
	return float64(d[int(float64(len(d)-1)*p)].Microseconds()) / 1000
}
