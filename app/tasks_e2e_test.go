package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/events"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/host"
	"github.com/kimiapp/kimi/app/internal/benchbase"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// The scheduled tasks end to end (issue 16, Proof): the pieces serve
// composes, wired as serve wires them — a real SQLite file, the demo
// guild on the fake Discord, the bot connected to it, the module host
// running the kudos module (its results subscriber pointed at the demo
// guild, as the demo does), the results outbox, and the tasks' service,
// deliverer and runner on the host's durable scheduler (newTasks).

// postRoute is the fake's route of a message create.
const postRoute = "POST /channels/{channel}/messages"

// e2eWait bounds the in-process compositions' waits (generous: the
// machine is shared); a wait returns as soon as what it waits for happens.
const e2eWait = 60 * time.Second

// taskE2E is the running composition.
type taskE2E struct {
	st      *store.Store
	db      *benchbase.Counter // what the store's connections did (BenchmarkTaskPublish)
	guilds  *guildcfg.Service
	fake    *fakediscord.Server
	demo    fakediscord.DemoGuild
	bot     *discord.Bot
	host    *host.Host
	res     *results.Service
	parts   *taskParts
	logger  *slog.Logger
	guild   uint64
	owner   uint64 // the demo guild's owner
	member  uint64 // cy: the listed user the posts may ping
	other   uint64 // bo: a member who is not listed
	general uint64 // the demo's #general
}

func startTaskE2E(tb testing.TB) *taskE2E {
	tb.Helper()
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	db := &benchbase.Counter{}
	st, err := store.Open(ctx, filepath.Join(tb.TempDir(), "kimi.db"), store.Options{Logger: logger, WrapConnector: db.Wrap})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	specs := []sdk.Spec{kudos.Spec()}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Modules: specs, Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(guilds.Close)
	fake := fakediscord.New(fakediscord.Options{})
	tb.Cleanup(fake.Close)
	demo := fake.SeedDemo()
	if first, err := prepareDemo(ctx, st, guilds, demo); err != nil || !first {
		tb.Fatalf("prepareDemo = %v, %v", first, err)
	}
	bus := events.New(events.Options{Logger: logger})
	bot, err := newBot(ctx, st, guilds, bus, logger, config.Config{Origins: map[string]string{}}, fake)
	if err != nil {
		tb.Fatal(err)
	}
	access, poster := newTaskAccess(st, guilds, bot)
	res, err := results.New(results.Options{Store: st, Logger: logger, Producer: access})
	if err != nil {
		tb.Fatal(err)
	}
	extra := []string{sdk.CapScheduledResults}
	caps := withCapabilities(host.Advertised(), extra...)
	h, err := host.New(ctx, host.Options{Specs: specs, Store: st, Guilds: guilds, Logger: logger,
		Selection: []string{kudos.Name}, SelectionSet: true, Discord: bot, Bus: bus, Results: res, Capabilities: &caps})
	if err != nil {
		tb.Fatal(err)
	}
	if err := prepareDemoModules(ctx, h, demo); err != nil {
		tb.Fatal(err)
	}
	bot.Attach(withServices{Host: h, extra: extra})
	if err := bot.ApplyCapabilities(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = h.Close(context.Background()) })
	bot.Start(ctx)
	tb.Cleanup(func() { _ = bot.Close() })
	parts, err := newTasks(st, res, guilds, poster, access, h.Scheduler(), logger, nil)
	if err != nil {
		tb.Fatal(err)
	}
	res.Start()
	tb.Cleanup(func() { _ = res.Close(context.Background()) })
	w := &taskE2E{st: st, db: db, guilds: guilds, fake: fake, demo: demo, bot: bot, host: h, res: res, parts: parts, logger: logger}
	w.guild = taskID(tb, demo.GuildID)
	w.owner = taskID(tb, fake.Guild(demo.GuildID).OwnerID)
	w.member = taskID(tb, demo.Members[2])
	w.other = taskID(tb, demo.Members[1])
	w.general = taskID(tb, demo.Channels[1])
	if err := parts.runner.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = w.parts.runner.Close(context.Background()) })
	// Kudos subscribed to the demo guild's results at its Start.
	subs, err := res.Subscriptions(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if !slices.ContainsFunc(subs, func(s results.Subscription) bool { return s.Module == kudos.Name && s.GuildID == w.guild }) {
		tb.Fatalf("kudos is not subscribed to the demo guild's results: %+v (host: %+v)", subs, h.Modules())
	}
	// The bot can post in the demo guild (GUILD_CREATE came).
	for deadline := time.Now().Add(e2eWait); ; time.Sleep(5 * time.Millisecond) {
		if ok, _ := discord.NewPoster(bot).CanPost(ctx, w.guild, tasks.BotUser, w.general, 0); ok && bot.Status().State == discord.StateConnected {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the bot never could post in the demo guild: %+v", bot.Status())
		}
	}
	return w
}

