package fakediscord

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// TestRESTReadsReturnWhatWasWritten drives the real discordgo client through the read routes
// and the writes whose effect a later read shows.
func TestRESTReadsReturnWhatWasWritten(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.rest()

	me, err := s.User("@me")
	if err != nil || me.ID != w.fake.BotID() || !me.Bot {
		t.Fatalf("users/@me = %+v, %v", me, err)
	}
	app, err := s.Application("@me")
	if err != nil || app.ID != w.fake.AppID() || app.Owner == nil || app.Owner.ID != "900000000000000003" ||
		app.Flags&FlagGatewayMessageContentLimited == 0 {
		t.Fatalf("applications/@me = %+v, %v", app, err)
	}
	gw, err := s.GatewayBot()
	if err != nil || strings.TrimSuffix(gw.URL, "/") != w.fake.GatewayURL() || gw.Shards != 1 ||
		gw.SessionStartLimit.Remaining != DefaultSessionStarts-w.fake.GatewayStats().Identifies {
		t.Fatalf("gateway/bot = %+v, %v", gw, err)
	}
	g, err := s.Guild(w.guild)
	if err != nil || g.Name != "test guild" || len(g.Roles) != 3 {
		t.Fatalf("guild = %+v, %v", g, err)
	}
	chans, err := s.GuildChannels(w.guild)
	if err != nil || len(chans) != 2 || chans[1].Name != "general" || chans[1].ParentID != w.category {
		t.Fatalf("channels = %+v, %v", chans, err)
	}
	// announcement channel and a thread, with overwrites
	ann, err := s.GuildChannelCreateComplex(w.guild, discordgo.GuildChannelCreateData{Name: "news", Type: discordgo.ChannelTypeGuildNews,
		PermissionOverwrites: []*discordgo.PermissionOverwrite{{ID: w.guild, Type: discordgo.PermissionOverwriteTypeRole, Deny: discordgo.PermissionSendMessages}}})
	if err != nil || ann.Type != discordgo.ChannelTypeGuildNews {
		t.Fatalf("create announcement channel = %+v, %v", ann, err)
	}
	if got, _ := s.Channel(ann.ID); got == nil || len(got.PermissionOverwrites) != 1 {
		t.Fatalf("channel overwrites not kept: %+v", got)
	}
	th, err := s.ThreadStartComplex(w.text, &discordgo.ThreadStart{Name: "topic", Type: discordgo.ChannelTypeGuildPublicThread})
	if err != nil || !th.IsThread() || th.ParentID != w.text {
		t.Fatalf("thread = %+v, %v", th, err)
	}
	if _, err := s.ChannelMessageSend(th.ID, "in the thread"); err != nil {
		t.Fatalf("send in thread: %v", err)
	}
	edited, err := s.ChannelEdit(w.text, &discordgo.ChannelEdit{Topic: "the topic"})
	if err != nil || edited.Topic != "the topic" {
		t.Fatalf("channel edit = %+v, %v", edited, err)
	}
	role, err := s.GuildRoleCreate(w.guild, &discordgo.RoleParams{Name: "helper", Permissions: ptr(int64(discordgo.PermissionSendMessages))})
	if err != nil || role.Name != "helper" {
		t.Fatalf("role create = %+v, %v", role, err)
	}
	roles, _ := s.GuildRoles(w.guild)
	if len(roles) != 4 {
		t.Fatalf("roles = %d, want 4", len(roles))
	}
	m, err := s.GuildMember(w.guild, w.bob)
	if err != nil || m.User.Username != "bob" || len(m.Roles) != 1 || m.Roles[0] != w.modRole {
		t.Fatalf("member = %+v, %v", m, err)
	}
	members, err := s.GuildMembers(w.guild, "", 1000)
	if err != nil || len(members) != 4 { // bot, owner, alice, bob
		t.Fatalf("members = %d, %v", len(members), err)
	}
	found, err := s.GuildMembersSearch(w.guild, "AL", 10)
	if err != nil || len(found) != 1 || found[0].User.ID != w.alice {
		t.Fatalf("search = %+v, %v", found, err)
	}
	if err := s.GuildMemberRoleAdd(w.guild, w.alice, role.ID); err != nil {
		t.Fatalf("role add: %v", err)
	}
	if got := w.fake.Member(w.guild, w.alice); len(got.Roles) != 1 || got.Roles[0] != role.ID {
		t.Fatalf("alice's roles = %v", got.Roles)
	}
	if err := s.GuildMemberRoleRemove(w.guild, w.alice, role.ID); err != nil || len(w.fake.Member(w.guild, w.alice).Roles) != 0 {
		t.Fatalf("role remove: %v", err)
	}
	inv, err := s.ChannelInviteCreate(w.text, discordgo.Invite{MaxAge: 3600, MaxUses: 5})
	if err != nil || inv.Code == "" || inv.MaxUses != 5 {
		t.Fatalf("invite = %+v, %v", inv, err)
	}
	if got, err := s.Invite(inv.Code); err != nil || got.Channel.ID != w.text {
		t.Fatalf("get invite = %+v, %v", got, err)
	}
	if list, err := s.GuildInvites(w.guild); err != nil || len(list) != 1 {
		t.Fatalf("guild invites = %+v, %v", list, err)
	}
	if _, err := s.InviteDelete(inv.Code); err != nil {
		t.Fatalf("delete invite: %v", err)
	}
	_, err = s.Invite(inv.Code)
	wantAPIError(t, err, 404, CodeUnknownInvite)
}

