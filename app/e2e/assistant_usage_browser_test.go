package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/modules/hello"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestBrowserE2EUsageAndToolCallsAfterADemoMention: `kimi serve --demo`
// with the bundled modules, in a real headless Chromium: ada mentions the
// bot in #general through /demo ("give kudos to bo for the docs"), the
// demo model calls give_kudos and answers; then /assistant/usage draws
// that day's bar (the last of the 30, today on serve's clock) with the
// turn's tokens, lists the demo model and give_kudos' call; the
// conversation's row on /assistant/conversations names where and who and
// the tool, and its page shows the turn and its tool call — without the
// question's text or the call's excerpts until Show transcripts is turned
// on through its confirmation, and with them after.
func TestBrowserE2EUsageAndToolCallsAfterADemoMention(t *testing.T) {
	a := startE2E(t, e2eOptions{specs: []sdk.Spec{hello.Spec(), kudos.Spec()}, seed: func(*fakediscord.Server) {}})
	tb := newE2ETab(t)
	general, ada, bo := a.Demo().Channels[1], a.Demo().Members[0], a.Demo().Members[1]
	c := a.signIn()
	c.waitPage("the bot connected", "/discord", `data-state="connected"`, `data-testid="discord-guild-`+a.Demo().GuildID+`"`)
	const question = "give kudos to bo for the docs"

	tb.signIn(a.URL())
	tb.do("mention the bot through /demo and see the answer",
		chromedp.Navigate(a.URL()+"/demo?channel="+general+"&as="+ada),
		e2eVisible(`[data-testid=demo-form]`),
		e2eFill(`[data-testid=demo-content-input]`, "<@"+a.Discord().BotID()+"> "+question),
		e2eClick(`[data-testid=demo-send]`),
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="demo-messages"]//*[@data-testid="demo-content" and contains(., "Done. Kudos to @bo: the docs")]//*[@data-testid="mention-user" and @title="`+bo+`"]`)),
	)

	// The answer shows before the turn's end is written (its reactions and
	// its record come after the delivery).
	c.waitPage("the turn recorded", "/assistant/usage", `data-testid="usage-turns-finished">1<`)
	tb.do("the usage page",
		chromedp.Navigate(a.URL()+"/assistant/usage"),
		e2eVisible(`[data-testid=usage-chart]`),
	)
	// The day is serve's (its wall clock, UTC): the turn's, which is the
	// page's last day unless midnight passed between the two.
	bars := evalE2E[[]map[string]string](tb, `[...document.querySelectorAll('[data-testid=usage-chart] rect.chart-bar')].map(r => ({day: r.dataset.day, h: r.getAttribute('height')}))`)
	if len(bars) != 30 {
		t.Fatalf("%d bars, want 30: %v", len(bars), bars)
	}
	var drawn []string
	for _, b := range bars {
		if b["h"] != "0" {
			drawn = append(drawn, b["day"])
		}
	}
	if len(drawn) != 1 || (drawn[0] != bars[len(bars)-1]["day"] && drawn[0] != bars[len(bars)-2]["day"]) {
		t.Errorf("bars drawn on %v of %v: want one, the turn's day (the last, or the one before it just after midnight)", drawn, bars)
	} else if !strings.Contains(evalE2E[string](tb, `document.querySelector('[data-testid=usage-chart]').outerHTML`), drawn[0]+": ") {
		t.Errorf("the turn's bar (%s) has no title with its tokens", drawn[0])
	}
	if tokens := evalE2E[string](tb, `document.querySelector('[data-testid=usage-total-tokens]').textContent`); tokens == "0" || tokens == "" {
		t.Errorf("tokens over 30 days = %q, want the turn's", tokens)
	}
	text := func(css string) string {
		return strings.TrimSpace(evalE2E[string](tb, `document.querySelector('`+css+`').textContent`))
	}
	if got := text(`[data-testid=usage-total-turns]`); got != "1" {
		t.Errorf("turns over 30 days = %q, want 1", got)
	}
	if got := text(`[data-testid=usage-turns-finished]`); got != "1" {
		t.Errorf("turns finished = %q, want 1", got)
	}
	tb.do("the demo model and give_kudos on the usage page",
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="usage-models-table"]//td[.="`+app.DemoModelID+`"]`)),
	)
	// give_kudos: tool, module, calls, errors, error rate.
	tool := evalE2E[[]string](tb, `[...document.querySelectorAll('tr[data-testid=usage-tool-give_kudos] td')].map(td => td.textContent.trim())`)
	if want := []string{"give_kudos", kudos.Spec().Name, "1", "0", "0%"}; strings.Join(tool, "|") != strings.Join(want, "|") {
		t.Errorf("give_kudos' usage row = %q, want %q", tool, want)
	}

	tb.do("the conversation's row",
		chromedp.Navigate(a.URL()+"/assistant/conversations"),
		e2eVisible(`[data-testid=conversations-table]`),
	)
	tb.wantText(`[data-testid=conversations-table] tbody tr [data-testid=conversation-channel]`, "#general")
	tb.wantText(`[data-testid=conversations-table] tbody tr [data-testid=conversation-tools]`, "give_kudos")
	tb.wantText(`[data-testid=conversations-table] tbody tr [data-testid=conversation-status]`, "done")
	if got := text(`[data-testid=conversations-table] tbody tr [data-testid=conversation-owner]`); got == "" || got == ada {
		t.Errorf("the conversation's owner shows as %q, want ada's name (not her id %s)", got, ada)
	}
	if got := text(`[data-testid=conversations-table] tbody tr [data-testid=conversation-guild]`); got == "" || got == a.Demo().GuildID {
		t.Errorf("the conversation's guild shows as %q, want its name", got)
	}
	tb.do("its page: the turn and its tool call, no text",
		e2eClick(`[data-testid=conversations-table] tbody tr [data-testid=conversation-link]`),
		e2eVisible(`[data-testid=turn-1][data-status=done]`),
		e2eVisible(`[data-testid=tool-call-give_kudos]`),
		e2eVisible(`[data-testid=transcripts-hidden]`),
	)
	tb.wantText(`[data-testid=turn-1] [data-testid=turn-model]`, app.DemoModelID)
	detail := evalE2E[string](tb, `location.pathname`)
	if html := evalE2E[string](tb, `document.documentElement.outerHTML`); strings.Contains(html, question) || strings.Contains(html, "the docs") {
		t.Error("with Show transcripts off the conversation's page holds the question or the call's arguments")
	}
	// The call's row: #, tool, module, outcome, duration (no excerpts).
	call := evalE2E[[]string](tb, `[...document.querySelectorAll('tr[data-testid=tool-call-give_kudos] td')].map(td => td.textContent.trim())`)
	if len(call) != 5 || call[1] != "give_kudos" || call[2] != kudos.Spec().Name || !strings.Contains(call[3], "ok") {
		t.Errorf("the tool call's row = %q, want give_kudos by kudos, ok, without excerpts", call)
	}

	tb.do("turn Show transcripts on through its confirmation",
		chromedp.Navigate(a.URL()+"/assistant/conversations"),
		e2eClick(`[data-testid=transcripts-toggle]`),
		e2eVisible(`[data-testid=confirm-yes]`),
		e2eClick(`[data-testid=confirm-yes]`),
		e2eVisible(`[data-testid=card-transcripts][data-on=true]`),
	)
	tb.do("the conversation's page with its text",
		chromedp.Navigate(a.URL()+detail),
		e2eVisible(`[data-testid=tool-call-give_kudos]`),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid=transcripts-hidden]`)),
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="message-user"]//pre[contains(., "`+question+`")]`)),
		chromedp.WaitVisible(chromedp.Search(`//tr[@data-testid="tool-call-give_kudos"]//*[contains(., "the docs")]`)),
	)
	if call := evalE2E[[]string](tb, `[...document.querySelectorAll('tr[data-testid=tool-call-give_kudos] td')].map(td => td.textContent.trim())`); len(call) != 7 ||
		!strings.Contains(call[5], "the docs") || !strings.Contains(call[6], "the docs") {
		t.Errorf("with transcripts the call's row = %q, want its arguments and result (both naming the docs)", call)
	}
}
