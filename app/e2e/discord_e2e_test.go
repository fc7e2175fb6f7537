package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

func e2eID(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// startE2EModule starts the appliance running m alone, e2eGuild active.
func startE2EModule(t *testing.T, m *e2eModule) (*e2eApp, *e2eClient) {
	t.Helper()
	a := startE2E(t, e2eOptions{specs: []sdk.Spec{m.spec()}, modules: e2eModuleName,
		docs: map[guildcfg.Target]string{guildcfg.GuildTarget(e2eID(t, e2eGuild)): e2eGuildDoc}})
	c := a.signIn()
	return a, c
}

// TestE2EMessageEvents: in the composed appliance, a message in an active
// guild reaches the module's discord.message handler with its snapshot
// (content, author, ref, jump URL); its edit and its delete carry the
// cached before-content; the inactive guild's message, posted first on the
// same connection, reaches nothing.
func TestE2EMessageEvents(t *testing.T) {
	m := newE2EModule()
	a, c := startE2EModule(t, m)
	a.waitConnected(c)
	if _, err := a.Discord().PostMessage(e2eOtherChan, e2eAnn, "in the inactive guild"); err != nil {
		t.Fatal(err)
	}
	posted, err := a.Discord().PostMessage(e2eChannel, e2eAnn, "hello kimi")
	if err != nil {
		t.Fatal(err)
	}
	var seen []sdk.Event
	ev := m.next(t, "discord.message")
	seen = append(seen, ev)
	msg, ok := ev.Payload.(sdk.MessageEvent)
	if ev.Topic != sdk.TopicMessage || !ok {
		t.Fatalf("first event = %s %T, want the active guild's message", ev.Topic, ev.Payload)
	}
	wantRef := sdk.MessageRef{GuildID: e2eID(t, e2eGuild), ChannelID: e2eID(t, e2eChannel), MessageID: e2eID(t, posted.ID)}
	wantJump := "https://discord.com/channels/" + e2eGuild + "/" + e2eChannel + "/" + posted.ID
	if s := msg.Message; s.Content != "hello kimi" || s.AuthorID != e2eID(t, e2eAnn) || s.Ref != wantRef || s.JumpURL != wantJump ||
		s.AuthorIsBot || msg.AuthorIsBot || s.AuthorDisplayName != "Ann" {
		t.Fatalf("message snapshot = %+v", msg)
	}

	if err := a.Discord().EditAsUser(e2eChannel, posted.ID, "hello kimi, edited"); err != nil {
		t.Fatal(err)
	}
	ev = m.next(t, "discord.message_edit")
	seen = append(seen, ev)
	edit, ok := ev.Payload.(sdk.MessageEditEvent)
	if !ok || edit.BeforeContent == nil || *edit.BeforeContent != "hello kimi" || edit.AfterContent == nil ||
		*edit.AfterContent != "hello kimi, edited" || edit.Ref != wantRef || edit.AuthorID != e2eID(t, e2eAnn) {
		t.Fatalf("edit = %s %+v", ev.Topic, ev.Payload)
	}
	if err := a.Discord().DeleteAsUser(e2eChannel, posted.ID); err != nil {
		t.Fatal(err)
	}
	ev = m.next(t, "discord.message_delete")
	seen = append(seen, ev)
	del, ok := ev.Payload.(sdk.MessageDeleteEvent)
	if !ok || del.CachedContent == nil || *del.CachedContent != "hello kimi, edited" || del.AuthorID != e2eID(t, e2eAnn) {
		t.Fatalf("delete = %s %+v", ev.Topic, ev.Payload)
	}
	// Anything else queued meanwhile (nothing is expected) must not be the
	// inactive guild's.
	for {
		select {
		case ev := <-m.events:
			seen = append(seen, ev)
			continue
		default:
		}
		break
	}
	for _, ev := range seen {
		if p, ok := ev.Payload.(sdk.MessageEvent); ok && p.Message.Ref.GuildID == e2eID(t, e2eOther) {
			t.Fatalf("the inactive guild's message reached the module: %+v", p)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("the module got %d events, want 3: %+v", len(seen), seen)
	}
}

// e2eInteractionsModule registers /ping (answers at once with a staff-only
// Approve button), /slow (answers once release is closed) and the button.
func e2eInteractionsModule(release <-chan struct{}, clicked chan<- string) *e2eModule {
	m := newE2EModule()
	m.start = func(rt *sdk.Runtime) error {
		if _, err := rt.Interactions.AddCommand(sdk.CommandSpec{Name: "ping", Description: "Answer at once.", MinTier: sdk.TierMember,
			Options: []sdk.CommandOption{{Name: "word", Kind: sdk.OptionString, Description: "A word.", Required: true}}},
			func(ctx context.Context, in sdk.Interaction) error {
				w, _ := in.Options().String("word")
				return in.Respond(ctx, sdk.Response{Content: "pong: " + w, Components: []sdk.Component{
					sdk.ButtonSpec{Key: "approve", Label: "Approve", Style: sdk.ButtonPrimary, Parts: []string{"42"}}}})
			}, nil); err != nil {
			return err
		}
		if _, err := rt.Interactions.AddCommand(sdk.CommandSpec{Name: "slow", Description: "Answer late.", MinTier: sdk.TierMember},
			func(ctx context.Context, in sdk.Interaction) error {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
				return in.Respond(ctx, sdk.Response{Content: "the slow answer"})
			}, nil); err != nil {
			return err
		}
		_, err := rt.Interactions.RegisterComponent(sdk.ComponentButton, "approve", func(ctx context.Context, in sdk.Interaction) error {
			clicked <- in.CustomID()
			return in.Respond(ctx, sdk.Response{Content: "approved", Ephemeral: true})
		}, sdk.ComponentOptions{MinTier: sdk.TierStaff})
		return err
	}
	return m
}

// TestE2EInteractions: a slash command runs its handler and the callback
// carries its response with the module's button; the button routes by
// custom id for staff and is refused below min_tier with "Staff only.";
// a handler slower than the auto-defer threshold is deferred (an ephemeral
// "thinking" reply) and its public answer arrives as a follow-up, the
// placeholder deleted.
func TestE2EInteractions(t *testing.T) {
	release, clicked := make(chan struct{}), make(chan string, 4)
	m := e2eInteractionsModule(release, clicked)
	a, c := startE2EModule(t, m)
	a.waitConnected(c, "ping", "slow")

	id, err := a.Discord().RunCommand(e2eChannel, e2eAnn, "ping", &discordgo.ApplicationCommandInteractionDataOption{
		Name: "word", Type: discordgo.ApplicationCommandOptionString, Value: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	st := a.answered(id)
	if r := st.Response; r.Type != discordgo.InteractionResponseChannelMessageWithSource || r.Data == nil || r.Data.Content != "pong: hi" ||
		r.Data.Flags&discordgo.MessageFlagsEphemeral != 0 {
		t.Fatalf("/ping response = %+v", st.Response)
	}
	if st.Original == nil || len(st.Original.Components) != 1 {
		t.Fatalf("/ping's message = %+v", st.Original)
	}
	btn, ok := st.Original.Components[0].(*discordgo.ActionsRow).Components[0].(*discordgo.Button)
	if !ok || btn.Label != "Approve" || !strings.HasSuffix(btn.CustomID, ":approve:42") {
		t.Fatalf("the button = %+v", st.Original.Components[0])
	}

	// ann is a member: refused with the exact ephemeral text, handler not run.
	cid, err := a.Discord().ClickButton(e2eChannel, st.Original.ID, e2eAnn, btn.CustomID)
	if err != nil {
		t.Fatal(err)
	}
	refused := a.answered(cid)
	if r := refused.Response; r.Type != discordgo.InteractionResponseChannelMessageWithSource || r.Data == nil ||
		r.Data.Content != "Staff only." || r.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("member's click = %+v", refused.Response)
	}
	// bob is staff: routed to the handler with the custom id.
	cid, err = a.Discord().ClickButton(e2eChannel, st.Original.ID, e2eBob, btn.CustomID)
	if err != nil {
		t.Fatal(err)
	}
	ok2 := a.answered(cid)
	if r := ok2.Response; r.Data == nil || r.Data.Content != "approved" || r.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("staff's click = %+v", ok2.Response)
	}
	select {
	case got := <-clicked:
		if got != btn.CustomID {
			t.Fatalf("the handler got custom id %q, want %q", got, btn.CustomID)
		}
	default:
		t.Fatal("the staff click did not run the handler")
	}
	if len(clicked) != 0 {
		t.Fatal("the member's refused click ran the handler")
	}

	// /slow: deferred while the handler waits, answered as a follow-up.
	sid, err := a.Discord().RunCommand(e2eChannel, e2eAnn, "slow")
	if err != nil {
		t.Fatal(err)
	}
	deferred := a.answered(sid)
	if r := deferred.Response; r.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource || r.Data == nil ||
		r.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("/slow's first callback = %+v, want a deferred ephemeral reply", deferred.Response)
	}
	close(release)
	var fin *fakediscord.InteractionState
	a.WaitFor("the slow answer", func() bool {
		fin = a.Discord().Interaction(sid)
		return len(fin.Followups) == 1 && fin.Original == nil
	})
	if f := fin.Followups[0]; f.Content != "the slow answer" || f.Flags&discordgo.MessageFlagsEphemeral != 0 || fin.Callbacks != 1 {
		t.Fatalf("/slow's follow-up = %+v (callbacks %d)", f, fin.Callbacks)
	}
	if got := channelContents(a.Discord().Messages(e2eChannel)); !strings.Contains(got, "the slow answer") {
		t.Fatalf("#general = %s", got)
	}
}

func channelContents(ms []*discordgo.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}

// TestE2EActions: an undeclared action is refused before any request; a
// 429 is retried within the ctx and the send succeeds; a send waiting out
// a long rate limit stops when its ctx is cancelled, without a second
// request.
func TestE2EActions(t *testing.T) {
	m := newE2EModule()
	a, c := startE2EModule(t, m)
	a.waitConnected(c)
	rt := m.runtime()
	ctx := context.Background()
	guild, general, slow := e2eID(t, e2eGuild), e2eID(t, e2eChannel), e2eID(t, e2eSlowChan)

	before := len(a.Discord().Requests())
	err := rt.Discord.DeleteMessage(ctx, sdk.MessageRef{GuildID: guild, ChannelID: general, MessageID: 1}, "undeclared")
	var undeclared *sdk.UndeclaredDiscordActionError
	if !errors.As(err, &undeclared) {
		t.Fatalf("delete_message (undeclared) = %v, want UndeclaredDiscordActionError", err)
	}
	if _, err := rt.Discord.FetchRoles(ctx, guild); !errors.As(err, &undeclared) {
		t.Fatalf("fetch_roles (undeclared) = %v, want UndeclaredDiscordActionError", err)
	}
	for _, r := range a.Discord().Requests()[before:] {
		if strings.Contains(r.Route, "/messages/{message}") || strings.HasSuffix(r.Route, "/roles") {
			t.Fatalf("an undeclared action sent %s", r.Route)
		}
	}

	const sendRoute = "POST /channels/{channel}/messages"
	a.Discord().InjectFault(fakediscord.Fault{Route: sendRoute, Status: http.StatusTooManyRequests, RetryAfter: 20 * time.Millisecond})
	sctx, cancel := context.WithTimeout(ctx, e2eWait)
	ref, err := rt.Discord.SendMessage(sctx, general, sdk.OutgoingMessage{Content: "after a 429"})
	cancel()
	if err != nil {
		t.Fatalf("send after a 429: %v", err)
	}
	var statuses []int
	for _, r := range a.Discord().RequestsTo(sendRoute) {
		statuses = append(statuses, r.Status)
	}
	if len(statuses) != 2 || statuses[0] != http.StatusTooManyRequests || statuses[1] != http.StatusOK {
		t.Fatalf("send requests = %v, want [429 200]", statuses)
	}
	if ms := a.Discord().Messages(e2eChannel); len(ms) != 1 || ms[0].Content != "after a 429" || ms[0].ID != strconv.FormatUint(ref.MessageID, 10) {
		t.Fatalf("#general = %+v, ref %+v", ms, ref)
	}

	// An hour's rate limit on #slow: the send waits until its ctx ends.
	a.Discord().InjectFault(fakediscord.Fault{Route: sendRoute, Status: http.StatusTooManyRequests, RetryAfter: time.Hour})
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	done := make(chan error, 1)
	go func() {
		_, err := rt.Discord.SendMessage(wctx, slow, sdk.OutgoingMessage{Content: "never"})
		done <- err
	}()
	a.WaitFor("the 429 on #slow", func() bool { return len(a.Discord().RequestsTo(sendRoute)) == 3 })
	// /discord lists the rate limits met, the hour's among them. Waited for
	// before the cancel: the fake records a request before it answers, so
	// a cancel right after the third request can end the send before the
	// bot has read its 429 (no event; seen under load).
	c.waitPage("the rate limits on /discord", "/discord", `data-testid="discord-limit-table"`,
		"<code class=\"break\">"+sendRoute+"</code>", ">1h0m0s</td>")
	select {
	case err := <-done:
		t.Fatalf("the send returned during the rate limit: %v", err)
	default:
	}
	wcancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled send = %v, want context.Canceled", err)
		}
	case <-time.After(e2eWait):
		t.Fatal("a cancelled send kept waiting")
	}
	if n := len(a.Discord().RequestsTo(sendRoute)); n != 3 {
		t.Fatalf("%d send requests, want 3 (no retry after the cancel)", n)
	}
	if ms := a.Discord().Messages(e2eSlowChan); len(ms) != 0 {
		t.Fatalf("#slow = %+v", ms)
	}
}

