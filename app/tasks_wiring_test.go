package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestTaskPostErrors: the Poster's mapping of every way a send fails to
// the deliverer's *tasks.PostError.
func TestTaskPostErrors(t *testing.T) {
	post := &http.Request{Method: http.MethodPost}
	restErr := func(code int) error {
		return &discordgo.RESTError{Request: post, Response: &http.Response{StatusCode: code}}
	}
	refused := &url.Error{Op: "Post", URL: "https://discord.com/api/v10/channels/1/messages", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}
	cases := []struct {
		name    string
		err     error
		status  int
		started bool
		retry   time.Duration
	}{
		{"429 the transport gave up on", &discordgo.RateLimitError{RateLimit: &discordgo.RateLimit{TooManyRequests: &discordgo.TooManyRequests{RetryAfter: 3 * time.Second}}}, 429, false, 3 * time.Second},
		{"429 without its body", &discordgo.RateLimitError{RateLimit: &discordgo.RateLimit{}}, 429, false, 0},
		{"5xx after the send", &discord.UncertainError{Method: "POST", Route: "POST /channels/{channel}/messages", Status: 503}, 503, true, 0},
		{"connection broken after the send", fmt.Errorf("wrapped: %w", &discord.UncertainError{Method: "POST", Err: errors.New("EOF")}), 0, true, 0},
		{"a 5xx RESTError of a POST", restErr(502), 502, true, 0},
		{"403 missing access", restErr(403), 403, false, 0},
		{"404 unknown channel", restErr(404), 404, false, 0},
		{"dial refused", refused, 0, false, 0},
		{"ctx ended before the send", fmt.Errorf("discord: waiting: %w", context.Canceled), 0, false, 0},
		{"not connected", discord.ErrNotConnected, 0, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := taskPoster{d: failingSender{tc.err}}.Post(context.Background(), 1, 2, tasks.PostChunk{ChannelID: 2, Content: "x"})
			var pe *tasks.PostError
			if !errors.As(err, &pe) {
				t.Fatalf("Post = %v, want a *tasks.PostError", err)
			}
			if pe.Status != tc.status || pe.Started != tc.started || pe.RetryAfter != tc.retry || !errors.Is(pe, tc.err) {
				t.Fatalf("PostError = {Status %d, Started %v, RetryAfter %v, Err %v}, want {%d, %v, %v, the error}",
					pe.Status, pe.Started, pe.RetryAfter, pe.Err, tc.status, tc.started, tc.retry)
			}
		})
	}
}

// failingSender answers every send with err.
type failingSender struct{ err error }

func (f failingSender) SendTaskMessage(context.Context, uint64, uint64, discord.TaskMessage) (uint64, string, error) {
	return 0, "", f.err
}

// taskWorld is the demo guild on a fake Discord with a connected bot, the
// demo's server setup (scheduled tasks enabled), and the tasks' service.
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
	w := newUnstartedTaskWorld(t)
	w.start(t)
	return w
}

