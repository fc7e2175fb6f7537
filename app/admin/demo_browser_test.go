package admin

import (
	"context"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/chromedp/chromedp"
)

// demoChannel is the id of a demo channel by name.
func demoChannel(t *testing.T, h *harness, name string) string {
	t.Helper()
	demoVars(t, h)
	return h.vars[name]
}

// TestBrowserDemo: in demo mode, open /demo from the navigation, pick #general, switch to a
// demo member, post a message as them and see it listed in its channel, under the demo banner.
func TestBrowserDemo(t *testing.T) {
	h := newHarness(t, withDemo)
	h.createAdmin()
	tb := newTab(t)
	tb.do("sign in",
		chromedp.Navigate(h.ts.URL+"/login"),
		visible(`[data-testid=demo-banner]`),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
	)
	tb.do("open the demo",
		click(`[data-testid=nav-demo]`),
		visible(`[data-testid=demo-chat]`),
		click(`[data-testid=demo-channel-general]`),
		visible(`[data-testid=demo-empty]`),
	)
	tb.do("the empty channel", waitTestIDText("demo-empty", "No messages in #general yet."))
	tb.do("switch to bo",
		chromedp.SetValue(chromedp.CSS(`[data-testid=demo-as]`), demoChannel(t, h, "bo")),
		click(`[data-testid=demo-as-switch]`),
		// Wait for the new page, not any post form: the old page has one too.
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="demo-post"]//*[contains(@class, "card-title") and contains(., "Post as bo")]`)),
	)
	tb.wantText(`[data-testid=demo-post] .card-title`, "Post as bo")
	tb.do("post as bo",
		fill(`[data-testid=demo-content-input]`, "hello from the browser"),
		click(`[data-testid=demo-send]`),
		visible(`[data-testid=demo-messages]`),
	)
	// Waits, not reads: the live region may be re-rendered under a read.
	tb.do("the post is listed", waitTestIDText("demo-content", "hello from the browser"), waitTestIDText("demo-author", "bo"))
	tb.wantText(`[data-testid=demo-banner]`, "Demo mode.")
	tb.wantText(`[data-testid=demo-send]`, "Send to #general")
	if got := demoMessages(t, h, "general"); len(got) != 1 || got[0] != "bo: hello from the browser" {
		t.Fatalf("the fake's #general = %q", got)
	}
}

// markPage marks the loaded page, once its live regions have their first fragment (their
// event streams are open), so a later check can tell an update without a reload from a
// reload (which drops the mark).
func (tb *tab) markPage(regions ...string) {
	tb.t.Helper()
	for _, r := range regions {
		tb.do("wait for the live region "+r, visible(`[data-testid=`+r+`][data-live-updated]`))
	}
	tb.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.kimiMark = 1`))
}

// wantSamePage asserts the marked page was not reloaded.
func (tb *tab) wantSamePage(what string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.kimiMark === 1`))
	if err != nil || !same {
		tb.t.Fatalf("%s: the page was reloaded (mark %v, %v), want a live update", what, same, err)
	}
}