// TestE2EConnection: a dropped connection resumes (no new identify); a
// 4004 stops reconnecting and /discord shows it.
func TestE2EConnection(t *testing.T) {
	m := newE2EModule()
	a, c := startE2EModule(t, m)
	a.waitConnected(c)
	gs := a.Discord().GatewayStats()
	if gs.Identifies != 1 || gs.Resumes != 0 {
		t.Fatalf("gateway after the start = %+v", gs)
	}
	a.Discord().DropConnections()
	a.WaitFor("the resume", func() bool {
		s := a.Discord().GatewayStats()
		return s.Resumes == 1 && s.Connections == 1
	})
	c.waitPage("connected again", "/discord", `data-state="connected"`)
	// The resumed session delivers events.
	if _, err := a.Discord().PostMessage(e2eChannel, e2eAnn, "after the resume"); err != nil {
		t.Fatal(err)
	}
	if ev := m.next(t, "the message after the resume"); ev.Payload.(sdk.MessageEvent).Message.Content != "after the resume" {
		t.Fatalf("event = %+v", ev)
	}
	if s := a.Discord().GatewayStats(); s.Identifies != 1 {
		t.Fatalf("identifies = %d after the resume, want 1", s.Identifies)
	}

	// The token is reset in the developer portal; Discord closes with 4004.
	a.Discord().SetToken("a-new-token")
	a.Discord().CloseGateway(4004)
	body := c.waitPage("the 4004 on /discord", "/discord", `data-state="stopped"`, `data-code="4004"`)
	for _, want := range []string{"Discord rejected the bot token (close 4004, authentication failed).", "Reset Token"} {
		if !strings.Contains(body, want) {
			t.Errorf("/discord lacks %q", want)
		}
	}
	if strings.Contains(body, a.Discord().Token()) {
		t.Error("/discord shows the token")
	}
	// Stopped: no further connection or identify (it would fail the same
	// way). The fake forgets a closed connection once its reader ends.
	a.WaitFor("the closed connection gone", func() bool { return a.Discord().GatewayStats().Connections == 0 })
	if s := a.Discord().GatewayStats(); s.Identifies != 1 {
		t.Fatalf("gateway after the 4004 = %+v", s)
	}
	if _, body := c.get("/discord"); !strings.Contains(body, `data-state="stopped"`) {
		t.Fatal("the bot left the stopped state")
	}
	if s := a.Discord().GatewayStats(); s.Connections != 0 || s.Identifies != 1 {
		t.Fatalf("gateway after the 4004 = %+v", s)
	}
}

