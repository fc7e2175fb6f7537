package demo

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/web/templates"
)

// newChat is a Chat over a fresh fake Discord with the seeded demo guild (closed with the
// test), its channel and member ids by name, and a REST-only session of the bot.
func newChat(t *testing.T) (*Chat, map[string]string, *discordgo.Session) {
	t.Helper()
	f := fakediscord.New(fakediscord.Options{})
	c := NewChat(f, f.SeedDemo())
	t.Cleanup(func() { _ = c.Close() })
	g, err := c.DemoGuild(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, l := range append(append(append([]templates.DemoLink(nil), g.Channels...), g.Members...), g.Roles...) {
		ids[l.Name] = l.ID
	}
	s := f.Session()
	s.MaxRestRetries = 0
	s.ShouldRetryOnRateLimit = false
	return c, ids, s
}

func ptrInt(n int) *int { return &n }

// TestChatGuild: the demo guild's channels in order, its own roles (not @everyone) and the
// members a visitor may act as, by name.
func TestChatGuild(t *testing.T) {
	c, _, _ := newChat(t)
	g, err := c.DemoGuild(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	names := func(ls []templates.DemoLink) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Name)
		}
		return out
	}
	if g.Name != fakediscord.DemoGuildName || !reflect.DeepEqual(names(g.Channels), []string{"welcome", "general", "help"}) ||
		!reflect.DeepEqual(names(g.Roles), []string{"moderators", "regulars"}) || !reflect.DeepEqual(names(g.Members), []string{"ada", "bo", "cy"}) {
		t.Fatalf("guild = %+v", g)
	}
	if c.Guild().GuildID == "" || c.Fake() == nil {
		t.Fatal("the chat does not name its fake and guild")
	}
}