func taskID(tb testing.TB, s string) uint64 {
	tb.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// restartRunner closes the runner and starts a new one (a new service,
// deliverer and runner on the same store and scheduler, as a restart
// builds them): its Start recovers.
func (w *taskE2E) restartRunner(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	if err := w.parts.runner.Close(ctx); err != nil {
		tb.Fatal(err)
	}
	parts, err := newTasks(w.st, w.res, w.guilds, w.parts.poster, w.parts.access, w.host.Scheduler(), w.logger, nil)
	if err != nil {
		tb.Fatal(err)
	}
	w.parts = parts
	if err := parts.runner.Start(ctx); err != nil {
		tb.Fatal(err)
	}
}

// longTemplate is a template of three paragraphs of about 1,500 code
// points each (three chunks: every cut at a paragraph break), the first
// mentioning the listed user, a member who is not listed, and @everyone.
func (w *taskE2E) longTemplate() string {
	var b strings.Builder
	for i := 1; i <= 3; i++ {
		if i > 1 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "Part %d.", i)
		if i == 1 {
			fmt.Fprintf(&b, " Hello <@%d> and <@%d>, @everyone and @here.", w.member, w.other)
		}
		b.WriteString(strings.Repeat(fmt.Sprintf(" part%d", i), 250))
	}
	return b.String()
}

// neutralized is s with @everyone and @here made inert (a zero-width
// joiner after the @), as every chunk must carry them.
func neutralized(s string) string {
	return strings.NewReplacer("@everyone", "@\u200deveryone", "@here", "@\u200dhere").Replace(s)
}

// createTask creates a daily task (it runs by RunNow) through the admin's
// facade.
func (w *taskE2E) createTask(tb testing.TB, name, template string, embed *tasks.Embed) tasks.Task {
	tb.Helper()
	task, err := w.parts.admin.Create(context.Background(), "operator", tasks.Definition{GuildID: w.guild, Name: name, OwnerID: w.owner,
		Schedule: map[string]string{tasks.FieldKind: "daily", tasks.FieldTime: "09:00"},
		Template: template, Embed: embed, Destinations: []uint64{w.general}, MentionUsers: []uint64{w.member}})
	if err != nil {
		tb.Fatal(err)
	}
	return task
}

// runNow runs task taskID now, as the operator's Run now does, and
// returns the run once it ended.
func (w *taskE2E) runNow(tb testing.TB, taskID string) (string, tasks.Run) {
	tb.Helper()
	runID, err := w.parts.admin.RunNow(context.Background(), "operator", taskID)
	if err != nil {
		tb.Fatal(err)
	}
	return runID, w.waitRun(tb, taskID, runID)
}