// e2eDigestChan is e2eGuild's kudos digest channel.
const e2eDigestChan = "420000000000000009"

// TestE2EKudos: the kudos module in the composed appliance against the
// fake: ann runs `/kudos give member:bob reason:…` and the public reply
// carries the Thank back button; ann's own click is refused, bob's gives
// ann a kudos back; the digest job, run now from its module page, posts
// the leaderboard embed in the guild's digest channel.
func TestE2EKudos(t *testing.T) {
	a := startE2E(t, e2eOptions{specs: []sdk.Spec{kudos.Spec()}, modules: kudos.Name,
		seed: func(f *fakediscord.Server) {
			e2eSeed(f)
			f.AddChannel(fakediscord.ChannelSpec{ID: e2eDigestChan, GuildID: e2eGuild, Name: "kudos"})
		},
		docs: map[guildcfg.Target]string{
			guildcfg.GuildTarget(e2eID(t, e2eGuild)):                   e2eGuildDoc,
			guildcfg.GuildModuleTarget(e2eID(t, e2eGuild), kudos.Name): "---\ndigest_channel_id: " + e2eDigestChan + "\n---\n",
		}})
	c := a.signIn()
	a.waitConnected(c, "kudos")
	// The digest's first run is due at the module's start (RunEvery runs
	// now, jitter only spaces the later runs): let it find nothing to post
	// before any kudos exist, or, run late on a loaded machine, it posts a
	// board of the kudos given so far beside the one run from the page.
	a.WaitJobs()

	id, err := a.Discord().RunCommand(e2eChannel, e2eAnn, "kudos", &discordgo.ApplicationCommandInteractionDataOption{
		Name: "give", Type: discordgo.ApplicationCommandOptionSubCommand, Options: []*discordgo.ApplicationCommandInteractionDataOption{
			{Name: "member", Type: discordgo.ApplicationCommandOptionUser, Value: e2eBob},
			{Name: "reason", Type: discordgo.ApplicationCommandOptionString, Value: "fixing the build"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	st := a.answered(id)
	if r := st.Response; r.Type != discordgo.InteractionResponseChannelMessageWithSource || r.Data == nil ||
		r.Data.Content != "Kudos to <@"+e2eBob+">: fixing the build" || r.Data.Flags&discordgo.MessageFlagsEphemeral != 0 {
		t.Fatalf("/kudos give = %+v", st.Response)
	}
	if st.Original == nil || len(st.Original.Components) != 1 {
		t.Fatalf("/kudos give's message = %+v", st.Original)
	}
	btn, ok := st.Original.Components[0].(*discordgo.ActionsRow).Components[0].(*discordgo.Button)
	if !ok || btn.Label != "Thank back" || !strings.HasPrefix(btn.CustomID, "m:"+kudos.Name+":"+kudos.ButtonThankBack+":") {
		t.Fatalf("the button = %+v", st.Original.Components[0])
	}
	if ms := a.Discord().Messages(e2eChannel); len(ms) != 1 || ms[0].Content != "Kudos to <@"+e2eBob+">: fixing the build" || ms[0].Author.ID != a.Discord().BotID() {
		t.Fatalf("#general = %+v", ms)
	}

	// The giver may not thank herself back.
	cid, err := a.Discord().ClickButton(e2eChannel, st.Original.ID, e2eAnn, btn.CustomID)
	if err != nil {
		t.Fatal(err)
	}
	if r := a.answered(cid).Response; r.Data == nil || r.Data.Content != "Only the person thanked can thank back." || r.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Fatalf("ann's click = %+v", r)
	}
	cid, err = a.Discord().ClickButton(e2eChannel, st.Original.ID, e2eBob, btn.CustomID)
	if err != nil {
		t.Fatal(err)
	}
	back := a.answered(cid)
	if r := back.Response; r.Type != discordgo.InteractionResponseChannelMessageWithSource || r.Data == nil ||
		r.Data.Content != "Kudos to <@"+e2eAnn+">: thanks for the kudos!" || r.Data.Flags&discordgo.MessageFlagsEphemeral != 0 {
		t.Fatalf("bob's thank back = %+v", back.Response)
	}
	if got := channelContents(a.Discord().Messages(e2eChannel)); got != "Kudos to <@"+e2eBob+">: fixing the build\nKudos to <@"+e2eAnn+">: thanks for the kudos!\n" {
		t.Fatalf("#general:\n%s", got)
	}

	// The digest, run now from the module page (the scheduler's RunNow).
	c.get("/modules/" + kudos.Name)
	code, _, loc := c.post("/modules/"+kudos.Name+"/jobs/"+kudos.DigestJobKey+"/run", url.Values{"job": {kudos.DigestJobKey}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/modules/"+kudos.Name) {
		t.Fatalf("run the digest now: %d to %q", code, loc)
	}
	var digest []*discordgo.Message
	a.WaitFor("the digest post", func() bool {
		digest = a.Discord().Messages(e2eDigestChan)
		return len(digest) > 0
	})
	a.WaitJobs() // the run settled: one post, not one more behind it
	digest = a.Discord().Messages(e2eDigestChan)
	if len(digest) != 1 || digest[0].Author.ID != a.Discord().BotID() || len(digest[0].Embeds) != 1 {
		t.Fatalf("#kudos = %+v", digest)
	}
	e := digest[0].Embeds[0]
	if e.Title != "Kudos, last 7 day(s)" || !strings.Contains(e.Description, "<@"+e2eBob+"> — 1") ||
		!strings.Contains(e.Description, "<@"+e2eAnn+"> — 1") || e.Footer == nil || e.Footer.Text != "Top 10" {
		t.Fatalf("the digest embed = %+v", e)
	}
}

// TestE2EFirstCommandSyncCarriesTheModulesCommands: the modules start
// after the bot's first READY, and READY syncs every command set; the
// global set Discord is sent must never be the empty set of "no module
// registered yet" — a bulk overwrite with [] deletes the application's
// commands (their ids, the guilds' per-command permissions) and recreating
// them counts against Discord's daily command-create limit. Every global
// overwrite carries the module's commands.
func TestE2EFirstCommandSyncCarriesTheModulesCommands(t *testing.T) {
	m := e2eInteractionsModule(make(chan struct{}), make(chan string, 4))
	a, c := startE2EModule(t, m)
	a.waitConnected(c, "ping", "slow")
	puts := a.Discord().RequestsTo("PUT /applications/{app}/commands")
	if len(puts) == 0 {
		t.Fatal("no global command overwrite recorded")
	}
	for i, r := range puts {
		var cmds []map[string]any
		if err := json.Unmarshal(r.Body, &cmds); err != nil {
			t.Fatalf("overwrite %d: %v (%s)", i, err, r.Body)
		}
		if len(cmds) == 0 {
			t.Errorf("global overwrite %d of %d sent no command: the READY sync ran before the modules registered theirs", i+1, len(puts))
		}
	}
}
