package admin

import (
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/modules/kudos"
)

// inViewport is a script that reports whether the first element matching
// css is on screen, top and bottom inside the window.
func inViewport(css string) string {
	return `(() => { const e = document.querySelector(` + strconv.Quote(css) + `); if (!e) return false;
		const r = e.getBoundingClientRect(); return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; })()`
}

// TestBrowserFeedbackInView: after a save of the lowest form on the guild
// page (a module's settings), refused or not, and after a refused task
// form, the page opens at that form with its message on screen — the
// error summary with a link to the invalid field, or the success notice
// beside the form — at phone and desktop widths.
func TestBrowserFeedbackInView(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	tb := newTab(t)
	tb.do("sign in", chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))
	mod := "#module-" + kudos.Name
	digest := "#ms-" + kudos.Name + "-" + kudos.FieldDigestChannel
	for i, vp := range []struct {
		label string
		w, h  int64
	}{{"phone", 390, 844}, {"desktop", 1280, 800}} {
		ids := strconv.Itoa(4300 + i)
		tb.do(vp.label, chromedp.EmulateViewport(vp.w, vp.h))
		tb.do(vp.label+": add the guild", chromedp.Navigate(h.ts.URL+"/guilds"), visible(`[data-testid=guild-add-form]`),
			fill(`#guild-add-id`, ids), click(`[data-testid=guild-add-submit]`), visible(`[data-testid=guild-setup-form]`))

		submit := func(step, value, want string) {
			t.Helper()
			tb.do(vp.label+": "+step, clearAlerts(), chromedp.Clear(chromedp.CSS(digest)), fill(digest, value),
				click(`[data-testid=module-submit-`+kudos.Name+`]`), visible(want))
			if !evalJS[bool](tb, inViewport(want)) {
				t.Errorf("%s: %s: %s is off screen (scrollY %v)", vp.label, step, want, evalJS[float64](tb, `window.scrollY`))
			}
		}
		submit("a refused save opens at its error summary", "not-an-id", mod+` [data-testid=module-error-summary-`+kudos.Name+`]`)
		tb.do(vp.label+": the summary links to the field", click(mod+` [data-testid=error-summary-link]`))
		if got := evalJS[string](tb, `location.hash`); got != digest {
			t.Errorf("%s: the summary's link went to %q, want %s", vp.label, got, digest)
		}
		submit("a save shows its notice beside the form", "777", mod+` [data-testid=near-flash] [data-testid=alert-success]`)

		// The task form, refused: its summary, linking to the name.
		tb.do(vp.label+": a refused task form", chromedp.Navigate(h.ts.URL+"/tasks/new"), visible(`[data-testid=task-form]`),
			fill(`#task-guild`, "42"), fill(`#task-owner`, "9"), fill(`#task-destinations`, "100"), fill(`#task-content`, "Hello"),
			chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.body.scrollHeight)`),
			click(`[data-testid=task-save]`), visible(`[data-testid=task-error-summary]`))
		if !evalJS[bool](tb, inViewport(`[data-testid=task-error-summary]`)) {
			t.Errorf("%s: the task form's error summary is off screen (scrollY %v)", vp.label, evalJS[float64](tb, `window.scrollY`))
		}
		tb.do(vp.label+": follow the name's link", click(`[data-testid=task-error-summary] a[href="#task-name"]`))
		if !evalJS[bool](tb, inViewport(`#task-name`)) {
			t.Errorf("%s: the summary's link did not bring the name field on screen", vp.label)
		}
	}
}
