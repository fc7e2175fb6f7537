package admin

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// demoChannel is the id of a demo channel by name.
func demoChannel(t *testing.T, h *harness, name string) string {
	t.Helper()
	demoVars(t, h)
	return h.vars[name]
}

// TestBrowserDemo: in demo mode, open /demo from the navigation, pick #general, post a message
// as a demo member and see it listed in its channel, under the demo banner.
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
	tb.wantText(`[data-testid=demo-empty]`, "No messages in #general yet.")
	tb.do("post as bo",
		chromedp.SetValue(chromedp.CSS(`[data-testid=demo-member]`), demoChannel(t, h, "bo")),
		fill(`[data-testid=demo-content-input]`, "hello from the browser"),
		click(`[data-testid=demo-send]`),
		visible(`[data-testid=demo-messages]`),
	)
	tb.wantText(`[data-testid=demo-content]`, "hello from the browser")
	tb.wantText(`[data-testid=demo-author]`, "bo")
	tb.wantText(`[data-testid=demo-banner]`, "Demo mode.")
	tb.wantText(`[data-testid=demo-send]`, "Send to #general")
	if got := demoMessages(t, h, "general"); len(got) != 1 || got[0] != "bo: hello from the browser" {
		t.Fatalf("the fake's #general = %q", got)
	}
}
