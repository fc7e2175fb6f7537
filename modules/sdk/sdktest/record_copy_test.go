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
	if err := in.ShowModal(ctx, modal); err != nil {
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
	if got := in.Modals(); len(got) != 1 || got[0].Inputs[0].Label != "Q" || got[0].Parts[0] != "p" {
		t.Errorf("recorded modals = %+v", got)
	}
}
