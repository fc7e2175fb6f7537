package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/modules/sdk"
)

const taskPostRoute = "POST /channels/{channel}/messages"

// sentMentions decodes the allowed_mentions of a recorded message create
// (JSON or a multipart body's payload_json) and its file names.
func sentMentions(t *testing.T, r fakediscord.Request) (map[string]any, []string) {
	t.Helper()
	body := r.Body
	var files []string
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "multipart/form-data" {
		mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
		body = nil
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(p)
			if p.FormName() == "payload_json" {
				body = b
			} else {
				files = append(files, p.FormName()+"="+p.FileName()+":"+string(b))
			}
		}
	}
	var payload struct {
		AllowedMentions map[string]any `json:"allowed_mentions"`
	}
	if err := json.Unmarshal(body, &payload); err != nil {
		t.Fatalf("payload %q: %v", body, err)
	}
	return payload.AllowedMentions, files
}

func TestTaskSendMessage(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	ctx := context.Background()
	mentions := tasks.AllowedMentions{Parse: []string{}, Users: []uint64{w.member}, Roles: []uint64{w.staffRole}}
	wantMentions := map[string]any{"parse": []any{}, "users": []any{idString(w.member)}, "roles": []any{idString(w.staffRole)}, "replied_user": false}
	cases := []struct {
		name      string
		channel   uint64
		msg       tasks.PostChunk
		wantErr   string
		wantFiles []string
	}{
		{"text with mentions", w.text, tasks.PostChunk{Content: "hi <@" + idString(w.member) + "> @everyone", AllowedMentions: mentions}, "", nil},
		{"in a thread, with an embed", w.thread, tasks.PostChunk{Content: "t", Embed: &tasks.Embed{Title: "Digest", Description: "d", Fields: []tasks.EmbedField{{Name: "n", Value: "v"}}}, AllowedMentions: mentions}, "", nil},
		{"files as multipart", w.text, tasks.PostChunk{Content: "f", AllowedMentions: mentions, Files: []tasks.Attachment{{Name: "a.txt", Data: []byte("alpha")}, {Name: "b.csv", Data: []byte("1,2")}}},
			"", []string{"files[0]=a.txt:alpha", "files[1]=b.csv:1,2"}},
		{"everyone refused", w.text, tasks.PostChunk{Content: "x", AllowedMentions: tasks.AllowedMentions{Parse: []string{"everyone"}}}, "discord: a task's allowed mentions never parse @everyone", nil},
		{"another guild's channel", w.otherCh, tasks.PostChunk{Content: "x"}, "channel " + idString(w.otherCh) + " is not in an active guild", nil},
		{"inactive guild", w.text, tasks.PostChunk{Content: "x"}, "guild " + idString(w.other) + " is not active for this bot", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			guild := w.guild
			if tc.name == "inactive guild" {
				guild = w.other
			}
			before := len(w.f.RequestsTo(taskPostRoute))
			id, embed, err := w.a.sendTaskMessage(ctx, guild, tc.channel, tc.msg)
			wantErr(t, err, tc.wantErr)
			posts := w.f.RequestsTo(taskPostRoute)[before:]
			if tc.wantErr != "" {
				if len(posts) != 0 || id != 0 {
					t.Fatalf("refused, yet %d posts (id %d)", len(posts), id)
				}
				return
			}
			if len(posts) != 1 || id == 0 {
				t.Fatalf("%d posts, id %d; want 1 post", len(posts), id)
			}
			got, files := sentMentions(t, posts[0])
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(wantMentions)
			if string(gb) != string(wb) {
				t.Fatalf("allowed_mentions = %s, want %s", gb, wb)
			}
			if !slices.Equal(files, tc.wantFiles) {
				t.Fatalf("files = %q, want %q", files, tc.wantFiles)
			}
			msgs := w.f.Messages(idString(tc.channel))
			m := msgs[len(msgs)-1]
			if parseID(m.ID) != id || m.Content != tc.msg.Content {
				t.Fatalf("the fake holds %s %q, want %d %q", m.ID, m.Content, id, tc.msg.Content)
			}
			if m.MentionEveryone || len(m.Mentions) != strings.Count(m.Content, "<@") {
				t.Fatalf("mentions: everyone %v, users %d", m.MentionEveryone, len(m.Mentions))
			}
			if len(m.Attachments) != len(tc.wantFiles) {
				t.Fatalf("the fake holds %d attachments, want %d", len(m.Attachments), len(tc.wantFiles))
			}
			for i, a := range m.Attachments {
				if a.Filename != tc.msg.Files[i].Name || a.Size != len(tc.msg.Files[i].Data) {
					t.Fatalf("attachment %d = %s (%d bytes), want %s", i, a.Filename, a.Size, tc.msg.Files[i].Name)
				}
			}
			if tc.msg.Embed == nil {
				if embed != "" {
					t.Fatalf("published embed %q for none", embed)
				}
				return
			}
			var e discordgo.MessageEmbed
			if err := json.Unmarshal([]byte(embed), &e); err != nil || e.Title != "Digest" || e.Description != "d" || len(e.Fields) != 1 || e.Fields[0].Value != "v" {
				t.Fatalf("published embed %q (%v)", embed, err)
			}
		})
	}
}