// TestChatRendersMessages: a bot message's embed, button row and select, and a Components V2
// layout, in the chat view's types; a user select offers the demo members.
func TestChatRendersMessages(t *testing.T) {
	c, ids, s := newChat(t)
	ctx := context.Background()
	_, err := s.ChannelMessageSendComplex(ids["general"], &discordgo.MessageSend{
		Content: "pick one",
		Embeds: []*discordgo.MessageEmbed{{Title: "Weekly digest", Color: 0x3498db,
			Fields: []*discordgo.MessageEmbedField{{Name: "Top giver", Value: "ada", Inline: true}}, Footer: &discordgo.MessageEmbedFooter{Text: "kudos module"}}},
		Components: []discordgo.MessageComponent{
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{
				discordgo.Button{Label: "Thank", Style: discordgo.PrimaryButton, CustomID: "kudos:thank"},
				discordgo.Button{Label: "Docs", Style: discordgo.LinkButton, URL: "https://example.com/docs"},
			}},
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{
				discordgo.SelectMenu{MenuType: discordgo.UserSelectMenu, CustomID: "kudos:who", MaxValues: 2},
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	accent := 0xe74c3c
	if _, err := s.ChannelMessageSendComplex(ids["general"], &discordgo.MessageSend{
		Flags: discordgo.MessageFlagsIsComponentsV2,
		Components: []discordgo.MessageComponent{discordgo.Container{AccentColor: &accent, Components: []discordgo.MessageComponent{
			discordgo.TextDisplay{Content: "Release notes"},
			discordgo.Separator{},
			discordgo.Section{Components: []discordgo.MessageComponent{discordgo.TextDisplay{Content: "Read more"}},
				Accessory: discordgo.Button{Label: "More", Style: discordgo.SecondaryButton, CustomID: "notes:more"}},
		}}},
	}); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.DemoMessages(ctx, ids["general"], "")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || !msgs[0].Bot || msgs[0].Content != "pick one" {
		t.Fatalf("messages = %+v", msgs)
	}
	e := msgs[0].Embeds
	if len(e) != 1 || e[0].Title != "Weekly digest" || e[0].Color != "#3498db" || e[0].Footer != "kudos module" ||
		!reflect.DeepEqual(e[0].Fields, []templates.DemoField{{Name: "Top giver", Value: "ada", Inline: true}}) {
		t.Fatalf("embeds = %+v", e)
	}
	rows := msgs[0].Components
	if len(rows) != 2 || rows[0].Kind != templates.DemoRow || len(rows[0].Children) != 2 {
		t.Fatalf("components = %+v", rows)
	}
	if b := rows[0].Children[0]; b.Kind != templates.DemoButton || b.Style != "primary" || b.CustomID != "kudos:thank" {
		t.Fatalf("button = %+v", b)
	}
	if l := rows[0].Children[1]; l.Kind != templates.DemoLinkBtn || l.URL != "https://example.com/docs" {
		t.Fatalf("link = %+v", l)
	}
	sel := rows[1].Children[0]
	if sel.Kind != templates.DemoSelect || sel.MinValues != 1 || sel.MaxValues != 2 || len(sel.Options) != 3 ||
		sel.Options[0] != (templates.DemoSelectOption{Value: ids["ada"], Label: "ada"}) {
		t.Fatalf("user select = %+v", sel)
	}
	v2 := msgs[1].Components
	if len(v2) != 1 || v2[0].Kind != templates.DemoContainer || v2[0].Accent != "#e74c3c" || len(v2[0].Children) != 3 {
		t.Fatalf("v2 = %+v", v2)
	}
	if sep := v2[0].Children[1]; sep.Kind != templates.DemoSeparator || !sep.Divider || sep.Large {
		t.Fatalf("separator = %+v", sep)
	}
	if sec := v2[0].Children[2]; sec.Kind != templates.DemoSection || sec.Accessory == nil || sec.Accessory.CustomID != "notes:more" {
		t.Fatalf("section = %+v", sec)
	}
	if _, err := c.DemoMessages(ctx, "42", ""); !errors.Is(err, form.ErrDemoUnknown) {
		t.Fatalf("an unknown channel: %v, want ErrDemoUnknown", err)
	}
}

// TestChatShowsReactions: a message's reactions follow the fake — each emoji once, in the
// order first added, with its count and whether the bot's is one; a removed reaction is gone.
func TestChatShowsReactions(t *testing.T) {
	c, ids, s := newChat(t)
	ctx := context.Background()
	f := c.Fake()
	m, err := f.PostMessage(ids["general"], ids["ada"], "@Kimi give kudos to bo")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		act  func() error
		want []templates.DemoReaction
	}{
		{"none yet", func() error { return nil }, nil},
		{"the bot's ⏳", func() error { return s.MessageReactionAdd(ids["general"], m.ID, "⏳") },
			[]templates.DemoReaction{{Emoji: "⏳", Count: 1, Bot: true}}},
		{"two members' 👍", func() error {
			if err := f.React(ids["general"], m.ID, ids["bo"], "👍"); err != nil {
				return err
			}
			return f.React(ids["general"], m.ID, ids["cy"], "👍")
		}, []templates.DemoReaction{{Emoji: "⏳", Count: 1, Bot: true}, {Emoji: "👍", Count: 2}}},
		{"⏳ removed, ✅ added", func() error {
			if err := s.MessageReactionRemove(ids["general"], m.ID, "⏳", "@me"); err != nil {
				return err
			}
			return s.MessageReactionAdd(ids["general"], m.ID, "✅")
		}, []templates.DemoReaction{{Emoji: "👍", Count: 2}, {Emoji: "✅", Count: 1, Bot: true}}},
	} {
		if err := tc.act(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		msgs, err := c.DemoMessages(ctx, ids["general"], "")
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 || !reflect.DeepEqual(msgs[0].Reactions, tc.want) {
			t.Fatalf("%s: messages = %+v, want one with the reactions %+v", tc.name, msgs, tc.want)
		}
	}
}

// TestChatClickRefusals: what a message does not offer is a DemoRefusal and nothing is sent; a
// member outside the demo guild is ErrDemoUnknown; a valid pick is one interaction.
func TestChatClickRefusals(t *testing.T) {
	c, ids, s := newChat(t)
	ctx := context.Background()
	m, err := s.ChannelMessageSendComplex(ids["general"], &discordgo.MessageSend{Content: "x",
		Components: []discordgo.MessageComponent{
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{
				discordgo.Button{Label: "Thank", Style: discordgo.PrimaryButton, CustomID: "kudos:thank"},
				discordgo.Button{Label: "Off", Style: discordgo.SecondaryButton, CustomID: "kudos:off", Disabled: true},
			}},
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{
				discordgo.SelectMenu{CustomID: "kudos:size", MinValues: ptrInt(1), MaxValues: 2,
					Options: []discordgo.SelectMenuOption{{Label: "Short", Value: "short"}, {Label: "Long", Value: "long"}, {Label: "Full", Value: "full"}}},
			}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, message, customID string
		values                  []string
		want                    form.DemoRefusal
	}{
		{"gone message", "42", "kudos:thank", nil, "That message is no longer in the channel."},
		{"no such component", m.ID, "kudos:nope", nil, "That message no longer has this button or menu."},
		{"disabled", m.ID, "kudos:off", nil, "That button or menu is disabled."},
		{"values on a button", m.ID, "kudos:thank", []string{"x"}, "A button sends no values."},
		{"too many values", m.ID, "kudos:size", []string{"short", "long", "full"}, "Choose between 1 and 2 values in this menu."},
		{"a value not offered", m.ID, "kudos:size", []string{"huge"}, "Choose among the menu's options."},
	} {
		var r form.DemoRefusal
		if err := c.ClickButton(ctx, ids["general"], tc.message, ids["ada"], tc.customID, tc.values); !errors.As(err, &r) || r != tc.want {
			t.Errorf("%s: %v, want the refusal %q", tc.name, err, tc.want)
		}
	}
	if err := c.ClickButton(ctx, ids["general"], m.ID, "900000000000000002", "kudos:thank", nil); !errors.Is(err, form.ErrDemoUnknown) {
		t.Fatalf("a member outside the demo guild: %v, want ErrDemoUnknown", err)
	}
	if got := c.Fake().Interactions(ids["general"]); len(got) != 0 {
		t.Fatalf("a refused click sent %d interaction(s)", len(got))
	}
	if err := c.ClickButton(ctx, ids["general"], m.ID, ids["bo"], "kudos:size", []string{"short", "full"}); err != nil {
		t.Fatal(err)
	}
	got := c.Fake().Interactions(ids["general"])
	if len(got) != 1 || got[0].UserID != ids["bo"] {
		t.Fatalf("interactions = %+v", got)
	}
	if d, ok := got[0].Data.(discordgo.MessageComponentInteractionData); !ok || d.CustomID != "kudos:size" || !reflect.DeepEqual(d.Values, []string{"short", "full"}) {
		t.Fatalf("data = %+v", got[0].Data)
	}
}

// TestChatCommands: commands are flattened to their subcommands, with the demo guild's
// members, channels and roles as the choices of user, channel and role options, and a required
// attachment marks the command unsendable; a subcommand's options are sent inside it, a
// group's subcommand inside the group.
func TestChatCommands(t *testing.T) {
	c, ids, s := newChat(t)
	ctx := context.Background()
	f := c.Fake()
	min := 2.0
	if _, err := s.ApplicationCommandBulkOverwrite(f.AppID(), c.Guild().GuildID, []*discordgo.ApplicationCommand{
		{Name: "roll", Description: "Roll a die.", Options: []*discordgo.ApplicationCommandOption{
			{Name: "sides", Description: "How many sides.", Type: discordgo.ApplicationCommandOptionInteger, Required: true, MinValue: &min, MaxValue: 100},
			{Name: "where", Description: "Where.", Type: discordgo.ApplicationCommandOptionChannel},
			{Name: "role", Description: "A role.", Type: discordgo.ApplicationCommandOptionRole},
		}},
		{Name: "kudos", Description: "Kudos.", Options: []*discordgo.ApplicationCommandOption{
			{Name: "give", Description: "Give kudos.", Type: discordgo.ApplicationCommandOptionSubCommand, Options: []*discordgo.ApplicationCommandOption{
				{Name: "to", Description: "Who gets them.", Type: discordgo.ApplicationCommandOptionUser, Required: true},
			}},
			{Name: "admin", Description: "Admin.", Type: discordgo.ApplicationCommandOptionSubCommandGroup, Options: []*discordgo.ApplicationCommandOption{
				{Name: "reset", Description: "Reset.", Type: discordgo.ApplicationCommandOptionSubCommand},
			}},
		}},
		{Name: "upload", Description: "Upload.", Options: []*discordgo.ApplicationCommandOption{
			{Name: "file", Description: "A file.", Type: discordgo.ApplicationCommandOptionAttachment, Required: true},
		}},
	}); err != nil {
		t.Fatal(err)
	}
	cmds, err := c.DemoCommands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, cmd := range cmds {
		paths = append(paths, cmd.Path)
	}
	if !reflect.DeepEqual(paths, []string{"roll", "kudos give", "kudos admin reset", "upload"}) {
		t.Fatalf("paths = %q", paths)
	}
	roll := cmds[0].Options
	if len(roll) != 3 || roll[0].MinValue == nil || *roll[0].MinValue != 2 || roll[0].MaxValue == nil || *roll[0].MaxValue != 100 ||
		len(roll[1].Choices) != 3 || roll[1].Choices[1] != (form.DemoChoice{Name: "#general", Value: ids["general"]}) ||
		len(roll[2].Choices) != 2 || roll[2].Choices[0] != (form.DemoChoice{Name: "@moderators", Value: ids["moderators"]}) {
		t.Fatalf("roll's options = %+v", roll)
	}
	if to := cmds[1].Options; len(to) != 1 || len(to[0].Choices) != 3 || to[0].Choices[1] != (form.DemoChoice{Name: "bo", Value: ids["bo"]}) {
		t.Fatalf("kudos give's options = %+v", to)
	}
	if cmds[3].Unsendable != "file" {
		t.Fatalf("upload = %+v, want unsendable", cmds[3])
	}

	if err := c.RunCommand(ctx, ids["general"], ids["ada"], "kudos give",
		[]form.DemoOptionValue{{Name: "to", Type: int(discordgo.ApplicationCommandOptionUser), Value: ids["bo"]}}); err != nil {
		t.Fatal(err)
	}
	if err := c.RunCommand(ctx, ids["general"], ids["ada"], "kudos admin reset", nil); err != nil {
		t.Fatal(err)
	}
	got := f.Interactions(ids["general"])
	if len(got) != 2 {
		t.Fatalf("interactions = %d, want 2", len(got))
	}
	give := got[0].Data.(discordgo.ApplicationCommandInteractionData)
	if give.Name != "kudos" || len(give.Options) != 1 || give.Options[0].Name != "give" || give.Options[0].Type != discordgo.ApplicationCommandOptionSubCommand ||
		len(give.Options[0].Options) != 1 || give.Options[0].Options[0].Name != "to" {
		t.Fatalf("kudos give = %+v", give)
	}
	reset := got[1].Data.(discordgo.ApplicationCommandInteractionData)
	if len(reset.Options) != 1 || reset.Options[0].Name != "admin" || reset.Options[0].Type != discordgo.ApplicationCommandOptionSubCommandGroup ||
		len(reset.Options[0].Options) != 1 || reset.Options[0].Options[0].Name != "reset" || reset.Options[0].Options[0].Type != discordgo.ApplicationCommandOptionSubCommand {
		t.Fatalf("kudos admin reset = %+v", reset)
	}
	var r form.DemoRefusal
	if err := c.RunCommand(ctx, ids["general"], ids["ada"], "ban", nil); !errors.As(err, &r) || r != "That command is no longer registered in the demo guild." {
		t.Fatalf("an unregistered command: %v", err)
	}
	if err := c.RunCommand(ctx, ids["general"], ids["ada"], " ", nil); !errors.As(err, &r) || r != "Choose a command." {
		t.Fatalf("no command: %v", err)
	}
}

// TestChatModalsAndEphemerals: a modal answer is open for the member who ran the command and
// no one else, in the view's types, until submitted; an ephemeral answer is in that member's
// messages only.
func TestChatModalsAndEphemerals(t *testing.T) {
	c, ids, s := newChat(t)
	ctx := context.Background()
	f := c.Fake()
	if _, err := s.ApplicationCommandBulkOverwrite(f.AppID(), c.Guild().GuildID, []*discordgo.ApplicationCommand{{Name: "roll", Description: "Roll."}}); err != nil {
		t.Fatal(err)
	}
	answer := func(id string, r *discordgo.InteractionResponse) {
		t.Helper()
		in := f.Interaction(id)
		if in == nil {
			t.Fatalf("no interaction %s", id)
		}
		if err := s.InteractionRespond(&discordgo.Interaction{ID: id, AppID: f.AppID(), Token: in.Token}, r); err != nil {
			t.Fatal(err)
		}
	}
	id, err := f.RunCommand(ids["general"], ids["ada"], "roll")
	if err != nil {
		t.Fatal(err)
	}
	answer(id, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal, Data: &discordgo.InteractionResponseData{
		CustomID: "roll:why", Title: "Why roll?", Components: []discordgo.MessageComponent{
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.TextInput{CustomID: "reason", Label: "Reason",
				Style: discordgo.TextInputParagraph, Required: true, MinLength: 3, MaxLength: 50}}},
		}}})
	modals, err := c.DemoModals(ctx, ids["general"], ids["ada"])
	if err != nil {
		t.Fatal(err)
	}
	want := []templates.DemoModal{{InteractionID: id, Title: "Why roll?", Inputs: []form.DemoTextInput{{CustomID: "reason", Label: "Reason",
		Paragraph: true, Required: true, MinLength: 3, MaxLength: 50}}}}
	if !reflect.DeepEqual(modals, want) {
		t.Fatalf("ada's modals = %+v, want %+v", modals, want)
	}
	if bo, _ := c.DemoModals(ctx, ids["general"], ids["bo"]); len(bo) != 0 {
		t.Fatalf("bo sees ada's modal: %+v", bo)
	}
	var r form.DemoRefusal
	if err := c.SubmitModal(ctx, ids["general"], ids["bo"], id, map[string]string{"reason": "for fun"}); !errors.As(err, &r) {
		t.Fatalf("bo submits ada's modal: %v, want a refusal", err)
	}
	if err := c.SubmitModal(ctx, ids["general"], ids["ada"], id, map[string]string{"reason": "for fun"}); err != nil {
		t.Fatal(err)
	}
	if open, _ := c.DemoModals(ctx, ids["general"], ids["ada"]); len(open) != 0 {
		t.Fatalf("the submitted modal is still open: %+v", open)
	}

	id2, err := f.RunCommand(ids["general"], ids["bo"], "roll")
	if err != nil {
		t.Fatal(err)
	}
	answer(id2, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "only bo sees this", Flags: discordgo.MessageFlagsEphemeral}})
	bo, err := c.DemoMessages(ctx, ids["general"], ids["bo"])
	if err != nil {
		t.Fatal(err)
	}
	if len(bo) != 1 || bo[0].Content != "only bo sees this" || !bo[0].Ephemeral || bo[0].Command != "/roll" {
		t.Fatalf("bo's messages = %+v", bo)
	}
	for _, who := range []string{ids["ada"], ""} {
		if ms, _ := c.DemoMessages(ctx, ids["general"], who); len(ms) != 0 {
			t.Fatalf("%q sees bo's ephemeral response: %+v", who, ms)
		}
	}
}