// TestBrowserDemoInteractions: a test bot (a discordgo session on the fake's gateway) registers
// /echo in the demo guild; in the browser a demo member posts a message, runs /echo with its
// option, and sees the bot's reply appear live, without a reload; clicks the reply's button and
// sees the modal the bot answers with appear live; submits it and sees the bot's ephemeral
// thanks, labelled as only theirs, appear live. The bot answers only once the page is marked,
// so a reply cannot have been in the page as served.
func TestBrowserDemoInteractions(t *testing.T) {
	h := newHarness(t, withDemo)
	h.createAdmin()
	demoVars(t, h)
	f := demoFakeOf(t, h)
	bot := f.Session()
	bot.Identify.Intents = discordgo.IntentGuilds | discordgo.IntentGuildMessages
	inters := make(chan *discordgo.Interaction, 8)
	bot.AddHandler(func(_ *discordgo.Session, ic *discordgo.InteractionCreate) { inters <- ic.Interaction })
	if err := bot.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bot.Close() })
	if _, err := bot.ApplicationCommandBulkOverwrite(f.AppID(), demoGuildID(t, h), []*discordgo.ApplicationCommand{{
		Name: "echo", Description: "Say it back.", Options: []*discordgo.ApplicationCommandOption{
			{Name: "text", Description: "What to say.", Type: discordgo.ApplicationCommandOptionString, Required: true}},
	}}); err != nil {
		t.Fatal(err)
	}
	next := func(what string) *discordgo.Interaction {
		t.Helper()
		select {
		case in := <-inters:
			return in
		case <-time.After(30 * time.Second):
			t.Fatalf("the bot got no %s", what)
		}
		return nil
	}
	respond := func(in *discordgo.Interaction, r *discordgo.InteractionResponse) {
		t.Helper()
		if err := bot.InteractionRespond(in, r); err != nil {
			t.Fatal(err)
		}
	}

	tb := newTab(t)
	tb.do("sign in",
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
		chromedp.Navigate(h.ts.URL+demoLocation(h.vars["general"], h.vars["ada"])),
		visible(`[data-testid=demo-chat]`),
	)
	tb.do("post as ada",
		fill(`[data-testid=demo-content-input]`, "hi bot"),
		leaveDocument(),
		click(`[data-testid=demo-send]`),
		inNewDocument(`[data-testid=demo-messages]`),
	)
	tb.do("the post is listed", waitDemoText("hi bot"))

	tb.do("run /echo",
		click(`[data-testid=demo-command-echo] summary`),
		fill(`[data-testid=demo-o-echo-text]`, "ping from the browser"),
		leaveDocument(),
		click(`[data-testid=demo-run-echo]`),
		inNewDocument(`[data-testid=demo-chat]`),
	)
	tb.markPage("demo-live", "demo-modals-live")
	in := next("/echo")
	if d := in.ApplicationCommandData(); d.Name != "echo" || len(d.Options) != 1 || d.Options[0].StringValue() != "ping from the browser" ||
		in.Member == nil || in.Member.User.ID != h.vars["ada"] {
		t.Fatalf("the bot got %+v", in)
	}
	respond(in, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource, Data: &discordgo.InteractionResponseData{
		Content: "echo: ping from the browser",
		Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "Tell me more", Style: discordgo.PrimaryButton, CustomID: "echo-more"}}}},
	}})
	tb.do("the reply appears", visible(`[data-testid=demo-button-echo-more]`))
	// Waits, not reads: the live region may be re-rendered under a read.
	tb.do("the reply's text", waitDemoText("echo: ping from the browser"), waitDemoText("used /echo"))
	tb.wantSamePage("the reply to /echo")

	tb.do("click the reply's button", leaveDocument(), click(`[data-testid=demo-button-echo-more]`), inNewDocument(`[data-testid=demo-chat]`))
	tb.markPage("demo-live", "demo-modals-live")
	in = next("the button click")
	if d := in.MessageComponentData(); d.CustomID != "echo-more" || in.Member.User.ID != h.vars["ada"] {
		t.Fatalf("the bot got %+v", in)
	}
	respond(in, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal, Data: &discordgo.InteractionResponseData{
		CustomID: "echo-why", Title: "Tell me more", Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.TextInput{CustomID: "why", Label: "Why?", Style: discordgo.TextInputParagraph, Required: true, MaxLength: 200}}}},
	}})
	tb.do("the modal appears", visible(`[data-testid=demo-modal-input-why]`))
	tb.do("the modal's title", waitTestIDText("demo-modal", "Tell me more"))
	tb.wantSamePage("the modal")

	tb.do("submit the modal",
		fill(`[data-testid=demo-modal-input-why]`, "because tests"),
		leaveDocument(),
		click(`[data-testid=demo-modal-submit]`),
		inNewDocument(`[data-testid=demo-chat]`),
	)
	tb.markPage("demo-live", "demo-modals-live")
	in = next("the modal submit")
	md := in.ModalSubmitData()
	ti, _ := md.Components[0].(*discordgo.ActionsRow).Components[0].(*discordgo.TextInput)
	if md.CustomID != "echo-why" || ti == nil || ti.CustomID != "why" || ti.Value != "because tests" {
		t.Fatalf("the bot got the modal submit %+v", md)
	}
	respond(in, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource, Data: &discordgo.InteractionResponseData{
		Content: "thanks: because tests", Flags: discordgo.MessageFlagsEphemeral}})
	tb.do("the ephemeral thanks appear", visible(`[data-testid=demo-ephemeral]`))
	tb.do("the ephemeral's text", chromedp.WaitVisible(chromedp.Search(`//*[contains(concat(" ", @class, " "), " demo-ephemeral ") and contains(., "thanks: because tests")]`)), waitTestIDText("demo-ephemeral", "Only you (ada) can see this."))
	tb.wantSamePage("the ephemeral thanks")
	for action, want := range map[string]int{ActionDemoMessagePost: 1, ActionDemoCommandRun: 1, ActionDemoButtonClick: 1, ActionDemoModalSubmit: 1} {
		if n := h.auditCount(action); n != want {
			t.Errorf("audit rows of %s = %d, want %d", action, n, want)
		}
	}
}

// leaveDocument marks the current document, so that inNewDocument can wait
// for the one a form submission loads (a selector alone would match the old
// page, which has the same elements, before the navigation ends).
func leaveDocument() chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.documentElement.dataset.kimiOld = "1"`)
}

// inNewDocument waits for css in a document loaded after leaveDocument.
func inNewDocument(css string) chromedp.Action[chromedp.Void] {
	return visible(`html:not([data-kimi-old]) ` + css)
}