func TestTaskSendMessageFailures(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	ctx := context.Background()
	msg := tasks.PostChunk{Content: "x", AllowedMentions: tasks.AllowedMentions{Parse: []string{}}}

	// A 5xx after Discord created the message: uncertain, not retried.
	before := len(w.f.Messages(idString(w.text)))
	w.f.InjectFault(fakediscord.Fault{Route: taskPostRoute, Status: http.StatusInternalServerError, AfterHandling: true})
	_, _, err := w.a.sendTaskMessage(ctx, w.guild, w.text, msg)
	var u *UncertainError
	if !IsUncertain(err) || !errors.As(err, &u) || u.Status != 500 {
		t.Fatalf("a 5xx after the create = %v, want uncertain with status 500", err)
	}
	if n := len(w.f.Messages(idString(w.text))) - before; n != 1 {
		t.Fatalf("%d messages created, want the one (never re-sent)", n)
	}

	// 429s past the transport's attempts: a RateLimitError with its wait.
	w.f.InjectFault(fakediscord.Fault{Route: taskPostRoute, Status: http.StatusTooManyRequests, Times: maxAttempts})
	_, _, err = w.a.sendTaskMessage(ctx, w.guild, w.text, msg)
	var rl *discordgo.RateLimitError
	if !errors.As(err, &rl) || IsUncertain(err) {
		t.Fatalf("429 x%d = %v, want a RateLimitError", maxAttempts, err)
	}

	// Discord's 4xx: a RESTError, not uncertain.
	_, _, err = w.a.sendTaskMessage(ctx, w.guild, w.text, tasks.PostChunk{AllowedMentions: tasks.AllowedMentions{Parse: []string{}}})
	var rest *discordgo.RESTError
	if !errors.As(err, &rest) || rest.Response.StatusCode != http.StatusBadRequest || IsUncertain(err) {
		t.Fatalf("an empty message = %v, want Discord's 400", err)
	}

	// A ctx ended before the send: nothing sent, not uncertain.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	n := len(w.f.RequestsTo(taskPostRoute))
	_, _, err = w.a.sendTaskMessage(cctx, w.guild, w.text, msg)
	if err == nil || IsUncertain(err) || len(w.f.RequestsTo(taskPostRoute)) != n {
		t.Fatalf("ended ctx = %v, want a plain error and no request", err)
	}
}

