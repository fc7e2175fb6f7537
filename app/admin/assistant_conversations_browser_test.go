package admin

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserAssistantConversation: in real Chromium the operator goes
// from /assistant to the conversations, opens one and sees its tool
// calls without any excerpt; turns Show transcripts on through its
// confirmation and then sees the excerpts.
func TestBrowserAssistantConversation(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	seedConversations(t, h)
	alpha, _ := strconv.Atoi(h.vars["alpha"])
	tb := newTab(t)
	tb.do("sign in",
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
	)
	tb.do("open the conversations from /assistant",
		chromedp.Navigate(h.ts.URL+"/assistant"),
		click(`[data-testid=assistant-conversations-link]`),
		visible(`[data-testid=conversations-table]`),
	)
	tb.do("open a conversation",
		click(`[data-testid=conversation-`+strconv.Itoa(alpha)+`] [data-testid=conversation-link]`),
		visible(`[data-testid=tool-call-dice\.roll]`),
	)
	tb.wantText(`[data-testid=tool-call-dice\.roll]`, "dice.roll")
	if strings.Contains(tb.html(`body`), "SEEDARGS-alpha") {
		t.Fatal("an excerpt with Show transcripts off")
	}
	tb.do("turn Show transcripts on, confirmed",
		chromedp.Navigate(h.ts.URL+"/assistant/conversations"),
		click(`[data-testid=transcripts-toggle]`),
		click(`[data-testid=confirm-yes]`),
		visible(`[data-testid=card-transcripts][data-on=true]`),
		chromedp.Navigate(h.ts.URL+"/assistant/conversations/"+h.vars["alpha"]),
		visible(`[data-testid=tool-call-dice\.roll]`),
	)
	tb.wantText(`[data-testid=tool-call-dice\.roll]`, "SEEDARGS-alpha")
}
