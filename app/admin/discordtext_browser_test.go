package admin

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserDemoMentionsAndMarkdown: a message posted in the demo chat
// shows its mention as @bo (a chip titled with bo's id), its bold text
// bold and its code block as a block (the textarea's CRLF breaks read as
// line breaks, no blank first line), at 1280 and 390 px, without a
// sideways scroll.
func TestBrowserDemoMentionsAndMarkdown(t *testing.T) {
	h := newHarness(t, withDemo)
	h.createAdmin()
	demoVars(t, h)
	tb := newTab(t)
	tb.do("sign in",
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
	)
	msg := `//*[@data-testid="demo-messages"]//*[@data-testid="demo-content"]`
	tb.do("post a mention and markdown in #general",
		chromedp.Navigate(h.ts.URL+demoLocation(h.vars["general"], h.vars["ada"])),
		visible(`[data-testid=demo-content-input]`),
		fill(`[data-testid=demo-content-input]`, "thanks <@"+h.vars["bo"]+"> for **the docs**\n```\n"+
			"a_long_line_of_code_that_does_not_fit_on_a_phone_screen_at_all_not_even_close\n```"),
		click(`[data-testid=demo-send]`),
		chromedp.WaitVisible(chromedp.Search(msg+`//*[@data-testid="mention-user" and @title="`+h.vars["bo"]+`" and .="@bo"]`)),
		chromedp.WaitVisible(chromedp.Search(msg+`//strong[.="the docs"]`)),
		chromedp.WaitVisible(chromedp.Search(msg+`//pre//code[starts-with(., "a_long_line_of_code")]`)),
	)
	tb.wantText(`[data-testid=demo-messages] [data-testid=demo-content]`, "thanks @bo for the docs")
	for _, vp := range []struct {
		label string
		w, h  int64
	}{{"desktop", 1280, 800}, {"phone", 390, 844}} {
		tb.do(vp.label, chromedp.EmulateViewport(vp.w, vp.h))
		weight, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('[data-testid=demo-content] strong')).fontWeight`))
		if err != nil {
			t.Fatal(err)
		}
		overflow, err := chromedp.Run(tb.ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`))
		if err != nil {
			t.Fatal(err)
		}
		if weight != "700" && weight != "bold" {
			t.Errorf("%s: the bold text's weight is %q", vp.label, weight)
		}
		if overflow {
			t.Errorf("%s: the page scrolls sideways", vp.label)
		}
	}
}