// TestRESTMessages: create with content, embeds, components (legacy and V2), attachments,
// allowed_mentions and replies; edit; delete; bulk delete; history; pins; reactions.
func TestRESTMessages(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.rest()

	first, err := s.ChannelMessageSendComplex(w.text, &discordgo.MessageSend{
		Content: "hello <@" + w.alice + "> and <@" + w.bob + ">",
		Embeds:  []*discordgo.MessageEmbed{{Title: "t", Description: "d", Fields: []*discordgo.MessageEmbedField{{Name: "n", Value: "v"}}}},
		Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "ok", CustomID: "kudos:ok:1", Style: discordgo.PrimaryButton}}}},
		AllowedMentions: &discordgo.MessageAllowedMentions{Users: []string{w.alice}},
		Files:           []*discordgo.File{{Name: "a.txt", ContentType: "text/plain", Reader: strings.NewReader("abc")}},
	})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if first.Author.ID != w.fake.BotID() || len(first.Embeds) != 1 || len(first.Components) != 1 || len(first.Attachments) != 1 ||
		first.Attachments[0].Filename != "a.txt" || first.Attachments[0].Size != 3 {
		t.Fatalf("sent message = %+v", first)
	}
	if len(first.Mentions) != 1 || first.Mentions[0].ID != w.alice {
		t.Fatalf("mentions = %+v, want only alice (allowed_mentions)", first.Mentions)
	}
	reply, err := s.ChannelMessageSendReply(w.text, "a reply", first.Reference())
	if err != nil || reply.Type != discordgo.MessageTypeReply || reply.ReferencedMessage == nil || reply.ReferencedMessage.ID != first.ID {
		t.Fatalf("reply = %+v, %v", reply, err)
	}
	_, err = s.ChannelMessageSendReply(w.text, "x", &discordgo.MessageReference{MessageID: "1234", ChannelID: w.text})
	wantAPIError(t, err, 400, CodeInvalidFormBody)

	v2, err := s.ChannelMessageSendComplex(w.text, &discordgo.MessageSend{Flags: discordgo.MessageFlagsIsComponentsV2,
		Components: []discordgo.MessageComponent{discordgo.Container{Components: []discordgo.MessageComponent{discordgo.TextDisplay{Content: "v2 text"}}}}})
	if err != nil || v2.Flags&discordgo.MessageFlagsIsComponentsV2 == 0 || len(v2.Components) != 1 {
		t.Fatalf("v2 = %+v, %v", v2, err)
	}

	edited, err := s.ChannelMessageEdit(w.text, first.ID, "changed")
	if err != nil || edited.Content != "changed" || edited.EditedTimestamp == nil || len(edited.Embeds) != 1 {
		t.Fatalf("edit = %+v, %v", edited, err)
	}
	got, err := s.ChannelMessage(w.text, first.ID)
	if err != nil || got.Content != "changed" {
		t.Fatalf("get after edit = %+v, %v", got, err)
	}
	user, _ := w.fake.PostMessage(w.text, w.alice, "from alice")
	_, err = s.ChannelMessageEdit(w.text, user.ID, "not yours")
	wantAPIError(t, err, 403, 50005)

	if err := s.ChannelMessagePin(w.text, first.ID); err != nil {
		t.Fatalf("pin: %v", err)
	}
	if pins, err := s.ChannelMessagesPinned(w.text); err != nil || len(pins) != 1 || pins[0].ID != first.ID {
		t.Fatalf("pins = %+v, %v", pins, err)
	}
	if err := s.MessageReactionAdd(w.text, first.ID, "👍"); err != nil {
		t.Fatalf("react: %v", err)
	}
	if got, _ := s.ChannelMessage(w.text, first.ID); len(got.Reactions) != 1 || !got.Reactions[0].Me || got.Reactions[0].Count != 1 {
		t.Fatalf("reactions = %+v", got.Reactions)
	}

	// history: 1 first, 2 reply, 3 v2, 4 alice, then 5..10
	var ids []string
	for _, m := range w.fake.Messages(w.text) {
		ids = append(ids, m.ID)
	}
	for i := 0; i < 6; i++ {
		m, err := s.ChannelMessageSend(w.text, "n")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	cases := []struct {
		name                  string
		limit                 int
		before, after, around string
		want                  []string // newest first
	}{
		{"latest", 3, "", "", "", []string{ids[9], ids[8], ids[7]}},
		{"before", 2, ids[3], "", "", []string{ids[2], ids[1]}},
		{"after", 2, "", ids[3], "", []string{ids[5], ids[4]}},
		{"around", 3, "", "", ids[5], []string{ids[6], ids[5], ids[4]}},
		{"all", 100, "", "", "", []string{ids[9], ids[8], ids[7], ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ms, err := s.ChannelMessages(w.text, c.limit, c.before, c.after, c.around)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.ID)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("history = %v, want %v", got, c.want)
			}
		})
	}
	_, err = s.ChannelMessages(w.text, 101, "", "", "")
	wantAPIError(t, err, 400, CodeInvalidFormBody)

	if err := s.ChannelMessageDelete(w.text, ids[9]); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = s.ChannelMessage(w.text, ids[9])
	wantAPIError(t, err, 404, CodeUnknownMessage)
	if err := s.ChannelMessagesBulkDelete(w.text, []string{ids[8], ids[7]}); err != nil {
		t.Fatalf("bulk delete: %v", err)
	}
	if n := len(w.fake.Messages(w.text)); n != 7 {
		t.Fatalf("messages after deletes = %d, want 7", n)
	}
	// discordgo sends a single id to the single-delete route; a raw body of one is refused
	_, err = s.RequestWithBucketID("POST", discordgo.EndpointChannelMessagesBulkDelete(w.text), map[string][]string{"messages": {ids[6]}}, "")
	wantAPIError(t, err, 400, CodeBulkDeleteCount)
}

