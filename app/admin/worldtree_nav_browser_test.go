package admin

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserWorldtreeStaysInTheNavigation: once Worldtree is configured
// (its server reachable or not), every page's navigation lists it, at
// desktop width in the sidebar and at phone width in the opened menu, in
// demo mode as well (two optional entries).
func TestBrowserWorldtreeStaysInTheNavigation(t *testing.T) {
	h := newHarness(t, withDemo)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	configureWorldtree(t, c, allKeysForm(newFakeWorldtree(t).URL))

	tb := newTab(t)
	tb.do("sign in",
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
	)
	pages := []string{"/", "/demo", "/guilds", "/modules", "/proposals", "/results", "/tasks", "/discord", "/assistant", "/worldtree", "/audit", "/settings", "/no-such-page"}
	for _, p := range pages {
		tb.do("desktop "+p, chromedp.Navigate(h.ts.URL+p), visible(`[data-testid=nav-worldtree]`), visible(`[data-testid=nav-demo]`))
	}
	tb.do("phone", chromedp.EmulateViewport(390, 844))
	for _, p := range pages {
		tb.do("phone "+p, chromedp.Navigate(h.ts.URL+p), visible(`[data-testid=nav-toggle]`),
			click(`[data-testid=nav-toggle]`), visible(`[data-testid=nav-worldtree]`))
	}
}
