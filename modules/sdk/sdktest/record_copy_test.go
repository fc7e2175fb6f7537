package sdktest

import (
	"context"
	"slices"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// What a fake records is what was sent at the time of the call: a module
// that reuses and changes its embed, buttons or layout afterwards must not
// rewrite the record a test asserts on.
func TestRecordedMessagesAreCopies(t *testing.T) {
	ctx := context.Background()
	embed := &sdk.OutgoingEmbed{Title: "before", Fields: []sdk.EmbedField{{Name: "n", Value: "v"}}}
	button := sdk.ButtonSpec{Key: "go", Label: "Go", Parts: []string{"1"}}
	components := []sdk.Component{button}
	reply := &sdk.MessageRef{GuildID: 1, ChannelID: 2, MessageID: 3}
	change := func() {
		embed.Title, embed.Fields[0].Value = "after", "changed"
		button.Parts[0] = "2"
		components[0] = sdk.ButtonSpec{Key: "other", Label: "Other"}
		reply.MessageID = 4
	}
	checkEmbed := func(what string, got *sdk.OutgoingEmbed) {
		t.Helper()
		if got == nil || got.Title != "before" || got.Fields[0].Value != "v" {
			t.Errorf("%s: recorded embed = %+v, want the embed as sent", what, got)
		}
	}

	d := NewFakeDiscordActions("mod", nil)
	if _, err := d.SendMessage(ctx, 2, sdk.OutgoingMessage{Content: "hi", Embed: embed, ReplyTo: reply, Components: components}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SendDM(ctx, 5, "dm", embed); err != nil {
		t.Fatal(err)
	}
	if err := d.EditMessage(ctx, *reply, "edit", embed); err != nil {
		t.Fatal(err)
	}
	change()
	calls := d.Calls()
	sent := calls[0].Args[1].(sdk.OutgoingMessage)
	checkEmbed("send_message", sent.Embed)
	if b, ok := sent.Components[0].(sdk.ButtonSpec); !ok || b.Key != "go" || !slices.Equal(b.Parts, []string{"1"}) {
		t.Errorf("send_message: recorded components = %+v, want the button as sent", sent.Components)
	}
	if sent.ReplyTo == nil || sent.ReplyTo.MessageID != 3 {
		t.Errorf("send_message: recorded reply_to = %+v", sent.ReplyTo)
	}
	checkEmbed("send_dm", calls[1].Args[2].(*sdk.OutgoingEmbed))
	checkEmbed("edit_message", calls[2].Args[2].(*sdk.OutgoingEmbed))

	// The same for interaction replies.
	embed.Title, embed.Fields[0].Value = "before", "v"
	button.Parts[0] = "1"
	components[0] = button
	layout := &sdk.OutgoingLayout{Items: []sdk.LayoutItem{sdk.LayoutText{Content: "before"}}}
	in := NewInteraction(InteractionInput{GuildID: 1, UserID: 2})
	if err := in.Respond(ctx, sdk.Response{Embed: embed, Components: components}); err != nil {
		t.Fatal(err)
	}
	if err := in.Respond(ctx, sdk.Response{Layout: layout}); err != nil {
		t.Fatal(err)
	}
	change()
	layout.Items[0] = sdk.LayoutText{Content: "after"}
	responses := in.Responses()
	checkEmbed("respond", responses[0].Embed)
	if b, ok := responses[0].Components[0].(sdk.ButtonSpec); !ok || !slices.Equal(b.Parts, []string{"1"}) {
		t.Errorf("respond: recorded components = %+v", responses[0].Components)
	}
	if l := responses[1].Layout; l == nil || l.Items[0] != (sdk.LayoutText{Content: "before"}) {
		t.Errorf("respond: recorded layout = %+v", l)
	}

	// Selects, galleries, sections, accents and modals too.
	sel := sdk.SelectSpec{Key: "pick", Options: []sdk.SelectOption{{Label: "A", Value: "a"}}, Parts: []string{"x"}, MaxValues: 1}
	accent := 0x00ff00
	rich := &sdk.OutgoingLayout{AccentColor: &accent, Items: []sdk.LayoutItem{
		sdk.LayoutGallery{URLs: []string{"https://cdn.example/a.png"}},
		sdk.LayoutSection{Texts: []string{"t"}, ThumbnailURL: "https://cdn.example/t.png"},
	}}
	modal := sdk.ModalSpec{Key: "ask", Title: "Ask", Inputs: []sdk.TextInputSpec{{Key: "q", Label: "Q"}}, Parts: []string{"p"}}
	in = NewInteraction(InteractionInput{GuildID: 1, UserID: 2})
	if err := in.Respond(ctx, sdk.Response{Layout: rich, Components: []sdk.Component{sel}}); err != nil {
		t.Fatal(err)
	}
	modalIn := NewInteraction(InteractionInput{GuildID: 1, UserID: 2}) // a modal is a first response
	if err := modalIn.ShowModal(ctx, modal); err != nil {
		t.Fatal(err)
	}
	sel.Options[0].Value, sel.Parts[0] = "changed", "changed"
	accent = 0
	rich.Items[0].(sdk.LayoutGallery).URLs[0] = "changed"
	rich.Items[1].(sdk.LayoutSection).Texts[0] = "changed"
	modal.Inputs[0].Label, modal.Parts[0] = "changed", "changed"
	r, _ := in.Last()
	if got := r.Components[0].(sdk.SelectSpec); got.Options[0].Value != "a" || got.Parts[0] != "x" {
		t.Errorf("recorded select = %+v", got)
	}
	if *r.Layout.AccentColor != 0x00ff00 || r.Layout.Items[0].(sdk.LayoutGallery).URLs[0] != "https://cdn.example/a.png" ||
		r.Layout.Items[1].(sdk.LayoutSection).Texts[0] != "t" {
		t.Errorf("recorded layout = %+v", r.Layout)
	}
	if got := modalIn.Modals(); len(got) != 1 || got[0].Inputs[0].Label != "Q" || got[0].Parts[0] != "p" {
		t.Errorf("recorded modals = %+v", got)
	}
}

// Fetched snapshots are copies: a module changing one cannot change what
// the next fetch returns.
func TestFetchedSnapshotsAreCopies(t *testing.T) {
	ctx := context.Background()
	d := NewFakeDiscordActions("mod", nil)
	ref := sdk.MessageRef{GuildID: 1, ChannelID: 2, MessageID: 3}
	msg := sdk.MessageSnapshot{Ref: ref, Attachments: []sdk.AttachmentSnapshot{{Filename: "a.png"}},
		EmbedImageURLs: []string{"u"}, EmbedTexts: []string{"t"}}
	uses := 4
	d.Messages[ref] = msg
	d.Histories[GuildChannel{1, 2}] = []sdk.MessageSnapshot{msg}
	d.Pins[GuildChannel{1, 2}] = []sdk.MessageSnapshot{msg}
	d.Members[GuildUser{1, 5}] = sdk.MemberSnapshot{GuildID: 1, UserID: 5, RoleIDs: []uint64{7}}
	d.Channels[GuildChannel{1, 2}] = sdk.ChannelSnapshot{GuildID: 1, ChannelID: 2, AppliedTags: []string{"tag"}}
	d.PublicThreads[GuildChannel{1, 2}] = []sdk.ChannelSnapshot{{GuildID: 1, ChannelID: 9, AppliedTags: []string{"tag"}}}
	d.Invites[1] = []sdk.InviteSnapshot{{GuildID: 1, Code: "c", Uses: &uses}}

	tamper := func() {
		m, _ := d.FetchMessage(ctx, ref)
		m.Attachments[0].Filename, m.EmbedImageURLs[0], m.EmbedTexts[0] = "x", "x", "x"
		page, _ := d.FetchMessages(ctx, 1, 2, sdk.HistoryQuery{})
		page.Messages[0].Attachments[0].Filename = "x"
		pins, _ := d.FetchPins(ctx, 1, 2)
		pins[0].Attachments[0].Filename = "x"
		member, _ := d.FetchMember(ctx, 1, 5)
		member.RoleIDs[0] = 0
		channel, _ := d.FetchChannel(ctx, 1, 2)
		channel.AppliedTags[0] = "x"
		threads, _ := d.FetchPublicThreads(ctx, 1, 2)
		threads[0].AppliedTags[0] = "x"
		invites, _ := d.FetchInvites(ctx, 1)
		*invites[0].Uses = 0
	}
	tamper()

	m, _ := d.FetchMessage(ctx, ref)
	page, _ := d.FetchMessages(ctx, 1, 2, sdk.HistoryQuery{})
	pins, _ := d.FetchPins(ctx, 1, 2)
	member, _ := d.FetchMember(ctx, 1, 5)
	channel, _ := d.FetchChannel(ctx, 1, 2)
	threads, _ := d.FetchPublicThreads(ctx, 1, 2)
	invites, _ := d.FetchInvites(ctx, 1)
	switch {
	case m.Attachments[0].Filename != "a.png" || m.EmbedImageURLs[0] != "u" || m.EmbedTexts[0] != "t":
		t.Errorf("message = %+v", m)
	case page.Messages[0].Attachments[0].Filename != "a.png":
		t.Errorf("history = %+v", page.Messages)
	case pins[0].Attachments[0].Filename != "a.png":
		t.Errorf("pins = %+v", pins)
	case member.RoleIDs[0] != 7:
		t.Errorf("member = %+v", member)
	case channel.AppliedTags[0] != "tag" || threads[0].AppliedTags[0] != "tag":
		t.Errorf("channel = %+v, threads = %+v", channel, threads)
	case *invites[0].Uses != 4 || uses != 4:
		t.Errorf("invite uses = %d (test's %d)", *invites[0].Uses, uses)
	}
}