// waitRun waits until run runID of task taskID ended (completed, failed
// or uncertain) and returns it.
func (w *taskE2E) waitRun(tb testing.TB, taskID, runID string) tasks.Run {
	tb.Helper()
	for deadline := time.Now().Add(e2eWait); ; time.Sleep(5 * time.Millisecond) {
		runs, err := w.parts.service.Runs(context.Background(), taskID, 50)
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range runs {
			if r.ID == runID && (r.Status == tasks.RunCompleted || r.Status == tasks.RunFailed || r.Status == tasks.RunUncertain) {
				return r
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("run %s did not end: %+v", runID, runs)
		}
	}
}

// sentBody is the JSON body of a message create the bot sent.
type sentBody struct {
	Content         string `json:"content"`
	AllowedMentions *struct {
		Parse []string `json:"parse"`
		Users []string `json:"users"`
		Roles []string `json:"roles"`
	} `json:"allowed_mentions"`
	Embeds []json.RawMessage `json:"embeds"`
}

// created returns the bodies of the message creates of the demo's
// #general the fake answered 200, in order, from request from on.
func (w *taskE2E) created(tb testing.TB, from int) []sentBody {
	tb.Helper()
	var out []sentBody
	reqs := w.fake.RequestsTo(postRoute)
	for _, r := range reqs[min(from, len(reqs)):] {
		if r.Status != http.StatusOK || !strings.Contains(r.Path, "/channels/"+w.demo.Channels[1]+"/") {
			continue
		}
		var b sentBody
		if err := json.Unmarshal(r.Body, &b); err != nil {
			tb.Fatalf("a message create's body %q: %v", r.Body, err)
		}
		out = append(out, b)
	}
	return out
}

// countContent is how many of #general's messages have content c.
func (w *taskE2E) countContent(c string) int {
	n := 0
	for _, m := range w.fake.Messages(w.demo.Channels[1]) {
		if m.Content == c {
			n++
		}
	}
	return n
}

// checkMentions fails unless b's allowed_mentions parse nothing and list
// exactly the user w.member (no roles).
func (w *taskE2E) checkMentions(tb testing.TB, i int, b sentBody) {
	tb.Helper()
	am := b.AllowedMentions
	if am == nil || am.Parse == nil || len(am.Parse) != 0 || len(am.Roles) != 0 || len(am.Users) != 1 || am.Users[0] != strconv.FormatUint(w.member, 10) {
		tb.Fatalf("chunk %d's allowed_mentions = %+v, want parse [] and users [%d] only", i+1, am, w.member)
	}
}

// acknowledged waits until kudos acknowledged the results notification of
// run runID, and returns how many result receipts kudos' table holds.
func (w *taskE2E) acknowledged(tb testing.TB, runID string) int {
	tb.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(e2eWait); ; time.Sleep(5 * time.Millisecond) {
		var status string
		err := w.st.Reader().QueryRowContext(ctx, `SELECT status FROM kimi_result_notifications WHERE run_id = ? AND module = ?`, runID, kudos.Name).Scan(&status)
		if err == nil && status == "acknowledged" {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("kudos' notification of run %s: %q, %v", runID, status, err)
		}
	}
	var table string
	if err := w.st.Reader().QueryRowContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%kudos%result_receipts'`).Scan(&table); err != nil {
		tb.Fatalf("kudos' receipts table: %v", err)
	}
	var n int
	if err := w.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM "`+table+`"`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestTaskE2EPublishes: a task in the demo guild whose template makes
// three chunks, with an embed, a mention of its listed user, of a member
// who is not listed and an @everyone, run now, is posted by the bot to
// the fake's #general: the chunks arrive in order and concatenate to the
// template with @everyone and @here neutralised, every request's
// allowed_mentions parses nothing and lists exactly the listed user, the
// embed is on the first chunk only; the run completes with its post rows
// sent as the fake's messages, and kudos receives and acknowledges the
// result (its receipt recorded).
func TestTaskE2EPublishes(t *testing.T) {
	w := startTaskE2E(t)
	ctx := context.Background()
	tmpl := w.longTemplate()
	task := w.createTask(t, "Long digest", tmpl, &tasks.Embed{Title: "Digest", Description: "the day's digest"})
	before := len(w.fake.RequestsTo(postRoute))
	runID, run := w.runNow(t, task.ID)
	if run.Status != tasks.RunCompleted {
		t.Fatalf("run %s ended %s: %s", runID, run.Status, run.Detail)
	}

	sent := w.created(t, before)
	if len(sent) < 3 {
		t.Fatalf("%d chunks posted, want at least 3", len(sent))
	}
	var joined strings.Builder
	for i, b := range sent {
		joined.WriteString(b.Content)
		w.checkMentions(t, i, b)
		if (len(b.Embeds) == 1) != (i == 0) || len(b.Embeds) > 1 {
			t.Fatalf("chunk %d carries %d embeds; want the embed on the first chunk only", i+1, len(b.Embeds))
		}
	}
	if want := neutralized(tmpl); joined.String() != want {
		t.Fatalf("the chunks concatenate to\n%q\nwant\n%q", joined.String(), want)
	}
	if strings.Contains(joined.String(), "@everyone") || strings.Contains(joined.String(), "@here") {
		t.Fatal("a chunk carries a live @everyone or @here")
	}
	if !strings.Contains(string(sent[0].Embeds[0]), `"title":"Digest"`) {
		t.Fatalf("the first chunk's embed = %s", sent[0].Embeds[0])
	}

	posts, err := w.parts.service.RunPosts(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	msgs := w.fake.Messages(w.demo.Channels[1])
	if len(posts) != len(sent) || len(msgs) < len(sent) {
		t.Fatalf("%d post rows, %d chunks sent, %d messages in #general", len(posts), len(sent), len(msgs))
	}
	msgs = msgs[len(msgs)-len(sent):]
	for i, p := range posts {
		m := msgs[i]
		if p.Status != tasks.PostSent || p.Attempts != 1 || strconv.FormatUint(p.MessageID, 10) != m.ID || m.Content != sent[i].Content {
			t.Fatalf("post %d = %+v; the fake's message %d is %s %q", i+1, p, i+1, m.ID, m.Content)
		}
		if m.MentionEveryone || (i == 0 && (len(m.Mentions) != 1 || m.Mentions[0].ID != strconv.FormatUint(w.member, 10))) {
			t.Fatalf("message %d pinged everyone %v, users %+v; want only the listed user on the first", i+1, m.MentionEveryone, m.Mentions)
		}
	}
	if n := w.acknowledged(t, runID); n != 1 {
		t.Fatalf("kudos holds %d result receipts, want 1", n)
	}
}

// TestTaskE2ERetries429: Discord answering the first post's create with
// 429 until Kimi's transport gives up (its maxAttempts sends) has the
// deliverer retry that row: the run completes, the row with attempts 2,
// the message posted once, and kudos gets the result.
func TestTaskE2ERetries429(t *testing.T) {
	w := startTaskE2E(t)
	ctx := context.Background()
	const text = "A short digest"
	task := w.createTask(t, "Rate limited", text, nil)
	w.fake.InjectFault(fakediscord.Fault{Route: postRoute, Status: http.StatusTooManyRequests, RetryAfter: time.Millisecond, Times: 4})
	runID, run := w.runNow(t, task.ID)
	if run.Status != tasks.RunCompleted {
		t.Fatalf("run %s ended %s: %s", runID, run.Status, run.Detail)
	}
	var limited int
	for _, r := range w.fake.RequestsTo(postRoute) {
		if r.Status == http.StatusTooManyRequests {
			limited++
		}
	}
	posts, err := w.parts.service.RunPosts(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if limited != 4 || len(posts) != 1 || posts[0].Status != tasks.PostSent || posts[0].Attempts != 2 {
		t.Fatalf("%d creates answered 429; posts %+v; want 4 and one post sent at attempts 2", limited, posts)
	}
	if n := w.countContent(text); n != 1 {
		t.Fatalf("#general holds %q %d times, want once", text, n)
	}
	if n := w.acknowledged(t, runID); n != 1 {
		t.Fatalf("kudos holds %d result receipts, want 1", n)
	}
}

// TestTaskE2EUncertainNotReposted: Discord creating the second chunk's
// message and then answering 500 marks that post uncertain, the run
// uncertain and the task needs_attention; the third chunk is not posted
// and no result is enqueued. A restart of the runner and a second
// delivery of the run post nothing (the chunk's message is in #general
// once). After the operator checked Discord (and deleted the message the
// 500 hid, to keep the order) RetryPost posts the rest: the run
// completes, each chunk once, in order, the task active again, and kudos
// gets the result.
func TestTaskE2EUncertainNotReposted(t *testing.T) {
	w := startTaskE2E(t)
	ctx := context.Background()
	tmpl := w.longTemplate()
	task := w.createTask(t, "Uncertain digest", tmpl, nil)
	w.fake.InjectFault(fakediscord.Fault{Route: postRoute, Status: http.StatusInternalServerError, AfterHandling: true, Skip: 1})
	runID, run := w.runNow(t, task.ID)
	if run.Status != tasks.RunUncertain {
		t.Fatalf("run %s ended %s (%s), want uncertain", runID, run.Status, run.Detail)
	}
	posts, err := w.parts.service.RunPosts(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(posts) != 3 || posts[0].Status != tasks.PostSent || posts[1].Status != tasks.PostUncertain || posts[2].Status != tasks.PostPending {
		t.Fatalf("posts = %+v; want sent, uncertain, pending", posts)
	}
	got, err := w.parts.service.Get(ctx, task.ID)
	if err != nil || got.State != tasks.StateNeedsAttention {
		t.Fatalf("task = %+v, %v; want needs_attention", got, err)
	}
	second, third := posts[1].Content, posts[2].Content
	creates := len(w.fake.RequestsTo(postRoute))
	if w.countContent(second) != 1 || w.countContent(third) != 0 || creates != 2 {
		t.Fatalf("#general holds the second chunk %d times, the third %d times, after %d creates; want 1, 0, 2",
			w.countContent(second), w.countContent(third), creates)
	}

	// A restart (its recovery) and a second delivery of the run post
	// nothing.
	w.restartRunner(t)
	d, err := tasks.NewDeliverer(w.parts.service, tasks.DeliverOptions{Poster: discord.NewPoster(w.bot)})
	if err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, e2eWait)
	status, err := d.Deliver(dctx, runID)
	cancel()
	if err != nil || status != tasks.RunUncertain {
		t.Fatalf("a second Deliver = %s, %v; want uncertain", status, err)
	}
	if n := len(w.fake.RequestsTo(postRoute)); n != creates || w.countContent(second) != 1 || w.countContent(third) != 0 {
		t.Fatalf("after the restart and a second delivery: %d creates (was %d), the second chunk %d times, the third %d",
			n, creates, w.countContent(second), w.countContent(third))
	}
	var notifications int
	if err := w.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_result_notifications WHERE run_id = ?`, runID).Scan(&notifications); err != nil || notifications != 0 {
		t.Fatalf("an uncertain run enqueued %d notifications (%v), want none", notifications, err)
	}

	// The operator found the second chunk's message and deleted it, then
	// retries the post: the rest is posted, in order.
	hidden := w.fake.Messages(w.demo.Channels[1])
	if err := w.fake.Session().ChannelMessageDelete(w.demo.Channels[1], hidden[len(hidden)-1].ID); err != nil {
		t.Fatal(err)
	}
	if err := w.parts.runner.RetryPost(ctx, "operator", runID, posts[1].Seq); err != nil {
		t.Fatal(err)
	}
	run = w.waitRun(t, task.ID, runID)
	if run.Status != tasks.RunCompleted {
		t.Fatalf("run %s after the retry ended %s: %s", runID, run.Status, run.Detail)
	}
	posts, err = w.parts.service.RunPosts(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	msgs := w.fake.Messages(w.demo.Channels[1])
	if len(msgs) < 3 {
		t.Fatalf("#general holds %d messages", len(msgs))
	}
	msgs = msgs[len(msgs)-3:]
	for i, p := range posts {
		if p.Status != tasks.PostSent || strconv.FormatUint(p.MessageID, 10) != msgs[i].ID || w.countContent(p.Content) != 1 {
			t.Fatalf("post %d = %+v; #general's message %d is %s; its content is there %d times", i+1, p, i+1, msgs[i].ID, w.countContent(p.Content))
		}
	}
	if got, err := w.parts.service.Get(ctx, task.ID); err != nil || got.State != tasks.StateActive {
		t.Fatalf("task after the retry = %+v, %v; want active", got, err)
	}
	if n := w.acknowledged(t, runID); n != 1 {
		t.Fatalf("kudos holds %d result receipts, want 1", n)
	}
}

