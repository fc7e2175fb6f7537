package fakediscord

import (
	"testing"

	"github.com/bwmarrin/discordgo"
)

// TestDMs: a DM channel is opened once per user; a message reaches a user who shares a guild
// with the bot and accepts DMs, and is refused 403 50007 otherwise; an unknown user cannot be a
// recipient; guild routes do not know DM channels.
func TestDMs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.rest()
	stranger := w.fake.AddUser(discordgo.User{Username: "stranger"}).ID

	dm, err := s.UserChannelCreate(w.alice)
	if err != nil || dm.Type != discordgo.ChannelTypeDM || len(dm.Recipients) != 1 || dm.Recipients[0].ID != w.alice {
		t.Fatalf("DM channel = %+v, %v", dm, err)
	}
	again, err := s.UserChannelCreate(w.alice)
	if err != nil || again.ID != dm.ID || w.fake.DMChannel(w.alice) != dm.ID {
		t.Fatalf("second open = %+v, %v; want the same channel %s", again, err, dm.ID)
	}
	m, err := s.ChannelMessageSend(dm.ID, "hello")
	if err != nil || m.GuildID != "" || m.ChannelID != dm.ID {
		t.Fatalf("DM = %+v, %v", m, err)
	}
	if msgs := w.fake.Messages(dm.ID); len(msgs) != 1 || msgs[0].Content != "hello" {
		t.Fatalf("DM messages = %+v", msgs)
	}
	_, err = s.ChannelMessageSend(dm.ID, "")
	wantAPIError(t, err, 400, CodeEmptyMessage)

	w.fake.SetDMsBlocked(w.alice, true)
	_, err = s.ChannelMessageSend(dm.ID, "blocked")
	re := wantAPIError(t, err, 403, CodeCannotMessageUser)
	if re.Message.Message != "Cannot send messages to this user" {
		t.Fatalf("message = %q", re.Message.Message)
	}
	w.fake.SetDMsBlocked(w.alice, false)
	if _, err := s.ChannelMessageSend(dm.ID, "again"); err != nil {
		t.Fatalf("unblocked: %v", err)
	}

	sdm, err := s.UserChannelCreate(stranger)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.ChannelMessageSend(sdm.ID, "no shared guild")
	wantAPIError(t, err, 403, CodeCannotMessageUser)

	_, err = s.UserChannelCreate("12345")
	wantAPIError(t, err, 400, CodeInvalidRecipient)
	_, err = s.Channel(dm.ID)
	wantAPIError(t, err, 404, CodeUnknownChannel)
}

// TestThreadLists: thread members (404 10007 when absent), the active threads (the bot sees a
// private thread only as a member or with Manage Threads) and the archived public threads of
// a channel, newest archived first.
func TestThreadLists(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.rest()
	add := func(name string, typ discordgo.ChannelType) string {
		return w.fake.AddChannel(ChannelSpec{GuildID: w.guild, Name: name, Type: typ, ParentID: w.text}).ID
	}
	pub, old, older, priv := add("pub", discordgo.ChannelTypeGuildPublicThread), add("old", discordgo.ChannelTypeGuildPublicThread),
		add("older", discordgo.ChannelTypeGuildPublicThread), add("priv", discordgo.ChannelTypeGuildPrivateThread)
	w.fake.ArchiveThread(older, true)
	w.fake.ArchiveThread(old, true)
	w.fake.ArchiveThread(priv, false)
	w.fake.AddThreadMember(priv, w.alice, false)

	tm, err := s.ThreadMember(priv, w.alice, true)
	if err != nil || tm.UserID != w.alice || tm.ID != priv || tm.Member == nil || tm.Member.User.ID != w.alice {
		t.Fatalf("thread member = %+v, %v", tm, err)
	}
	_, err = s.ThreadMember(priv, w.bob, false)
	wantAPIError(t, err, 404, CodeUnknownMember)
	_, err = s.ThreadMember(w.text, w.alice, false)
	wantAPIError(t, err, 400, CodeInvalidChannelType)

	active, err := s.GuildThreadsActive(w.guild)
	if err != nil || len(active.Threads) != 2 || active.Threads[0].ID != pub || active.Threads[1].ID != priv {
		t.Fatalf("active = %+v, %v; want pub and priv (the bot is an administrator)", active, err)
	}
	archived, err := s.ThreadsArchived(w.text, nil, 10)
	if err != nil || len(archived.Threads) != 2 || archived.Threads[0].ID != old || archived.Threads[1].ID != older || archived.HasMore {
		t.Fatalf("archived = %+v, %v; want old then older", archived, err)
	}
	archived, err = s.ThreadsArchived(w.text, nil, 2)
	if err != nil || len(archived.Threads) != 2 || archived.HasMore {
		t.Fatalf("archived, limit 2 = %+v, %v", archived, err)
	}

	// Without Manage Threads and without membership, the private thread is not listed.
	perms := int64(discordgo.PermissionViewChannel | discordgo.PermissionReadMessageHistory)
	g2 := w.fake.AddGuild(GuildSpec{Name: "limited", BotPermissions: &perms}).ID
	parent := w.fake.AddChannel(ChannelSpec{GuildID: g2, Name: "t"}).ID
	hidden := w.fake.AddChannel(ChannelSpec{GuildID: g2, Name: "p", Type: discordgo.ChannelTypeGuildPrivateThread, ParentID: parent}).ID
	if active, err := s.GuildThreadsActive(g2); err != nil || len(active.Threads) != 0 {
		t.Fatalf("limited active = %+v, %v", active, err)
	}
	w.fake.AddThreadMember(hidden, w.fake.BotID(), false)
	if active, err := s.GuildThreadsActive(g2); err != nil || len(active.Threads) != 1 || len(active.Members) != 1 {
		t.Fatalf("limited active, the bot a member = %+v, %v", active, err)
	}
}

// TestVanityURL: the vanity invite with the feature and Manage Guild; 403 50001 without the
// feature, 403 50013 without the permission.
func TestVanityURL(t *testing.T) {
	t.Parallel()
	w := newWorld(t, Options{})
	s := w.rest()
	url := discordgo.EndpointGuild(w.guild) + "/vanity-url"
	_, err := s.RequestWithBucketID("GET", url, nil, url)
	wantAPIError(t, err, 403, CodeMissingAccess)
	w.fake.SetVanityURL(w.guild, "cool", 7)
	body, err := s.RequestWithBucketID("GET", url, nil, url)
	if err != nil || string(body) != `{"code":"cool","uses":7}` {
		t.Fatalf("vanity = %s, %v", body, err)
	}
	if g := w.fake.Guild(w.guild); g.VanityURLCode != "cool" || len(g.Features) != 1 || g.Features[0] != discordgo.GuildFeatureVanityURL {
		t.Fatalf("guild = %+v", g)
	}
	perms := int64(discordgo.PermissionViewChannel)
	g2 := w.fake.AddGuild(GuildSpec{BotPermissions: &perms}).ID
	w.fake.SetVanityURL(g2, "x", 0)
	url2 := discordgo.EndpointGuild(g2) + "/vanity-url"
	_, err = s.RequestWithBucketID("GET", url2, nil, url2)
	wantAPIError(t, err, 403, CodeMissingPermissions)
	w.fake.SetVanityURL(w.guild, "", 0)
	_, err = s.RequestWithBucketID("GET", url, nil, url)
	wantAPIError(t, err, 403, CodeMissingAccess)
}