// newUnstartedTaskWorld is newTaskWorld with the bot not started yet.
func newUnstartedTaskWorld(t *testing.T) *taskWorld {
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
	bot, err := newBot(ctx, st, guilds, &hostBus{}, slog.New(slog.DiscardHandler), config.Config{Origins: map[string]string{}}, fake)
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
		if ok, _ := w.bot.TaskChecker().CanPost(ctx, w.guild, tasks.BotUser, w.text[1], 0); ok && w.bot.Status().State == discord.StateConnected {
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

func (w *taskWorld) producer() taskProducer {
	return taskProducer{svc: w.svc, st: w.st, policies: w.guilds,
		access: results.DiscordAccess{Guilds: w.guilds, Tiers: w.bot, Channels: w.bot}}
}

// setPolicy rewrites the demo guild's scheduled_tasks mapping.
func (w *taskWorld) setPolicy(t *testing.T, mapping string) {
	t.Helper()
	ctx := context.Background()
	target := guildcfg.GuildTarget(w.guild)
	doc, err := w.guilds.Document(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	text := "---\nbot_active: true\nscheduled_tasks:\n" + mapping + "---\n"
	if _, err := w.guilds.Write(ctx, target, text, doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI, Name: "t"}); err != nil {
		t.Fatal(err)
	}
}

// TestDemoEnablesScheduledTasks: the demo guild's server setup enables
// the tasks for any member, in UTC, to the demo's text channels, and the
// demo's owner (the guild's owner, the form's default) passes the
// Authorizer in each of them; a member without ATTACH_FILES (the fake's
// @everyone) passes for a text-only message but not for one with a file.
func TestDemoEnablesScheduledTasks(t *testing.T) {
	w := newTaskWorld(t)
	p := w.guilds.TaskPolicy(w.guild)
	if !p.Enabled || p.MinTier != sdk.TierMember || p.Timezone != "UTC" || fmt.Sprint(p.Destinations) != fmt.Sprint(w.text) {
		t.Fatalf("the demo's task policy = %+v, want enabled, member, UTC, %v", p, w.text)
	}
	auth := taskAuthorizer{policies: w.guilds, tiers: w.bot, checker: w.bot.TaskChecker()}
	for _, ch := range w.text {
		if err := auth.Authorize(context.Background(), w.guild, w.owner, ch, tasks.NeedFiles|tasks.NeedEmbeds); err != nil {
			t.Fatalf("the demo's owner in channel %d: %v", ch, err)
		}
	}
	err := auth.Authorize(context.Background(), w.guild, w.member, w.text[1], tasks.NeedFiles)
	if want := fmt.Sprintf("the owner %d cannot post in channel %d (this message needs: view the channel, send messages and attach files)", w.member, w.text[1]); err == nil || err.Error() != want {
		t.Fatalf("a member without ATTACH_FILES = %v, want %q", err, want)
	}
	if err := auth.Authorize(context.Background(), w.guild, w.member, w.text[1], 0); err != nil {
		t.Fatalf("a member without ATTACH_FILES, a text-only message: %v", err)
	}
}

// TestTaskAuthorizerRefusals: each of the Authorizer's refusals is a
// sentence for the operator.
func TestTaskAuthorizerRefusals(t *testing.T) {
	w := newTaskWorld(t)
	ctx := context.Background()
	auth := taskAuthorizer{policies: w.guilds, tiers: w.bot, checker: w.bot.TaskChecker()}
	w.setPolicy(t, "  enabled: true\n  min_tier: staff\n")
	if err := auth.Authorize(ctx, w.guild, w.owner, w.text[1], 0); err == nil || err.Error() != fmt.Sprintf("the owner %d is member, below staff", w.owner) {
		t.Fatalf("below min_tier = %v", err)
	}
	w.setPolicy(t, "  enabled: false\n")
	if err := auth.Authorize(ctx, w.guild, w.owner, w.text[1], 0); err == nil || !strings.HasPrefix(err.Error(), fmt.Sprintf("scheduled tasks are not enabled in guild %d", w.guild)) {
		t.Fatalf("disabled policy = %v", err)
	}
}

// TestTaskProducerCheckAccess: a publication of an existing task in a
// guild whose tasks are enabled passes; once the policy is disabled, or
// the task deleted, it is refused (results.ErrAccessDenied).
func TestTaskProducerCheckAccess(t *testing.T) {
	w := newTaskWorld(t)
	ctx := context.Background()
	task, err := w.svc.Create(ctx, "t", w.guilds.TaskPolicy(w.guild), w.bot.TaskChecker(), w.def())
	if err != nil {
		t.Fatal(err)
	}
	pub := results.Publication{RunID: "run", TaskID: task.ID, Revision: 1, GuildID: w.guild, OwnerID: w.owner,
		PublishedAt: time.Now(), Outcome: sdk.ResultCompleted,
		Messages: []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: w.guild, ChannelID: w.text[1], MessageID: 5}}}}
	p := w.producer()
	if err := p.CheckAccess(ctx, pub); err != nil {
		t.Fatalf("CheckAccess of a live task = %v", err)
	}
	other := pub
	other.OwnerID = w.member
	other.Messages = []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: w.guild, ChannelID: 777, MessageID: 5}}}
	if err := p.CheckAccess(ctx, other); err == nil {
		t.Fatal("CheckAccess with a channel not in the guild passed")
	}

	w.setPolicy(t, "  enabled: false\n")
	err = p.CheckAccess(ctx, pub)
	if !errors.Is(err, results.ErrAccessDenied) || !strings.Contains(err.Error(), "scheduled tasks are not enabled") {
		t.Fatalf("CheckAccess with the policy disabled = %v", err)
	}
	w.setPolicy(t, "  enabled: true\n  min_tier: member\n")
	if err := p.CheckAccess(ctx, pub); err != nil {
		t.Fatalf("CheckAccess once enabled again = %v", err)
	}
	if err := w.svc.Delete(ctx, "t", task.ID); err != nil {
		t.Fatal(err)
	}
	err = p.CheckAccess(ctx, pub)
	if !errors.Is(err, results.ErrAccessDenied) || !strings.Contains(err.Error(), "was deleted") {
		t.Fatalf("CheckAccess of a deleted task = %v", err)
	}
}