func TestTaskChecker(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	ctx := context.Background()
	g := idString(w.guild)
	poster := parseID(w.f.AddRole(g, discordgo.Role{Name: "poster",
		Permissions: discordgo.PermissionAttachFiles | discordgo.PermissionEmbedLinks | discordgo.PermissionSendMessagesInThreads}).ID)
	writer := parseID(w.f.AddUser(discordgo.User{Username: "wren"}).ID)
	w.f.AddMember(g, idString(writer), idString(poster))
	muted := parseID(w.f.AddChannel(fakediscord.ChannelSpec{GuildID: g, Name: "read-only", Overwrites: []*discordgo.PermissionOverwrite{
		{ID: g, Type: discordgo.PermissionOverwriteTypeRole, Deny: discordgo.PermissionSendMessages},
	}}).ID)
	forum := parseID(w.f.AddChannel(fakediscord.ChannelSpec{GuildID: g, Name: "ideas", Type: discordgo.ChannelTypeGuildForum}).ID)
	news := parseID(w.f.AddChannel(fakediscord.ChannelSpec{GuildID: g, Name: "news", Type: discordgo.ChannelTypeGuildNews}).ID)
	voice := parseID(w.f.AddChannel(fakediscord.ChannelSpec{GuildID: g, Name: "lounge", Type: discordgo.ChannelTypeGuildVoice}).ID)
	// A DM the state holds is a DM; one it does not is missing (Discord
	// answers 404 to another's DM, as the fake does to every DM).
	dm, err := w.s.UserChannelCreate(idString(w.member))
	if err != nil {
		t.Fatal(err)
	}
	other, err := w.s.UserChannelCreate(idString(w.staff))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.s.State.ChannelAdd(dm); err != nil {
		t.Fatal(err)
	}
	chk := &Poster{a: w.a}

	kinds := []struct {
		name    string
		guild   uint64
		channel uint64
		want    tasks.ChannelKind
	}{
		{"text", w.guild, w.text, tasks.ChannelText},
		{"announcement", w.guild, news, tasks.ChannelAnnouncement},
		{"public thread", w.guild, w.thread, tasks.ChannelThread},
		{"private thread", w.guild, w.private, tasks.ChannelThread},
		{"forum", w.guild, forum, tasks.ChannelForum},
		{"voice", w.guild, voice, tasks.ChannelOther},
		{"category", w.guild, w.cat, tasks.ChannelOther},
		{"dm", w.guild, parseID(dm.ID), tasks.ChannelDM},
		{"dm not in the state", w.guild, parseID(other.ID), tasks.ChannelMissing},
		{"another guild's", w.guild, w.otherCh, tasks.ChannelMissing},
		{"unknown", w.guild, 777, tasks.ChannelMissing},
	}
	for _, tc := range kinds {
		t.Run("kind "+tc.name, func(t *testing.T) {
			got, err := chk.ChannelKind(ctx, tc.guild, tc.channel)
			if err != nil || got != tc.want {
				t.Fatalf("ChannelKind = %q, %v; want %q", got, err, tc.want)
			}
		})
	}

	owner := parseID(w.f.Guild(g).OwnerID)
	const all = tasks.NeedFiles | tasks.NeedEmbeds
	posts := []struct {
		name    string
		guild   uint64
		user    uint64
		channel uint64
		needs   tasks.Needs
		want    bool
		wantErr string
	}{
		{"the bot, text", w.guild, tasks.BotUser, w.text, all, true, ""},
		{"the bot, thread", w.guild, tasks.BotUser, w.thread, all, true, ""},
		{"the owner, text", w.guild, owner, w.text, all, true, ""},
		{"a member with files and embeds, text", w.guild, writer, w.text, all, true, ""},
		{"... in a public thread", w.guild, writer, w.thread, all, true, ""},
		{"... without SEND_MESSAGES", w.guild, writer, muted, all, false, ""},
		{"... without SEND_MESSAGES, text only", w.guild, writer, muted, 0, false, ""},
		{"... not in the private thread", w.guild, writer, w.private, all, false, ""},
		{"a member without ATTACH_FILES and EMBED_LINKS, files and an embed", w.guild, w.member, w.text, all, false, ""},
		{"... a file", w.guild, w.member, w.text, tasks.NeedFiles, false, ""},
		{"... an embed", w.guild, w.member, w.text, tasks.NeedEmbeds, false, ""},
		{"... text only", w.guild, w.member, w.text, 0, true, ""},
		{"not a member", w.guild, w.absent, w.text, 0, false, ""},
		{"another guild's channel", w.guild, owner, w.otherCh, 0, false, ""},
		{"unknown channel", w.guild, owner, 777, 0, false, ""},
		{"inactive guild", w.other, owner, w.otherCh, 0, false, "guild " + idString(w.other) + " is not active for this bot"},
	}
	for _, tc := range posts {
		t.Run("post "+tc.name, func(t *testing.T) {
			got, err := chk.CanPost(ctx, tc.guild, tc.user, tc.channel, tc.needs)
			wantErr(t, err, tc.wantErr)
			if got != tc.want {
				t.Fatalf("CanPost = %v, want %v", got, tc.want)
			}
		})
	}

	// What a refused post lacks, by name; none when a permission is not
	// what refuses it.
	textName, mutedName := stateChannel(w.s, idString(w.text)).Name, stateChannel(w.s, idString(muted)).Name
	lacks := []struct {
		name    string
		user    uint64
		channel uint64
		needs   tasks.Needs
		want    tasks.Lack
	}{
		{"files and an embed", w.member, w.text, all, tasks.Lack{Permissions: []string{"Embed Links", "Attach Files"}, Channel: textName}},
		{"a file", w.member, w.text, tasks.NeedFiles, tasks.Lack{Permissions: []string{"Attach Files"}, Channel: textName}},
		{"SEND_MESSAGES denied", writer, muted, all, tasks.Lack{Permissions: []string{"Send Messages"}, Channel: mutedName}},
		{"text only: nothing lacks", w.member, w.text, 0, tasks.Lack{}},
		{"not a member", w.absent, w.text, 0, tasks.Lack{}},
		{"not in the private thread", writer, w.private, all, tasks.Lack{}},
	}
	for _, tc := range lacks {
		t.Run("lacks "+tc.name, func(t *testing.T) {
			got, err := chk.MissingPermissions(ctx, w.guild, tc.user, tc.channel, tc.needs)
			if err != nil || !slices.Equal(got.Permissions, tc.want.Permissions) || got.Channel != tc.want.Channel {
				t.Fatalf("MissingPermissions = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestTaskUploadLimit(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	chk := &Poster{a: w.a}
	const mib = 1 << 20
	for _, tc := range []struct {
		tier discordgo.PremiumTier
		want int64
	}{{discordgo.PremiumTierNone, 10 * mib}, {discordgo.PremiumTier1, 10 * mib}, {discordgo.PremiumTier2, 50 * mib}, {discordgo.PremiumTier3, 100 * mib}} {
		g, err := w.s.State.Guild(idString(w.guild))
		if err != nil {
			t.Fatal(err)
		}
		w.s.State.Lock()
		g.PremiumTier = tc.tier
		w.s.State.Unlock()
		got, err := chk.UploadLimit(context.Background(), w.guild)
		if err != nil || got != tc.want {
			t.Fatalf("tier %d: UploadLimit = %d, %v; want %d", tc.tier, got, err, tc.want)
		}
	}
	if _, err := chk.UploadLimit(context.Background(), w.other); err == nil {
		t.Fatal("an inactive guild's upload limit answered")
	}
}

// TestTaskCanPostUnavailableGuild: READY's placeholder of a guild (no
// roles until GUILD_CREATE) is an error, not a refusal.
func TestTaskCanPostUnavailableGuild(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	g, err := w.s.State.Guild(idString(w.guild))
	if err != nil {
		t.Fatal(err)
	}
	w.s.State.Lock()
	g.Unavailable = true
	w.s.State.Unlock()
	ok, err := (&Poster{a: w.a}).CanPost(context.Background(), w.guild, tasks.BotUser, w.text, 0)
	if want := "discord: guild " + idString(w.guild) + " is not available yet"; ok || err == nil || err.Error() != want {
		t.Fatalf("CanPost = %v, %v; want the error %q", ok, err, want)
	}
}

// TestTaskSendToAGoneChannel: a task's channel that no longer exists
// (deleted after the task was saved: Discord answers 404 Unknown Channel)
// fails the send saying the channel no longer exists (it said "not in an
// active guild"), keeps Discord's 404 (the row fails with it) and is never uncertain
// (nothing was created, so a retry cannot duplicate a post).
func TestTaskSendToAGoneChannel(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	const gone = 987654321012345678
	_, _, err := w.a.sendTaskMessage(context.Background(), w.guild, gone, tasks.PostChunk{Content: "x", AllowedMentions: tasks.AllowedMentions{Parse: []string{}}})
	if err == nil || IsUncertain(err) || !isNotFound(err) || !strings.Contains(err.Error(), "channel 987654321012345678 no longer exists") {
		t.Fatalf("a send to a gone channel = %v, want a plain failure saying the channel no longer exists (Discord's 404 kept)", err)
	}
}

// TestTaskPostErrors: the Poster's mapping of every way a send fails to
// the deliverer's *tasks.PostError (postError, which Post returns for
// every failed send).
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
		{"5xx after the send", &UncertainError{Method: "POST", Route: "POST /channels/{channel}/messages", Status: 503}, 503, true, 0},
		{"connection broken after the send", fmt.Errorf("wrapped: %w", &UncertainError{Method: "POST", Err: errors.New("EOF")}), 0, true, 0},
		{"a 5xx RESTError of a POST", restErr(502), 502, true, 0},
		{"403 missing access", restErr(403), 403, false, 0},
		{"404 unknown channel", restErr(404), 404, false, 0},
		{"dial refused", refused, 0, false, 0},
		{"ctx ended before the send", fmt.Errorf("discord: waiting: %w", context.Canceled), 0, false, 0},
		{"not connected", ErrNotConnected, 0, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error = postError(tc.err)
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

// TestTaskPosterToTheFake: the Poster posts a chunk with its embed,
// files and allowed mentions to a text channel.
func TestTaskPosterToTheFake(t *testing.T) {
	w := newActWorld(t, fakediscord.Options{})
	chunk := tasks.PostChunk{ChannelID: w.text, Total: 1, Content: "digest for <@" + idString(w.member) + ">",
		Embed:           &tasks.Embed{Title: "Digest", Fields: []tasks.EmbedField{{Name: "a", Value: "b", Inline: true}}},
		Files:           []tasks.Attachment{{Name: "notes.txt", Data: []byte("the notes")}},
		AllowedMentions: tasks.AllowedMentions{Users: []uint64{w.member}}}
	p := &Poster{a: w.a}
	msgID, embed, err := p.Post(context.Background(), w.guild, w.text, chunk)
	if err != nil {
		t.Fatal(err)
	}
	msgs := w.f.Messages(idString(w.text))
	m := msgs[len(msgs)-1]
	if parseID(m.ID) != msgID || m.Content != chunk.Content || len(m.Attachments) != 1 || m.Attachments[0].Filename != "notes.txt" ||
		len(m.Mentions) != 1 || m.MentionEveryone {
		t.Fatalf("the fake holds %+v (id %d)", m, msgID)
	}
	if !strings.Contains(embed, `"title":"Digest"`) || !strings.Contains(embed, `"inline":true`) {
		t.Fatalf("published embed %s", embed)
	}
	// Another guild's channel: nothing reaches Discord, not started.
	_, _, err = p.Post(context.Background(), w.guild+1, w.text, chunk)
	var pe *tasks.PostError
	if !errors.As(err, &pe) || pe.Started || pe.Status != 0 {
		t.Fatalf("a wrong guild = %v", err)
	}
}

// taskPolicies is a tasks.Policies with one policy for every guild.
type taskPolicies struct{ p guildcfg.TaskPolicy }

func (p taskPolicies) TaskPolicy(uint64) guildcfg.TaskPolicy { return p.p }

// TestTaskDeliveryWaitsForTheBot: a delivery's Authorizer (the tasks'
// access rule with the Poster as its Checker and Readiness) and Poster
// called before the bot connected (the runner resumes deliveries at
// start) wait for the connection and the guild instead of failing the
// row for it.
func TestTaskDeliveryWaitsForTheBot(t *testing.T) {
	f := newFake(t, fakediscord.Options{})
	g := f.AddGuild(fakediscord.GuildSpec{Name: "active"}).ID
	text := f.AddChannel(fakediscord.ChannelSpec{GuildID: g, Name: "general"}).ID
	owner := f.AddUser(discordgo.User{Username: "mia"}).ID
	f.AddMember(g, owner)
	guild, channel, ownerID := parseID(g), parseID(text), parseID(owner)
	b, err := New(Options{Store: connStore(t), Guilds: &actGuilds{active: map[uint64]bool{guild: true}}, Logger: slog.New(slog.DiscardHandler),
		Transport: f.Transport(), Dialer: f.Dialer(), Token: f.Token(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	poster := NewPoster(b)
	auth := tasks.NewAccess(tasks.AccessOptions{Policies: taskPolicies{guildcfg.TaskPolicy{Enabled: true, MinTier: sdk.TierMember}},
		Members: b, Checker: poster, Ready: poster})
	done := make(chan error, 1)
	go func() {
		if err := auth.Authorize(ctx, guild, ownerID, channel, 0); err != nil {
			done <- err
			return
		}
		_, _, err := poster.Post(ctx, guild, channel, tasks.PostChunk{ChannelID: channel, Total: 1, Content: "after the connection"})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it find the bot not connected (no assertion rests on it)
	b.Start(ctx)
	if err := <-done; err != nil {
		t.Fatalf("a delivery before the connection = %v, want it to wait and post", err)
	}
	msgs := f.Messages(text)
	if len(msgs) == 0 || msgs[len(msgs)-1].Content != "after the connection" {
		t.Fatal("the post did not reach #general")
	}
}