// taskWorld is the demo guild on a fake Discord with a connected bot, the
// demo's server setup (scheduled tasks enabled, as prepareDemo writes
// it), and the tasks' service: the composition the tests below run the
// demo's scheduled tasks on.
type taskWorld struct {
	st     *store.Store
	guilds *guildcfg.Service
	fake   *fakediscord.Server
	demo   fakediscord.DemoGuild
	bot    *discord.Bot
	svc    *tasks.Service
	guild  uint64
	owner  uint64 // the fake's application owner: the demo guild's owner
	member uint64 // cy, no roles
	text   []uint64
}

func newTaskWorld(t *testing.T) *taskWorld {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(guilds.Close)
	fake := fakediscord.New(fakediscord.Options{})
	t.Cleanup(fake.Close)
	demo := fake.SeedDemo()
	if first, err := prepareDemo(ctx, st, guilds, demo); err != nil || !first {
		t.Fatalf("prepareDemo = %v, %v", first, err)
	}
	bus := events.New(events.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { bus.Close(0) })
	bot, err := newBot(ctx, st, guilds, bus, slog.New(slog.DiscardHandler), config.Config{Origins: map[string]string{}}, fake)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bot.Close() })
	svc, err := tasks.New(tasks.Options{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w := &taskWorld{st: st, guilds: guilds, fake: fake, demo: demo, bot: bot, svc: svc}
	w.guild = id(t, demo.GuildID)
	w.owner = id(t, fake.Guild(demo.GuildID).OwnerID)
	w.member = id(t, demo.Members[2])
	for _, c := range demo.Channels {
		w.text = append(w.text, id(t, c))
	}
	w.start(t)
	return w
}

// start starts the bot and waits until it can post in the demo guild
// (connected may come before the guild's GUILD_CREATE: READY's
// placeholder has no roles).
func (w *taskWorld) start(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	w.bot.Start(ctx)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if ok, _ := discord.NewPoster(w.bot).CanPost(ctx, w.guild, tasks.BotUser, w.text[1], 0); ok && w.bot.Status().State == discord.StateConnected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bot never could post in the demo guild: %+v", w.bot.Status())
		}
	}
}

