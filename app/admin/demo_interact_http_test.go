package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/admin/form"
	demochat "github.com/kimiapp/kimi/app/demo"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// demoFakeOf is the fake Discord behind a demo-mode harness.
func demoFakeOf(t *testing.T, h *harness) *fakediscord.Server {
	t.Helper()
	return demoChatOf(t, h).Fake()
}

// demoChatOf is the demo chat (app/demo's) of a demo-mode harness.
func demoChatOf(t *testing.T, h *harness) *demochat.Chat {
	t.Helper()
	d, ok := h.srv.opts.Demo.(*demochat.Chat)
	if !ok {
		t.Fatalf("the harness is not in demo mode")
	}
	return d
}

// demoBot is a REST-only session of the demo's bot (no retries: a refused call fails the test).
func demoBot(t *testing.T, h *harness) *discordgo.Session {
	s := demoFakeOf(t, h).Session()
	s.MaxRestRetries = 0
	s.ShouldRetryOnRateLimit = false
	return s
}

func ptrInt(n int) *int { return &n }

// demoBotPosts seeds #general with the bot's messages: an embed with a row of buttons and a
// string select ({msg}), and a Components V2 layout ({v2}).
func demoBotPosts(t *testing.T, h *harness) {
	t.Helper()
	demoVars(t, h)
	s := demoBot(t, h)
	m, err := s.ChannelMessageSendComplex(h.vars["general"], &discordgo.MessageSend{
		Content: "pick <b>one</b>",
		Embeds: []*discordgo.MessageEmbed{{Title: "Weekly digest", Description: "Three kudos this week", Color: 0x3498db,
			Fields: []*discordgo.MessageEmbedField{{Name: "Top giver", Value: "ada", Inline: true}}, Footer: &discordgo.MessageEmbedFooter{Text: "kudos module"}}},
		Components: []discordgo.MessageComponent{
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{
				discordgo.Button{Label: "Thank", Style: discordgo.PrimaryButton, CustomID: "kudos:thank"},
				discordgo.Button{Label: "Off", Style: discordgo.SecondaryButton, CustomID: "kudos:off", Disabled: true},
				discordgo.Button{Label: "Docs", Style: discordgo.LinkButton, URL: "https://example.com/docs"},
			}},
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{
				discordgo.SelectMenu{CustomID: "kudos:size", Placeholder: "Digest size", MinValues: ptrInt(1), MaxValues: 2,
					Options: []discordgo.SelectMenuOption{{Label: "Short", Value: "short"}, {Label: "Long", Value: "long"}, {Label: "Full", Value: "full"}}},
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.vars["msg"] = m.ID
	accent := 0xe74c3c
	v2, err := s.ChannelMessageSendComplex(h.vars["general"], &discordgo.MessageSend{
		Flags: discordgo.MessageFlagsIsComponentsV2,
		Components: []discordgo.MessageComponent{discordgo.Container{AccentColor: &accent, Components: []discordgo.MessageComponent{
			discordgo.TextDisplay{Content: "Release notes"},
			discordgo.Separator{},
			discordgo.MediaGallery{Items: []discordgo.MediaGalleryItem{{Media: discordgo.UnfurledMediaItem{URL: "https://example.com/a.png"}}}},
			discordgo.Section{Components: []discordgo.MessageComponent{discordgo.TextDisplay{Content: "Read more"}},
				Accessory: discordgo.Button{Label: "More", Style: discordgo.SecondaryButton, CustomID: "notes:more"}},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.vars["v2"] = v2.ID
}

// demoCommands registers the demo guild's commands: /roll (integer with bounds, string,
// boolean, choices, user, channel, role) and /kudos give (a subcommand).
func demoCommands(t *testing.T, h *harness) {
	t.Helper()
	demoVars(t, h)
	f := demoFakeOf(t, h)
	min := 2.0
	_, err := demoBot(t, h).ApplicationCommandBulkOverwrite(f.AppID(), demoGuildID(t, h), []*discordgo.ApplicationCommand{
		{Name: "roll", Description: "Roll a die.", Options: []*discordgo.ApplicationCommandOption{
			{Name: "sides", Description: "How many sides.", Type: discordgo.ApplicationCommandOptionInteger, Required: true, MinValue: &min, MaxValue: 100},
			{Name: "label", Description: "A label.", Type: discordgo.ApplicationCommandOptionString, MaxLength: 20},
			{Name: "loud", Description: "Say it loud.", Type: discordgo.ApplicationCommandOptionBoolean},
			{Name: "colour", Description: "A colour.", Type: discordgo.ApplicationCommandOptionString, Choices: []*discordgo.ApplicationCommandOptionChoice{
				{Name: "Red", Value: "red"}, {Name: "Blue", Value: "blue"}}},
			{Name: "who", Description: "For whom.", Type: discordgo.ApplicationCommandOptionUser},
			{Name: "where", Description: "Where.", Type: discordgo.ApplicationCommandOptionChannel},
			{Name: "role", Description: "A role.", Type: discordgo.ApplicationCommandOptionRole},
		}},
		{Name: "kudos", Description: "Kudos.", Options: []*discordgo.ApplicationCommandOption{
			{Name: "give", Description: "Give kudos.", Type: discordgo.ApplicationCommandOptionSubCommand, Options: []*discordgo.ApplicationCommandOption{
				{Name: "to", Description: "Who gets them.", Type: discordgo.ApplicationCommandOptionUser, Required: true},
			}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func demoGuildID(t *testing.T, h *harness) string {
	t.Helper()
	return demoChatOf(t, h).Guild().GuildID
}

// demoAnswer answers interaction id through the fake's REST callback, as the bot would.
func demoAnswer(t *testing.T, h *harness, id string, r *discordgo.InteractionResponse) {
	t.Helper()
	f := demoFakeOf(t, h)
	in := f.Interaction(id)
	if in == nil {
		t.Fatalf("no interaction %s", id)
	}
	if err := demoBot(t, h).InteractionRespond(&discordgo.Interaction{ID: id, AppID: f.AppID(), Token: in.Token}, r); err != nil {
		t.Fatal(err)
	}
}

// demoModalOpen has ada run /roll in #general and the bot answer with a modal ({modal}).
func demoModalOpen(t *testing.T, h *harness) {
	t.Helper()
	demoCommands(t, h)
	f := demoFakeOf(t, h)
	id, err := f.RunCommand(h.vars["general"], h.vars["ada"], "roll",
		&discordgo.ApplicationCommandInteractionDataOption{Name: "sides", Type: discordgo.ApplicationCommandOptionInteger, Value: 6})
	if err != nil {
		t.Fatal(err)
	}
	demoAnswer(t, h, id, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal, Data: &discordgo.InteractionResponseData{
		CustomID: "roll:why", Title: "Why roll?", Components: []discordgo.MessageComponent{
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.TextInput{CustomID: "reason", Label: "Reason", Style: discordgo.TextInputParagraph,
				Required: true, MinLength: 3, MaxLength: 50}}},
			discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.TextInput{CustomID: "note", Label: "Note", Style: discordgo.TextInputShort}}},
		}}})
	h.vars["modal"] = id
}

// demoInteractions lists the interactions started in a demo channel.
func demoInteractions(t *testing.T, h *harness, channel string) []*fakediscord.InteractionState {
	t.Helper()
	return demoFakeOf(t, h).Interactions(h.vars[channel])
}

func wantNoInteraction(t *testing.T, h *harness, _ *client, _ *response) {
	t.Helper()
	if got := demoInteractions(t, h, "general"); len(got) != 0 {
		t.Fatalf("an interaction was started: %+v", got[0])
	}
}

func demoForm(kv ...string) url.Values {
	v := url.Values{form.FieldDemoChannel: {"{general}"}, form.FieldDemoMember: {"{ada}"}}
	seen := map[string]bool{}
	for i := 0; i+1 < len(kv); i += 2 {
		if !seen[kv[i]] {
			v.Del(kv[i]) // a given field replaces the default
		}
		seen[kv[i]] = true
		v.Add(kv[i], kv[i+1])
	}
	return v
}

// wantComponent asserts the one interaction of #general is a component interaction by who.
func wantComponent(t *testing.T, h *harness, who, customID string, values []string) {
	t.Helper()
	got := demoInteractions(t, h, "general")
	if len(got) != 1 {
		t.Fatalf("interactions = %d, want 1", len(got))
	}
	d, ok := got[0].Data.(discordgo.MessageComponentInteractionData)
	if got[0].Type != discordgo.InteractionMessageComponent || got[0].UserID != h.vars[who] || !ok ||
		d.CustomID != customID || !reflect.DeepEqual(d.Values, values) || got[0].SourceMessageID == "" {
		t.Fatalf("interaction = %+v, data %+v", got[0].Interaction, got[0].Data)
	}
}

// wantCommand asserts the one command interaction of #general: who, name and options.
func wantCommand(t *testing.T, h *harness, who, name string, opts string) {
	t.Helper()
	var cmds []*fakediscord.InteractionState
	for _, in := range demoInteractions(t, h, "general") {
		if in.Type == discordgo.InteractionApplicationCommand {
			cmds = append(cmds, in)
		}
	}
	if len(cmds) != 1 {
		t.Fatalf("command interactions = %d, want 1", len(cmds))
	}
	d, ok := cmds[0].Data.(discordgo.ApplicationCommandInteractionData)
	if !ok || cmds[0].UserID != h.vars[who] || d.Name != name {
		t.Fatalf("interaction = %+v, data %+v", cmds[0].Interaction, cmds[0].Data)
	}
	if got := h.expand(opts); optionString(d.Options) != got {
		t.Fatalf("options = %s, want %s", optionString(d.Options), got)
	}
}

// optionString writes options as name:type=value, nested in [].
func optionString(opts []*discordgo.ApplicationCommandInteractionDataOption) string {
	var b []string
	for _, o := range opts {
		s := o.Name + ":" + o.Type.String()
		if o.Value != nil {
			s += "=" + fmt.Sprintf("%T(%v)", o.Value, o.Value)
		}
		if len(o.Options) > 0 {
			s += "[" + optionString(o.Options) + "]"
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

// wantLocationAs asserts the redirect back to #general as a member.
func wantLocationAs(t *testing.T, h *harness, res *response, who string) {
	t.Helper()
	if loc, want := res.Header.Get("Location"), demoLocation(h.vars["general"], h.vars[who]); loc != want {
		t.Fatalf("Location = %q, want %q", loc, want)
	}
}

var demoInteractScenarios = []scenario{
	{name: "demo: a bot message shows its embed, buttons, select and Components V2 layout", method: "GET", url: "/demo?channel={general}",
		opts: demo, signedIn: true, setup: demoBotPosts, wantStatus: http.StatusOK,
		wantContains: []string{"pick &lt;b&gt;one&lt;/b&gt;", `data-testid="demo-embed-title">Weekly digest<`, "Three kudos this week",
			`fill="#3498db"`, "<dt>Top giver</dt>", "kudos module", `action="/demo/buttons"`, `data-testid="demo-button-kudos:thank"`,
			`value="kudos:thank"`, `value="{msg}"`, `href="https://example.com/docs"`, `data-testid="demo-select-kudos:size" multiple`,
			`<option value="long">Long</option>`, "Release notes", `class="demo-separator"`, `href="https://example.com/a.png"`,
			`data-testid="demo-button-notes:more"`, `fill="#e74c3c"`, `data-live="/demo/events?as={ada}&amp;channel={general}&amp;view=chat"`}},
	{name: "demo: a click on a button is an interaction as the acting member", method: "POST", url: "/demo/buttons", opts: demo, signedIn: true,
		setup: demoBotPosts, form: demoForm(form.FieldDemoMessage, "{msg}", form.FieldDemoCustomID, "kudos:thank", form.FieldDemoMember, "{bo}"),
		wantStatus: http.StatusSeeOther, wantAudit: []string{ActionDemoButtonClick},
		check: func(t *testing.T, h *harness, _ *client, res *response) {
			wantLocationAs(t, h, res, "bo")
			wantComponent(t, h, "bo", "kudos:thank", nil)
		}},
	{name: "demo: a button on a Components V2 section's accessory is clickable", method: "POST", url: "/demo/buttons", opts: demo, signedIn: true,
		setup: demoBotPosts, form: demoForm(form.FieldDemoMessage, "{v2}", form.FieldDemoCustomID, "notes:more"),
		wantStatus: http.StatusSeeOther, wantAudit: []string{ActionDemoButtonClick},
		check: func(t *testing.T, h *harness, _ *client, _ *response) { wantComponent(t, h, "ada", "notes:more", nil) }},
	{name: "demo: a select menu sends the chosen values", method: "POST", url: "/demo/buttons", opts: demo, signedIn: true,
		setup: demoBotPosts, form: demoForm(form.FieldDemoMessage, "{msg}", form.FieldDemoCustomID, "kudos:size", "select", "1",
			form.FieldDemoValues, "short", form.FieldDemoValues, "full"),
		wantStatus: http.StatusSeeOther, wantAudit: []string{ActionDemoButtonClick},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			wantComponent(t, h, "ada", "kudos:size", []string{"short", "full"})
		}},
	{name: "demo: a value the select does not offer is refused, nothing sent", method: "POST", url: "/demo/buttons", opts: demo, signedIn: true,
		setup: demoBotPosts, form: demoForm(form.FieldDemoMessage, "{msg}", form.FieldDemoCustomID, "kudos:size", "select", "1", form.FieldDemoValues, "huge"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"Choose among the menu&#39;s options."}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: too many values are refused, nothing sent", method: "POST", url: "/demo/buttons", opts: demo, signedIn: true,
		setup: demoBotPosts, form: demoForm(form.FieldDemoMessage, "{msg}", form.FieldDemoCustomID, "kudos:size", "select", "1",
			form.FieldDemoValues, "short", form.FieldDemoValues, "long", form.FieldDemoValues, "full"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"Choose between 1 and 2 values"}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: a disabled button is refused", method: "POST", url: "/demo/buttons", opts: demo, signedIn: true,
		setup: demoBotPosts, form: demoForm(form.FieldDemoMessage, "{msg}", form.FieldDemoCustomID, "kudos:off"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"disabled"}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: a button the message does not have is refused", method: "POST", url: "/demo/buttons", opts: demo, signedIn: true,
		setup: demoBotPosts, form: demoForm(form.FieldDemoMessage, "{msg}", form.FieldDemoCustomID, "kudos:nope"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"no longer has this button"}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: a click on a message that is gone is refused", method: "POST", url: "/demo/buttons", opts: demo, signedIn: true,
		setup: demoBotPosts, form: demoForm(form.FieldDemoMessage, "42", form.FieldDemoCustomID, "kudos:thank"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"no longer in the channel"}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: a click as someone outside the demo guild is refused", method: "POST", url: "/demo/buttons", opts: demo, signedIn: true,
		setup: demoBotPosts, form: demoForm(form.FieldDemoMessage, "{msg}", form.FieldDemoCustomID, "kudos:thank", form.FieldDemoMember, "900000000000000002"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"not in the demo guild"}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: a click without a custom id is refused", method: "POST", url: "/demo/buttons", opts: demo, signedIn: true,
		setup: demoBotPosts, form: demoForm(form.FieldDemoMessage, "{msg}"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"no valid custom id"}, wantNoAudit: true, check: wantNoInteraction},

	{name: "demo: the registered commands are listed with inputs from their options", method: "GET", url: "/demo?channel={general}",
		opts: demo, signedIn: true, setup: demoCommands, wantStatus: http.StatusOK,
		wantContains: []string{`action="/demo/commands"`, "<strong>/roll</strong>", "Roll a die.", `name="o.sides"`, `type="number"`, `step="1"`,
			`min="2"`, `max="100"`, "sides <span class=\"muted\">(required)</span>", `name="o.label"`, `maxlength="20"`, `name="o.loud"`,
			`<option value="true">true</option>`, `<option value="red">Red</option>`, `name="o.who"`, `<option value="{bo}">bo</option>`,
			`<option value="{general}">#general</option>`, ">@moderators</option>", "<strong>/kudos give</strong>", `value="kudos give"`,
			"Run /roll as ada"}},
	{name: "demo: no commands registered says so", method: "GET", url: "/demo", opts: demo, signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="demo-no-commands"`}},
	{name: "demo: a slash command runs with its options, typed", method: "POST", url: "/demo/commands", opts: demo, signedIn: true,
		setup: demoCommands, form: demoForm(form.FieldDemoCommand, "roll", "o.sides", "6", "o.label", "  d6 ", "o.loud", "true", "o.colour", "blue",
			"o.who", "{cy}", "o.where", "", "o.role", ""),
		wantStatus: http.StatusSeeOther, wantAudit: []string{ActionDemoCommandRun},
		check: func(t *testing.T, h *harness, _ *client, res *response) {
			wantLocationAs(t, h, res, "ada")
			wantCommand(t, h, "ada", "roll", "sides:Integer=int64(6) label:String=string(d6) loud:Boolean=bool(true) colour:String=string(blue) who:User=string({cy})")
		}},
	{name: "demo: a subcommand's options sit inside it", method: "POST", url: "/demo/commands", opts: demo, signedIn: true,
		setup: demoCommands, form: demoForm(form.FieldDemoCommand, "kudos give", "o.to", "{bo}"),
		wantStatus: http.StatusSeeOther, wantAudit: []string{ActionDemoCommandRun},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			wantCommand(t, h, "ada", "kudos", "give:SubCommand[to:User=string({bo})]")
		}},
	{name: "demo: a missing required option is refused, nothing sent, values kept", method: "POST", url: "/demo/commands", opts: demo, signedIn: true,
		setup: demoCommands, form: demoForm(form.FieldDemoCommand, "roll", "o.sides", "", "o.label", "kept label"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"/roll needs sides.", `value="kept label"`, `data-testid="demo-command-roll" open`},
		wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: an integer out of range is refused", method: "POST", url: "/demo/commands", opts: demo, signedIn: true,
		setup: demoCommands, form: demoForm(form.FieldDemoCommand, "roll", "o.sides", "101"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"sides must be between 2 and 100."}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: a non-integer is refused", method: "POST", url: "/demo/commands", opts: demo, signedIn: true,
		setup: demoCommands, form: demoForm(form.FieldDemoCommand, "roll", "o.sides", "2.5"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"sides must be a whole number."}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: a string over its max length is refused", method: "POST", url: "/demo/commands", opts: demo, signedIn: true,
		setup: demoCommands, form: demoForm(form.FieldDemoCommand, "roll", "o.sides", "6", "o.label", strings.Repeat("x", 21)),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"label holds at most 20 characters."}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: a choice not offered is refused", method: "POST", url: "/demo/commands", opts: demo, signedIn: true,
		setup: demoCommands, form: demoForm(form.FieldDemoCommand, "roll", "o.sides", "6", "o.colour", "green"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"Choose one of the offered values for colour."}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: a user who is not a demo member is refused", method: "POST", url: "/demo/commands", opts: demo, signedIn: true,
		setup: demoCommands, form: demoForm(form.FieldDemoCommand, "kudos give", "o.to", "900000000000000002"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"Choose one of the offered values for to."}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: an option the command does not have is refused", method: "POST", url: "/demo/commands", opts: demo, signedIn: true,
		setup: demoCommands, form: demoForm(form.FieldDemoCommand, "roll", "o.sides", "6", "o.extra", "x"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"an option the command does not have"}, wantNoAudit: true, check: wantNoInteraction},
	{name: "demo: a command that is not registered is refused", method: "POST", url: "/demo/commands", opts: demo, signedIn: true,
		setup: demoCommands, form: demoForm(form.FieldDemoCommand, "ban"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"not registered in the demo guild"}, wantNoAudit: true, check: wantNoInteraction},

	{name: "demo: a modal answer is shown as a form to the member who opened it", method: "GET", url: "/demo?channel={general}&as={ada}",
		opts: demo, signedIn: true, setup: demoModalOpen, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="demo-modal"`, "Why roll?", `action="/demo/modals"`, `value="{modal}"`, `name="m.reason"`,
			`minlength="3"`, `maxlength="50"`, "Reason <span class=\"muted\">(required)</span>", `name="m.note"`, `maxlength="4000"`,
			`data-live="/demo/events?as={ada}&amp;channel={general}&amp;view=modals"`}},
	{name: "demo: another member does not see the modal", method: "GET", url: "/demo?channel={general}&as={bo}",
		opts: demo, signedIn: true, setup: demoModalOpen, wantStatus: http.StatusOK, wantNotContains: []string{"Why roll?", `name="m.reason"`}},
	{name: "demo: a modal submits its values", method: "POST", url: "/demo/modals", opts: demo, signedIn: true,
		setup: demoModalOpen, form: demoForm(form.FieldDemoInteraction, "{modal}", "m.reason", "for fun", "m.note", ""),
		wantStatus: http.StatusSeeOther, wantAudit: []string{ActionDemoModalSubmit},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantLocationAs(t, h, res, "ada")
			got := demoInteractions(t, h, "general")
			if len(got) != 2 || got[1].Type != discordgo.InteractionModalSubmit || got[1].UserID != h.vars["ada"] {
				t.Fatalf("interactions = %+v", got)
			}
			d := got[1].Data.(discordgo.ModalSubmitInteractionData)
			var vals []string
			for _, row := range d.Components {
				for _, c := range row.(*discordgo.ActionsRow).Components {
					ti := c.(*discordgo.TextInput)
					vals = append(vals, ti.CustomID+"="+ti.Value)
				}
			}
			if d.CustomID != "roll:why" || strings.Join(vals, ",") != "reason=for fun,note=" {
				t.Fatalf("modal submit data = %s %q", d.CustomID, vals)
			}
			if page := c.get(h.expand("/demo?channel={general}&as={ada}")); strings.Contains(page.body, "Why roll?") {
				t.Fatal("the submitted modal is still shown")
			}
		}},
	{name: "demo: a modal without its required input is refused, values kept", method: "POST", url: "/demo/modals", opts: demo, signedIn: true,
		setup: demoModalOpen, form: demoForm(form.FieldDemoInteraction, "{modal}", "m.reason", " ", "m.note", "kept note"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"Fill in Reason.", `value="kept note"`}, wantNoAudit: true,
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			if got := demoInteractions(t, h, "general"); len(got) != 1 {
				t.Fatalf("a modal submit was sent: %d interactions", len(got))
			}
		}},
	{name: "demo: a modal input under its min length is refused", method: "POST", url: "/demo/modals", opts: demo, signedIn: true,
		setup: demoModalOpen, form: demoForm(form.FieldDemoInteraction, "{modal}", "m.reason", "ab"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"Reason needs at least 3 characters."}, wantNoAudit: true},
	{name: "demo: another member cannot submit the modal", method: "POST", url: "/demo/modals", opts: demo, signedIn: true,
		setup: demoModalOpen, form: demoForm(form.FieldDemoInteraction, "{modal}", form.FieldDemoMember, "{bo}", "m.reason", "for fun"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"no longer open"}, wantNoAudit: true},
	{name: "demo: an unknown modal is refused", method: "POST", url: "/demo/modals", opts: demo, signedIn: true,
		setup: demoModalOpen, form: demoForm(form.FieldDemoInteraction, "42", "m.reason", "for fun"),
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"no longer open"}, wantNoAudit: true},

	{name: "demo: outside demo mode a click is a 404", method: "POST", url: "/demo/buttons", signedIn: true,
		form: url.Values{form.FieldDemoCustomID: {"x"}}, wantStatus: http.StatusNotFound, wantNoAudit: true},
	{name: "demo: outside demo mode a command is a 404", method: "POST", url: "/demo/commands", signedIn: true,
		form: url.Values{form.FieldDemoCommand: {"x"}}, wantStatus: http.StatusNotFound, wantNoAudit: true},
	{name: "demo: outside demo mode a modal is a 404", method: "POST", url: "/demo/modals", signedIn: true,
		form: url.Values{form.FieldDemoInteraction: {"x"}}, wantStatus: http.StatusNotFound, wantNoAudit: true},
	{name: "demo: outside demo mode the event stream is a 404", method: "GET", url: "/demo/events?view=chat", signedIn: true,
		wantStatus: http.StatusNotFound},
	{name: "demo: the event stream needs a view", method: "GET", url: "/demo/events", opts: demo, signedIn: true,
		wantStatus: http.StatusBadRequest, wantContains: []string{"view=chat or view=modals"}},
	{name: "demo: the event stream of an unknown channel is a 404", method: "GET", url: "/demo/events?view=chat&channel=42", opts: demo, signedIn: true,
		wantStatus: http.StatusNotFound},
	{name: "demo: anonymous event stream is sent to sign in", method: "GET", url: "/demo/events?view=chat", opts: demo,
		wantStatus: http.StatusSeeOther},
	{name: "demo: a click without a CSRF token is refused", method: "POST", url: "/demo/buttons", opts: demo, signedIn: true, noCSRF: true,
		setup: demoBotPosts, form: demoForm(form.FieldDemoMessage, "{msg}", form.FieldDemoCustomID, "kudos:thank"),
		wantStatus: http.StatusForbidden, wantNoAudit: true, check: wantNoInteraction},
}

// TestDemoInteractions runs the demo's interaction scenarios: buttons, selects, slash
// commands and modals, with the exact interactions the fake received.
func TestDemoInteractions(t *testing.T) { runScenarios(t, demoInteractScenarios) }

// TestDemoEphemeralOnlyForItsMember: an ephemeral response is shown, labelled, to the member
// whose interaction it answers, and to no one else; it is not in the channel.
func TestDemoEphemeralOnlyForItsMember(t *testing.T) {
	h := newHarness(t, withDemo)
	h.createAdmin()
	demoCommands(t, h)
	f := demoFakeOf(t, h)
	id, err := f.RunCommand(h.vars["general"], h.vars["bo"], "kudos",
		&discordgo.ApplicationCommandInteractionDataOption{Name: "give", Type: discordgo.ApplicationCommandOptionSubCommand,
			Options: []*discordgo.ApplicationCommandInteractionDataOption{{Name: "to", Type: discordgo.ApplicationCommandOptionUser, Value: h.vars["ada"]}}})
	if err != nil {
		t.Fatal(err)
	}
	demoAnswer(t, h, id, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "only bo sees this", Flags: discordgo.MessageFlagsEphemeral}})
	c := h.newClient()
	c.login(testUser, testPassword)
	bo := c.get(h.expand("/demo?channel={general}&as={bo}"))
	if !strings.Contains(bo.body, "only bo sees this") || !strings.Contains(bo.body, "Only you (bo) can see this.") ||
		!strings.Contains(bo.body, "used /kudos give") {
		t.Fatalf("bo's view lacks the labelled ephemeral response:\n%s", bo.body)
	}
	if ada := c.get(h.expand("/demo?channel={general}&as={ada}")); strings.Contains(ada.body, "only bo sees this") {
		t.Fatal("ada sees bo's ephemeral response")
	}
	if msgs := f.Messages(h.vars["general"]); len(msgs) != 0 {
		t.Fatalf("the ephemeral response is in the channel: %+v", msgs)
	}
}

// TestDemoEventsFollowTheFake: the chat stream sends the channel at once and again after a
// message is posted, edited, reacted to and deleted and after an interaction is answered; the
// modal stream sends a modal when one opens — without polling, each woken by the fake's Watch.
func TestDemoEventsFollowTheFake(t *testing.T) {
	h := newHarness(t, withDemo)
	h.createAdmin()
	demoCommands(t, h)
	f := demoFakeOf(t, h)
	c := h.newClient()
	c.login(testUser, testPassword)
	chat, _ := openStream(t, c, h.expand("/demo/events?view=chat&channel={general}&as={ada}"))
	modals, _ := openStream(t, c, h.expand("/demo/events?view=modals&channel={general}&as={ada}"))
	if first := readEvent(t, chat); !strings.Contains(first, "No messages in #general yet.") {
		t.Fatalf("first chat fragment = %q", first)
	}
	if first := readEvent(t, modals); strings.TrimSpace(first) != "" {
		t.Fatalf("first modal fragment = %q, want empty", first)
	}
	m, err := f.PostMessage(h.vars["general"], h.vars["bo"], "hello <i>live</i>")
	if err != nil {
		t.Fatal(err)
	}
	if ev := readEvent(t, chat); !strings.Contains(ev, "hello &lt;i&gt;live&lt;/i&gt;") {
		t.Fatalf("after a post: %q", ev)
	}
	if err := f.EditAsUser(h.vars["general"], m.ID, "edited live"); err != nil {
		t.Fatal(err)
	}
	if ev := readEvent(t, chat); !strings.Contains(ev, "edited live") || !strings.Contains(ev, "(edited)") {
		t.Fatalf("after an edit: %q", ev)
	}
	if err := f.React(h.vars["general"], m.ID, h.vars["ada"], "👍"); err != nil {
		t.Fatal(err)
	}
	if ev := readEvent(t, chat); !strings.Contains(ev, `data-emoji="👍" data-bot="false" aria-label="👍: 1 reaction"`) ||
		!strings.Contains(ev, `data-testid="demo-reaction-count">1<`) {
		t.Fatalf("after a reaction: %q", ev)
	}
	if err := f.DeleteAsUser(h.vars["general"], m.ID); err != nil {
		t.Fatal(err)
	}
	if ev := readEvent(t, chat); strings.Contains(ev, "edited live") {
		t.Fatalf("after a delete: %q", ev)
	}
	id, err := f.RunCommand(h.vars["general"], h.vars["ada"], "roll",
		&discordgo.ApplicationCommandInteractionDataOption{Name: "sides", Type: discordgo.ApplicationCommandOptionInteger, Value: 6})
	if err != nil {
		t.Fatal(err)
	}
	demoAnswer(t, h, id, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "rolled a 4", Flags: discordgo.MessageFlagsEphemeral}})
	if ev := readEvent(t, chat); !strings.Contains(ev, "rolled a 4") || !strings.Contains(ev, "Only you (ada) can see this.") {
		t.Fatalf("after an ephemeral answer: %q", ev)
	}
	id2, err := f.RunCommand(h.vars["general"], h.vars["ada"], "roll",
		&discordgo.ApplicationCommandInteractionDataOption{Name: "sides", Type: discordgo.ApplicationCommandOptionInteger, Value: 6})
	if err != nil {
		t.Fatal(err)
	}
	demoAnswer(t, h, id2, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal, Data: &discordgo.InteractionResponseData{
		CustomID: "m", Title: "Live modal", Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.TextInput{CustomID: "x", Label: "X", Style: discordgo.TextInputShort}}}}}})
	if ev := readEvent(t, modals); !strings.Contains(ev, "Live modal") || !strings.Contains(ev, `name="m.x"`) {
		t.Fatalf("after a modal answer: %q", ev)
	}
}