// TestRESTOldMessagesCannotBeBulkDeleted: the 14-day rule, on the fake's clock.
func TestRESTOldMessagesCannotBeBulkDeleted(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := newWorld(t, Options{Now: func() time.Time { return now }})
	s := w.rest()
	a, _ := s.ChannelMessageSend(w.text, "old a")
	b, _ := s.ChannelMessageSend(w.text, "old b")
	now = now.Add(15 * 24 * time.Hour)
	err := s.ChannelMessagesBulkDelete(w.text, []string{a.ID, b.ID})
	wantAPIError(t, err, 400, CodeBulkDeleteTooOld)
}

// TestRESTLimits: Discord's limits, each with its error body.
func TestRESTLimits(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.rest()
	long := strings.Repeat("x", 2001)
	row := func(cs ...discordgo.MessageComponent) discordgo.MessageComponent {
		return discordgo.ActionsRow{Components: cs}
	}
	btn := func(id string) discordgo.MessageComponent {
		return discordgo.Button{Label: "b", CustomID: id, Style: discordgo.PrimaryButton}
	}
	many := func(n int, f func(i int) *discordgo.MessageEmbed) []*discordgo.MessageEmbed {
		out := make([]*discordgo.MessageEmbed, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	cases := []struct {
		name     string
		msg      *discordgo.MessageSend
		code     int
		path     string // field path in errors
		errCode  string
		accepted bool
	}{
		{"content 2000 ok", &discordgo.MessageSend{Content: strings.Repeat("é", 2000)}, 0, "", "", true},
		{"content 2001", &discordgo.MessageSend{Content: long}, CodeInvalidFormBody, "content", "BASE_TYPE_MAX_LENGTH", false},
		{"empty", &discordgo.MessageSend{}, CodeEmptyMessage, "", "", false},
		{"11 embeds", &discordgo.MessageSend{Embeds: many(11, func(int) *discordgo.MessageEmbed { return &discordgo.MessageEmbed{Title: "t"} })}, CodeInvalidFormBody, "embeds", "BASE_TYPE_MAX_LENGTH", false},
		{"6001 embed chars", &discordgo.MessageSend{Embeds: many(2, func(i int) *discordgo.MessageEmbed {
			return &discordgo.MessageEmbed{Description: strings.Repeat("d", 3000+i)}
		})}, CodeInvalidFormBody, "embeds", "MAX_EMBED_SIZE_EXCEEDED", false},
		{"title 257", &discordgo.MessageSend{Embeds: []*discordgo.MessageEmbed{{Title: strings.Repeat("t", 257)}}}, CodeInvalidFormBody, "embeds.0.title", "BASE_TYPE_MAX_LENGTH", false},
		{"custom id 101", &discordgo.MessageSend{Components: []discordgo.MessageComponent{row(btn(strings.Repeat("c", 101)))}}, CodeInvalidFormBody, "components.0.components.0.custom_id", "BASE_TYPE_BAD_LENGTH", false},
		{"custom id 100 ok", &discordgo.MessageSend{Components: []discordgo.MessageComponent{row(btn(strings.Repeat("c", 100)))}}, 0, "", "", true},
		{"6 buttons", &discordgo.MessageSend{Components: []discordgo.MessageComponent{row(btn("1"), btn("2"), btn("3"), btn("4"), btn("5"), btn("6"))}}, CodeInvalidFormBody, "components.0.components", "BASE_TYPE_MAX_LENGTH", false},
		{"6 rows", &discordgo.MessageSend{Components: []discordgo.MessageComponent{row(btn("1")), row(btn("2")), row(btn("3")), row(btn("4")), row(btn("5")), row(btn("6"))}}, CodeInvalidFormBody, "components", "BASE_TYPE_MAX_LENGTH", false},
		{"v2 with content", &discordgo.MessageSend{Content: "x", Flags: discordgo.MessageFlagsIsComponentsV2,
			Components: []discordgo.MessageComponent{discordgo.TextDisplay{Content: "t"}}}, CodeInvalidFormBody, "content", "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2", false},
		{"v2 component without flag", &discordgo.MessageSend{Components: []discordgo.MessageComponent{discordgo.TextDisplay{Content: "t"}}}, CodeInvalidFormBody, "components.0.type", "COMPONENT_TYPE_INVALID", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(w.fake.Messages(w.text))
			_, err := s.ChannelMessageSendComplex(w.text, c.msg)
			if c.accepted {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			re := wantAPIError(t, err, 400, c.code)
			if c.path != "" {
				assertFieldError(t, re.ResponseBody, c.path, c.errCode)
			}
			if after := len(w.fake.Messages(w.text)); after != before {
				t.Fatalf("a refused message was stored (%d -> %d)", before, after)
			}
		})
	}
}

// assertFieldError finds errors.<path>._errors[].code == code in a 50035 body.
func assertFieldError(t *testing.T, body []byte, path, code string) {
	t.Helper()
	var b struct {
		Errors map[string]any `json:"errors"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	var node any = b.Errors
	for _, p := range strings.Split(path, ".") {
		m, ok := node.(map[string]any)
		if !ok {
			t.Fatalf("no %s in %s", path, body)
		}
		node = m[p]
	}
	m, _ := node.(map[string]any)
	errs, _ := m["_errors"].([]any)
	for _, e := range errs {
		if e.(map[string]any)["code"] == code {
			return
		}
	}
	t.Fatalf("errors.%s has no %s: %s", path, code, body)
}

// TestRESTUnknownIDsAndPermissions: 404 with the right code for every kind of id; 403 50013
// without the permission; 401 without the "Bot " prefix.
func TestRESTUnknownIDsAndPermissions(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	none := int64(0)
	locked := w.fake.AddGuild(GuildSpec{Name: "locked", BotPermissions: &none}).ID
	denyAll := []*discordgo.PermissionOverwrite{{ID: locked, Type: discordgo.PermissionOverwriteTypeRole, Deny: discordgo.PermissionSendMessages}}
	lockedText := w.fake.AddChannel(ChannelSpec{GuildID: locked, Name: "general", Overwrites: denyAll}).ID
	w.fake.AddMember(locked, w.alice)
	denied := w.fake.AddChannel(ChannelSpec{GuildID: w.guild, Name: "quiet",
		Overwrites: []*discordgo.PermissionOverwrite{{ID: w.fake.BotID(), Type: discordgo.PermissionOverwriteTypeMember, Deny: discordgo.PermissionSendMessages}}}).ID
	// @everyone may not send in the locked guild's channels; a member overwrite lets the bot
	allowed := w.fake.AddChannel(ChannelSpec{GuildID: locked, Name: "open", Overwrites: append(denyAll,
		&discordgo.PermissionOverwrite{ID: w.fake.BotID(), Type: discordgo.PermissionOverwriteTypeMember, Allow: discordgo.PermissionSendMessages})}).ID
	s := w.rest()
	cases := []struct {
		name         string
		call         func() error
		status, code int
	}{
		{"unknown guild", func() error { _, err := s.Guild("1"); return err }, 404, CodeUnknownGuild},
		{"unknown channel", func() error { _, err := s.Channel("1"); return err }, 404, CodeUnknownChannel},
		{"unknown message", func() error { _, err := s.ChannelMessage(w.text, "1"); return err }, 404, CodeUnknownMessage},
		{"unknown member", func() error { _, err := s.GuildMember(w.guild, "1"); return err }, 404, CodeUnknownMember},
		{"unknown user", func() error { _, err := s.User("1"); return err }, 404, CodeUnknownUser},
		{"unknown role", func() error { return s.GuildMemberRoleAdd(w.guild, w.alice, "1") }, 404, CodeUnknownRole},
		{"unknown ban", func() error { _, err := s.GuildBan(w.guild, w.alice); return err }, 404, CodeUnknownBan},
		{"unknown interaction", func() error {
			return s.InteractionRespond(&discordgo.Interaction{ID: "1", Token: "x"}, &discordgo.InteractionResponse{Type: 4})
		}, 404, CodeUnknownInteraction},
		{"unknown webhook", func() error {
			_, err := s.FollowupMessageCreate(&discordgo.Interaction{AppID: w.fake.AppID(), Token: "x"}, true, &discordgo.WebhookParams{Content: "x"})
			return err
		}, 404, CodeUnknownWebhook},
		{"send without permission", func() error { _, err := s.ChannelMessageSend(lockedText, "x"); return err }, 403, CodeMissingPermissions},
		{"kick without permission", func() error { return s.GuildMemberDelete(locked, w.alice) }, 403, CodeMissingPermissions},
		{"ban without permission", func() error { return s.GuildBanCreate(locked, w.alice, 0) }, 403, CodeMissingPermissions},
		{"kick the owner", func() error { return s.GuildMemberDelete(w.guild, "900000000000000003") }, 403, CodeMissingPermissions},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantAPIError(t, c.call(), c.status, c.code) })
	}
	if _, err := s.ChannelMessageSend(allowed, "allowed by the member overwrite"); err != nil {
		t.Fatalf("send with a member allow overwrite: %v", err)
	}
	if _, err := s.ChannelMessageSend(denied, "administrator ignores overwrites"); err != nil {
		t.Fatalf("administrator bot refused: %v", err)
	}
	bare, _ := discordgo.New(w.fake.Token()) // no "Bot " prefix
	w.fake.Attach(bare)
	_, err := bare.User("@me")
	wantAPIError(t, err, 401, CodeUnauthorized)
}

// TestRESTModeration: timeout, kick, ban with delete_message_seconds, unban — each with the
// X-Audit-Log-Reason header landing in the audit log.
func TestRESTModeration(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.rest()
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	if err := s.GuildMemberTimeout(w.guild, w.alice, &until); err != nil {
		t.Fatalf("timeout: %v", err)
	}
	if m := w.fake.Member(w.guild, w.alice); m.CommunicationDisabledUntil == nil || !m.CommunicationDisabledUntil.Equal(until) {
		t.Fatalf("timeout not kept: %+v", m.CommunicationDisabledUntil)
	}
	tooLong := time.Now().Add(29 * 24 * time.Hour)
	wantAPIError(t, s.GuildMemberTimeout(w.guild, w.alice, &tooLong), 400, CodeInvalidFormBody)

	if _, err := w.fake.PostMessage(w.text, w.bob, "spam"); err != nil {
		t.Fatal(err)
	}
	_, err := s.RequestWithBucketID("PUT", discordgo.EndpointGuildBan(w.guild, w.bob), map[string]int{"delete_message_seconds": 3600}, "",
		discordgo.WithAuditLogReason("spam%20bot"))
	if err != nil {
		t.Fatalf("ban: %v", err)
	}
	if b := w.fake.Ban(w.guild, w.bob); b == nil || b.Reason != "spam bot" {
		t.Fatalf("ban = %+v", b)
	}
	if w.fake.Member(w.guild, w.bob) != nil {
		t.Fatal("banned member still a member")
	}
	if n := len(w.fake.Messages(w.text)); n != 0 {
		t.Fatalf("delete_message_seconds left %d messages", n)
	}
	_, err = s.RequestWithBucketID("PUT", discordgo.EndpointGuildBan(w.guild, w.alice), map[string]int{"delete_message_seconds": 604801}, "")
	wantAPIError(t, err, 400, CodeInvalidFormBody)
	if err := s.GuildMemberDelete(w.guild, w.alice, discordgo.WithAuditLogReason("bye")); err != nil {
		t.Fatalf("kick: %v", err)
	}
	if err := s.GuildBanDelete(w.guild, w.bob); err != nil {
		t.Fatalf("unban: %v", err)
	}
	log, err := s.GuildAuditLog(w.guild, "", "", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[discordgo.AuditLogAction]string{}
	for _, e := range log.AuditLogEntries {
		kinds[*e.ActionType] = e.Reason
	}
	if kinds[discordgo.AuditLogActionMemberBanAdd] != "spam bot" || kinds[discordgo.AuditLogActionMemberKick] != "bye" ||
		len(log.AuditLogEntries) != 4 {
		t.Fatalf("audit log = %v (%d entries)", kinds, len(log.AuditLogEntries))
	}
	if r := w.fake.RequestsTo("DELETE /guilds/{guild}/members/{user}"); len(r) != 1 || r[0].Header.Get("X-Audit-Log-Reason") != "bye" {
		t.Fatalf("recorded kick = %+v", r)
	}
}

// TestRESTCommandOverwrite: bulk overwrite global and per guild, ids kept across overwrites,
// and Discord's validation.
func TestRESTCommandOverwrite(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.rest()
	app := w.fake.AppID()
	cmds := []*discordgo.ApplicationCommand{
		{Name: "ping", Description: "pong", Options: []*discordgo.ApplicationCommandOption{
			{Name: "who", Description: "w", Type: discordgo.ApplicationCommandOptionUser, Required: true},
			{Name: "why", Description: "w", Type: discordgo.ApplicationCommandOptionString}}},
		{Name: "Report", Type: discordgo.MessageApplicationCommand},
	}
	out, err := s.ApplicationCommandBulkOverwrite(app, w.guild, cmds)
	if err != nil || len(out) != 2 || out[0].ID == "" || out[0].GuildID != w.guild {
		t.Fatalf("overwrite = %+v, %v", out, err)
	}
	again, err := s.ApplicationCommandBulkOverwrite(app, w.guild, cmds[:1])
	if err != nil || len(again) != 1 || again[0].ID != out[0].ID {
		t.Fatalf("second overwrite = %+v, %v (ids must be kept)", again, err)
	}
	if got := w.fake.Commands(w.guild); len(got) != 1 {
		t.Fatalf("guild commands = %d, want 1 (overwrite deletes the rest)", len(got))
	}
	if _, err := s.ApplicationCommandBulkOverwrite(app, "", cmds); err != nil || len(w.fake.Commands("")) != 2 {
		t.Fatalf("global overwrite: %v", err)
	}
	if list, err := s.ApplicationCommands(app, ""); err != nil || len(list) != 2 {
		t.Fatalf("list global = %v, %v", list, err)
	}
	tooMany := make([]*discordgo.ApplicationCommand, 101)
	for i := range tooMany {
		tooMany[i] = &discordgo.ApplicationCommand{Name: "c" + strings.Repeat("x", i%20) + string(rune('a'+i%26)) + string(rune('a'+i/26)), Description: "d"}
	}
	bad := []struct {
		name string
		cmds []*discordgo.ApplicationCommand
		path string
		code string
	}{
		{"upper-case name", []*discordgo.ApplicationCommand{{Name: "Ping", Description: "d"}}, "0.name", "APPLICATION_COMMAND_INVALID_NAME"},
		{"space in name", []*discordgo.ApplicationCommand{{Name: "a b", Description: "d"}}, "0.name", "APPLICATION_COMMAND_INVALID_NAME"},
		{"33-char name", []*discordgo.ApplicationCommand{{Name: strings.Repeat("a", 33), Description: "d"}}, "0.name", "APPLICATION_COMMAND_INVALID_NAME"},
		{"no description", []*discordgo.ApplicationCommand{{Name: "a"}}, "0.description", "BASE_TYPE_BAD_LENGTH"},
		{"101-char description", []*discordgo.ApplicationCommand{{Name: "a", Description: strings.Repeat("d", 101)}}, "0.description", "BASE_TYPE_BAD_LENGTH"},
		{"duplicate", []*discordgo.ApplicationCommand{{Name: "a", Description: "d"}, {Name: "a", Description: "d"}}, "1.name", "APPLICATION_COMMANDS_DUPLICATE_NAME"},
		{"required after optional", []*discordgo.ApplicationCommand{{Name: "a", Description: "d", Options: []*discordgo.ApplicationCommandOption{
			{Name: "x", Description: "x", Type: 3}, {Name: "y", Description: "y", Type: 3, Required: true}}}}, "0.options.1.required", "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID"},
		{"context menu description", []*discordgo.ApplicationCommand{{Name: "Report", Type: discordgo.UserApplicationCommand, Description: "no"}}, "0.description", "APPLICATION_COMMAND_CONTEXT_MENU_DESCRIPTION"},
		{"101 commands", tooMany, "", "APPLICATION_COMMANDS_TOO_MANY"},
		{"null command", []*discordgo.ApplicationCommand{nil}, "0", "BASE_TYPE_REQUIRED"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.ApplicationCommandBulkOverwrite(app, w.guild, c.cmds)
			re := wantAPIError(t, err, 400, CodeInvalidFormBody)
			if c.path != "" {
				assertFieldError(t, re.ResponseBody, c.path, c.code)
			} else if !bytes.Contains(re.ResponseBody, []byte(c.code)) {
				t.Fatalf("body %s lacks %s", re.ResponseBody, c.code)
			}
			if got := w.fake.Commands(w.guild); len(got) != 1 {
				t.Fatalf("a refused overwrite changed the commands: %d", len(got))
			}
		})
	}
	_, err = s.ApplicationCommandBulkOverwrite("42", w.guild, cmds)
	wantAPIError(t, err, 403, 20012)
}

// TestRESTVersionsAndUnknownRoutes: v9 and v10 both answer; other versions and unknown routes
// give Discord's 404 body; every request is recorded with its route.
func TestRESTVersionsAndUnknownRoutes(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	client := &http.Client{Transport: w.fake.Transport()}
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/api/v10/users/@me", 200}, {"/api/v9/users/@me", 200}, {"/api/v8/users/@me", 404}, {"/api/v10/nope", 404},
	} {
		req, _ := http.NewRequest("GET", "https://discord.com"+c.path, nil)
		req.Header.Set("Authorization", "Bot "+w.fake.Token())
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("%s: status %d, want %d", c.path, resp.StatusCode, c.status)
		}
	}
	reqs := w.fake.Requests()
	if len(reqs) != 4 || reqs[0].Route != "GET /users/@me" || reqs[0].Version != "10" || reqs[3].Route != "" {
		t.Fatalf("recorded = %+v", reqs)
	}
}

// TestRecorderBound: with MaxRecorded the recorder keeps only the newest requests.
func TestRecorderBound(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{MaxRecorded: 2})
	s := w.rest()
	for _, id := range []string{"@me", w.alice, w.bob} {
		if _, err := s.User(id); err != nil {
			t.Fatal(err)
		}
	}
	reqs := w.fake.Requests()
	if len(reqs) != 2 || !strings.HasSuffix(reqs[0].Path, w.alice) || !strings.HasSuffix(reqs[1].Path, w.bob) {
		t.Fatalf("recorded = %+v", reqs)
	}
}