func id(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (w *taskWorld) def(files ...tasks.Attachment) tasks.Definition {
	return tasks.Definition{GuildID: w.guild, Name: "Morning digest", OwnerID: w.owner,
		Schedule: map[string]string{tasks.FieldKind: "daily", tasks.FieldTime: "09:00"},
		Template: "Good morning", Destinations: []uint64{w.text[1]}, Files: files}
}

// TestDemoEnablesScheduledTasks: the demo guild's server setup enables
// the tasks for any member, in UTC, to the demo's text channels, and the
// demo's owner (the guild's owner, the form's default) and every demo
// member (the demo's @everyone may attach files and embed links) pass the
// Authorizer with a file and an embed in each of them; in a channel whose
// overwrite denies @everyone Attach Files, the refusal names what lacks
// and where.
func TestDemoEnablesScheduledTasks(t *testing.T) {
	w := newTaskWorld(t)
	p := w.guilds.TaskPolicy(w.guild)
	if !p.Enabled || p.MinTier != sdk.TierMember || p.Timezone != "UTC" || fmt.Sprint(p.Destinations) != fmt.Sprint(w.text) {
		t.Fatalf("the demo's task policy = %+v, want enabled, member, UTC, %v", p, w.text)
	}
	auth := tasks.NewAccess(tasks.AccessOptions{Policies: w.guilds, Members: w.bot, Checker: discord.NewPoster(w.bot)})
	users := []uint64{w.owner}
	for _, m := range w.demo.Members {
		users = append(users, taskID(t, m))
	}
	for _, u := range users {
		for _, ch := range w.text {
			if err := auth.Authorize(context.Background(), w.guild, u, ch, tasks.NeedFiles|tasks.NeedEmbeds); err != nil {
				t.Fatalf("user %d in channel %d with a file and an embed: %v", u, ch, err)
			}
		}
	}
	noFiles := taskID(t, w.fake.AddChannel(fakediscord.ChannelSpec{GuildID: w.demo.GuildID, Name: "no-files", ParentID: w.demo.Category,
		Overwrites: []*discordgo.PermissionOverwrite{{ID: w.demo.GuildID, Type: discordgo.PermissionOverwriteTypeRole, Deny: discordgo.PermissionAttachFiles}}}).ID)
	err := auth.Authorize(context.Background(), w.guild, w.member, noFiles, tasks.NeedFiles|tasks.NeedEmbeds)
	if want := fmt.Sprintf("the owner %d lacks Attach Files in #no-files", w.member); err == nil || err.Error() != want {
		t.Fatalf("a member without ATTACH_FILES in #no-files = %v, want %q", err, want)
	}
	if err := auth.Authorize(context.Background(), w.guild, w.member, noFiles, tasks.NeedEmbeds); err != nil {
		t.Fatalf("a member without ATTACH_FILES, a message without files: %v", err)
	}
}

// TestServeDemoWiresScheduledTasks: `serve --demo` with the kudos module
// starts with the tasks wired (the producer set before the outbox starts,
// the runner started after the bot and the modules) and stops cleanly;
// the first start pointed kudos' results subscriber at the demo guild and
// subscribed it there, and enabled the demo guild's scheduled tasks.
func TestServeDemoWiresScheduledTasks(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	c, _, stderr := testCLI(map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0", "KIMI_DEMO": "true", "KIMI_MODULES": kudos.Name}, "")
	if demoKudosModule != kudos.Name || demoKudosResultGuild != kudos.SettingResultGuild {
		t.Fatalf("the demo names kudos %s.%s, the module is %s.%s", demoKudosModule, demoKudosResultGuild, kudos.Name, kudos.SettingResultGuild)
	}
	c.specs = []sdk.Spec{kudos.Spec()}
	var subscribed bool
	parts := make(chan ServeParts, 1)
	c.onServe = func(_ context.Context, p ServeParts) { parts <- p }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() { code <- c.main(ctx, []string{"serve"}) }()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), "msg=ready component=kimi"); time.Sleep(5 * time.Millisecond) {
		select {
		case rc := <-code:
			t.Fatalf("serve exited with %d before ready:\n%s", rc, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready:\n%s", stderr)
		}
	}
	p := <-parts
	subs, err := p.Results.Subscriptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fake := fakediscord.New(fakediscord.Options{})
	demo := fake.SeedDemo()
	fake.Close()
	for _, s := range subs {
		if s.Module == kudos.Name && strconv.FormatUint(s.GuildID, 10) == demo.GuildID {
			subscribed = true
		}
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
	if !subscribed {
		t.Fatalf("kudos did not subscribe to the demo guild's results: %+v\n%s", subs, stderr)
	}
}

// TestTasksAdminRunNowPostsToTheDemo: the wiring end to end in the demo
// guild — a task created through the admin's facade by the demo's owner,
// run now, is posted by the bot to the fake's #general with its file, and
// the run completes.
func TestTasksAdminRunNowPostsToTheDemo(t *testing.T) {
	w := newTaskWorld(t)
	ctx := context.Background()
	sched, err := scheduler.New(scheduler.Options{Store: w.st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	access, poster := newTaskAccess(w.st, w.guilds, w.bot)
	res, err := results.New(results.Options{Store: w.st, Logger: slog.New(slog.DiscardHandler), Producer: access})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := newTasks(w.st, res, w.guilds, poster, access, sched, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Start()
	t.Cleanup(func() { _ = res.Close(context.Background()) })
	if err := parts.runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sched.Start()
	t.Cleanup(func() { _ = sched.Close(context.Background()) })
	t.Cleanup(func() { _ = parts.runner.Close(context.Background()) })

	task, err := parts.admin.Create(ctx, "operator", w.def(tasks.Attachment{Name: "notes.txt", Data: []byte("the notes")}))
	if err != nil {
		t.Fatal(err)
	}
	runID, err := parts.admin.RunNow(ctx, "operator", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var run tasks.Run
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runs, err := parts.admin.Runs(ctx, task.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.ID == runID {
				run = r
			}
		}
		if run.Status == tasks.RunCompleted || run.Status == tasks.RunFailed || run.Status == tasks.RunUncertain {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is still %s", runID, run.Status)
		}
	}
	if run.Status != tasks.RunCompleted {
		t.Fatalf("run %s ended %s: %s", runID, run.Status, run.Detail)
	}
	msgs := w.fake.Messages(w.demo.Channels[1])
	if len(msgs) == 0 {
		t.Fatal("nothing posted to #general")
	}
	m := msgs[len(msgs)-1]
	if m.Content != "Good morning" || len(m.Attachments) != 1 || m.Attachments[0].Filename != "notes.txt" || m.Author == nil || m.Author.ID != w.fake.BotID() {
		t.Fatalf("#general's last message = %+v", m)
	}
	posts, err := parts.admin.RunPosts(ctx, runID)
	if err != nil || len(posts) != 1 || posts[0].Status != tasks.PostSent || strconv.FormatUint(posts[0].MessageID, 10) != m.ID {
		t.Fatalf("the run's posts = %+v, %v; want the one sent as %s", posts, err, m.ID)
	}
	data, err := parts.access.ReadFile(ctx, runID, "notes.txt", 100)
	if err != nil || string(data) != "the notes" {
		t.Fatalf("ReadFile of the sent file = %q, %v", data, err)
	}
}
