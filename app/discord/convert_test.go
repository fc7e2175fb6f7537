package discord

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/modules/sdk"
)

func TestComponentsOutPacksRows(t *testing.T) {
	btn := func(k string) sdk.Component { return sdk.ButtonSpec{Key: k, Label: k} }
	sel := sdk.SelectSpec{Key: "pick", Options: []sdk.SelectOption{{Label: "a", Value: "a"}}}
	tests := []struct {
		name string
		in   []sdk.Component
		rows []int // components per row
	}{
		{"none", nil, nil},
		{"five buttons one row", []sdk.Component{btn("a"), btn("b"), btn("c"), btn("d"), btn("e")}, []int{5}},
		{"six buttons two rows", []sdk.Component{btn("a"), btn("b"), btn("c"), btn("d"), btn("e"), btn("f")}, []int{5, 1}},
		{"select own row", []sdk.Component{btn("a"), sel, btn("b")}, []int{1, 1, 1}},
		{"pointer specs", []sdk.Component{&sdk.ButtonSpec{Key: "a", Label: "a"}}, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := componentsOut("kudos", tt.in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(tt.rows) {
				t.Fatalf("rows = %d, want %d", len(rows), len(tt.rows))
			}
			for i, r := range rows {
				if n := len(r.(discordgo.ActionsRow).Components); n != tt.rows[i] {
					t.Fatalf("row %d has %d components, want %d", i, n, tt.rows[i])
				}
			}
		})
	}
	rows, _ := componentsOut("kudos", []sdk.Component{sdk.ButtonSpec{Key: "thank", Label: "Thanks", Parts: []string{"42"}, Style: sdk.ButtonSuccess}}, nil)
	b := rows[0].(discordgo.ActionsRow).Components[0].(discordgo.Button)
	if b.CustomID != "m:kudos:thank:42" || b.Style != discordgo.SuccessButton {
		t.Fatalf("button = %+v", b)
	}
	if _, err := componentsOut("kudos", []sdk.Component{sdk.ButtonSpec{Key: "Bad Key", Label: "x"}}, nil); err == nil {
		t.Fatal("an invalid key was converted")
	}
}

func TestCheckContent(t *testing.T) {
	long := strings.Repeat("é", maxContent+1)
	tests := []struct {
		name    string
		content string
		embed   *discordgo.MessageEmbed
		wantErr string
	}{
		{"ok", "hello", &discordgo.MessageEmbed{Title: "t"}, ""},
		{"2000 runes ok", strings.Repeat("é", maxContent), nil, ""},
		{"content too long", long, nil, "2001 characters"},
		{"title", "", &discordgo.MessageEmbed{Title: strings.Repeat("x", 257)}, "title"},
		{"fields", "", &discordgo.MessageEmbed{Fields: make([]*discordgo.MessageEmbedField, 26)}, "fields"},
		{"total", "", &discordgo.MessageEmbed{Description: strings.Repeat("x", 4000), Footer: &discordgo.MessageEmbedFooter{Text: strings.Repeat("y", 2001)}}, "totals"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkContent(tt.content, tt.embed)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestNoMentionsSerializesEmptyParse(t *testing.T) {
	b, _ := json.Marshal(noMentions())
	if !strings.Contains(string(b), `"parse":[]`) {
		t.Fatalf("allowed_mentions = %s, want an empty parse list", b)
	}
}

func TestMessageSnapshotIsNilSafe(t *testing.T) {
	s := messageSnapshot(&discordgo.Message{ID: "3", ChannelID: "2", Embeds: []*discordgo.MessageEmbed{nil, {Title: "T", Image: &discordgo.MessageEmbedImage{URL: "u", ProxyURL: "p"}, Fields: []*discordgo.MessageEmbedField{nil, {Name: "n", Value: "v"}}}}, Attachments: []*discordgo.MessageAttachment{nil}}, 1, 0)
	if s.Ref != (sdk.MessageRef{GuildID: 1, ChannelID: 2, MessageID: 3}) || s.JumpURL != "https://discord.com/channels/1/2/3" {
		t.Fatalf("snapshot = %+v", s)
	}
	if len(s.EmbedImageURLs) != 1 || s.EmbedImageURLs[0] != "p" || s.EmbedTexts[0] != "T — n: v" {
		t.Fatalf("embeds = %v %v", s.EmbedImageURLs, s.EmbedTexts)
	}
	edited := time.Unix(5, 0)
	s = messageSnapshot(&discordgo.Message{ID: "3", Author: &discordgo.User{ID: "9", Username: "u", Bot: true}, Member: &discordgo.Member{Nick: "nick"}, EditedTimestamp: &edited, MessageReference: &discordgo.MessageReference{MessageID: "1"}}, 1, 7)
	if s.AuthorID != 9 || !s.AuthorIsBot || s.AuthorDisplayName != "nick" || !s.EditedAt.Equal(edited) || s.ReplyToMessageID != 1 || s.Ref.ParentChannelID != 7 {
		t.Fatalf("snapshot = %+v", s)
	}
}

func TestChannelKinds(t *testing.T) {
	for typ, want := range map[discordgo.ChannelType]sdk.ChannelKind{
		discordgo.ChannelTypeGuildText: sdk.ChannelText, discordgo.ChannelTypeGuildNews: sdk.ChannelText,
		discordgo.ChannelTypeGuildForum: sdk.ChannelForum, discordgo.ChannelTypeGuildPublicThread: sdk.ChannelThread,
		discordgo.ChannelTypeGuildPrivateThread: sdk.ChannelThread, discordgo.ChannelTypeGuildVoice: "",
		discordgo.ChannelTypeGuildCategory: "", discordgo.ChannelTypeDM: "",
	} {
		got, ok := channelKind(typ)
		if got != want || ok != (want != "") {
			t.Errorf("channelKind(%d) = %q, %v; want %q", typ, got, ok, want)
		}
	}
	s, ok := channelSnapshot(&discordgo.Channel{ID: "5", GuildID: "1", Type: discordgo.ChannelTypeGuildPrivateThread, ParentID: "4", AppliedTags: []string{"t1"}, ThreadMetadata: &discordgo.ThreadMetadata{Archived: true}}, []discordgo.ForumTag{{ID: "t1", Name: "bug"}})
	if !ok || !s.Private || !s.Archived || s.ParentChannelID != 4 || len(s.AppliedTags) != 1 || s.AppliedTags[0] != "bug" {
		t.Fatalf("snapshot = %+v", s)
	}
}

func TestModalOut(t *testing.T) {
	d, err := modalOut("kudos", sdk.ModalSpec{Key: "note", Title: "Note", Inputs: []sdk.TextInputSpec{{Key: "text", Label: "Text", Style: sdk.TextInputParagraph, Optional: true}}})
	if err != nil {
		t.Fatal(err)
	}
	in := d.Components[0].(discordgo.ActionsRow).Components[0].(discordgo.TextInput)
	if d.CustomID != "m:kudos:note" || in.CustomID != "text" || in.Required || in.Style != discordgo.TextInputParagraph {
		t.Fatalf("modal = %+v, input %+v", d, in)
	}
	if _, err := modalOut("kudos", sdk.ModalSpec{Key: "note", Title: ""}); err == nil {
		t.Fatal("an invalid modal was converted")
	}
}