// TestTaskProducerReadFile: a run's file is read only when one of its
// sent post rows (not a log row, not an unsent post) carried it, and only
// up to the limit.
func TestTaskProducerReadFile(t *testing.T) {
	w := newTaskWorld(t)
	ctx := context.Background()
	task, err := w.svc.Create(ctx, "t", w.guilds.TaskPolicy(w.guild), w.bot.TaskChecker(),
		w.def(tasks.Attachment{Name: "notes.txt", Data: []byte("the notes")}, tasks.Attachment{Name: "other.txt", Data: []byte("other")},
			tasks.Attachment{Name: "logged.txt", Data: []byte("logged")}))
	if err != nil {
		t.Fatal(err)
	}
	const run = "0123456789abcdef0123456789abcdef"
	ch := int64(w.text[1])
	if _, err := w.st.Writer().ExecContext(ctx, `INSERT INTO kimi_task_runs (id, task_id, revision, due_ms, status, created_ms) VALUES (?, ?, 1, 1, 'failed', 1)`, run, task.ID); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		seq          int
		kind, status string
		files        string
		messageID    int64
	}{
		{1, "post", "sent", `["notes.txt"]`, 11},
		{2, "post", "failed", `["other.txt"]`, 0},
		{3, "log", "sent", `["logged.txt"]`, 13},
	} {
		if _, err := w.st.Writer().ExecContext(ctx, `INSERT INTO kimi_task_posts (run_id, seq, chunk_index, chunk_total, channel_id, kind, content, file_ids, status, message_id)
			VALUES (?, ?, 1, 1, ?, ?, 'x', ?, ?, ?)`, run, r.seq, ch, r.kind, r.files, r.status, r.messageID); err != nil {
			t.Fatal(err)
		}
	}
	p := w.producer()
	cases := []struct {
		name, run, file string
		limit           int64
		want, wantErr   string
	}{
		{"a sent post's file", run, "notes.txt", 100, "the notes", ""},
		{"at the limit", run, "notes.txt", 9, "the notes", ""},
		{"over the limit", run, "notes.txt", 8, "", `app: tasks: file "notes.txt" of run ` + run + " is 9 bytes, over the limit of 8"},
		{"an unsent post's file", run, "other.txt", 100, "", `app: tasks: no sent post of run ` + run + ` carried file "other.txt"`},
		{"a log row's file", run, "logged.txt", 100, "", `app: tasks: no sent post of run ` + run + ` carried file "logged.txt"`},
		{"not the run's", run, "nothing.txt", 100, "", `app: tasks: no sent post of run ` + run + ` carried file "nothing.txt"`},
		{"unknown run", "ffffffffffffffffffffffffffffffff", "notes.txt", 100, "", "app: tasks: run ffffffffffffffffffffffffffffffff does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.ReadFile(ctx, tc.run, tc.file, tc.limit)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || got != nil {
					t.Fatalf("ReadFile = %q, %v; want the error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("ReadFile = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestTaskPosterToTheFake: the Poster over the real bot posts a chunk
// with its embed, files and allowed mentions to the demo's #general.
func TestTaskPosterToTheFake(t *testing.T) {
	w := newTaskWorld(t)
	chunk := tasks.PostChunk{ChannelID: w.text[1], Total: 1, Content: "digest for <@" + strconv.FormatUint(w.member, 10) + ">",
		Embed:           &tasks.Embed{Title: "Digest", Fields: []tasks.EmbedField{{Name: "a", Value: "b", Inline: true}}},
		Files:           []tasks.Attachment{{Name: "notes.txt", Data: []byte("the notes")}},
		AllowedMentions: tasks.AllowedMentions{Users: []uint64{w.member}}}
	msgID, embed, err := taskPoster{d: w.bot}.Post(context.Background(), w.guild, w.text[1], chunk)
	if err != nil {
		t.Fatal(err)
	}
	msgs := w.fake.Messages(w.demo.Channels[1])
	m := msgs[len(msgs)-1]
	if id(t, m.ID) != msgID || m.Content != chunk.Content || len(m.Attachments) != 1 || m.Attachments[0].Filename != "notes.txt" ||
		len(m.Mentions) != 1 || m.MentionEveryone {
		t.Fatalf("the fake holds %+v (id %d)", m, msgID)
	}
	if !strings.Contains(embed, `"title":"Digest"`) || !strings.Contains(embed, `"inline":true`) {
		t.Fatalf("published embed %s", embed)
	}
	// Another guild's channel: nothing reaches Discord, not started.
	_, _, err = taskPoster{d: w.bot}.Post(context.Background(), w.guild+1, w.text[1], chunk)
	var pe *tasks.PostError
	if !errors.As(err, &pe) || pe.Started || pe.Status != 0 {
		t.Fatalf("a wrong guild = %v", err)
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
	res, err := results.New(results.Options{Store: w.st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := newTasks(w.st, res, w.guilds, w.bot, sched, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	res.SetProducer(parts.producer)
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
	data, err := parts.producer.ReadFile(ctx, runID, "notes.txt", 100)
	if err != nil || string(data) != "the notes" {
		t.Fatalf("ReadFile of the sent file = %q, %v", data, err)
	}
}

// TestTaskDeliveryWaitsForTheBot: a delivery's Authorizer and Poster
// called before the bot connected (the runner resumes deliveries at
// start) wait for the connection and the guild instead of failing the
// row for it.
func TestTaskDeliveryWaitsForTheBot(t *testing.T) {
	w := newUnstartedTaskWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	auth := taskAuthorizer{policies: w.guilds, tiers: w.bot, checker: w.bot.TaskChecker(), ready: w.bot}
	poster := taskPoster{d: w.bot, ready: w.bot}
	done := make(chan error, 1)
	go func() {
		if err := auth.Authorize(ctx, w.guild, w.owner, w.text[1], 0); err != nil {
			done <- err
			return
		}
		_, _, err := poster.Post(ctx, w.guild, w.text[1], tasks.PostChunk{ChannelID: w.text[1], Total: 1, Content: "after the connection"})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it find the bot not connected (no assertion rests on it)
	w.bot.Start(ctx)
	if err := <-done; err != nil {
		t.Fatalf("a delivery before the connection = %v, want it to wait and post", err)
	}
	msgs := w.fake.Messages(w.demo.Channels[1])
	if len(msgs) == 0 || msgs[len(msgs)-1].Content != "after the connection" {
		t.Fatal("the post did not reach #general")
	}
}
