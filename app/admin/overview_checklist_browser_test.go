package admin

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// overviewFitJS reports, on the overview, how far the commit hash sticks
// out of its card (px, 0 when inside), the cards stacked with under 12px
// between them, those side by side whose tops differ, and the checklist's
// steps whose link is not shown or is under the tap size.
const overviewFitJS = `(() => {
  const card = document.querySelector('[data-testid=card-version]');
  const code = card && card.querySelector('code');
  const out = code ? Math.max(0, code.getBoundingClientRect().right - card.getBoundingClientRect().right) : -1;
  const cards = [...document.querySelectorAll('.card')].map(c => ({id: c.dataset.testid || c.className, r: c.getBoundingClientRect()}));
  const tight = [], skewed = [];
  for (const a of cards) for (const b of cards) {
    if (a === b || b.r.top < a.r.top) continue;
    const across = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
    if (across > 0 && b.r.top >= a.r.top && b.r.top - a.r.bottom < 12 && b.r.top !== a.r.top) tight.push(a.id + ' / ' + b.id + ': ' + Math.round(b.r.top - a.r.bottom) + 'px');
    // Side by side (a row of a grid): the same top.
    if (across <= 0 && b.r.top < a.r.bottom && a.r.top < b.r.bottom && Math.abs(a.r.top - b.r.top) > 1) skewed.push(a.id + ' / ' + b.id + ': ' + Math.round(b.r.top - a.r.top) + 'px');
  }
  const links = [...document.querySelectorAll('[data-testid=overview-checklist] .checklist-link')]
    .filter(l => { const r = l.getBoundingClientRect(); return r.width === 0 || r.height < 44 || r.right > document.documentElement.clientWidth; })
    .map(l => l.dataset.testid);
  return {out, tight, skewed, links, steps: document.querySelectorAll('[data-testid=overview-checklist] .checklist-step').length};
})()`

type overviewFit struct {
	Out    float64  `json:"out"`
	Tight  []string `json:"tight"`
	Skewed []string `json:"skewed"`
	Links  []string `json:"links"`
	Steps  int      `json:"steps"`
}

// TestBrowserFirstRunChecklist: at phone and desktop widths a fresh
// overview shows the first-run checklist's four steps, each link a full
// tap target on screen, nothing scrolling sideways; a full commit hash
// stays inside its card and stacked cards keep a gap (the scheduler's and
// module health's too). Dismissing the checklist removes it for good.
func TestBrowserFirstRunChecklist(t *testing.T) {
	h := newHarness(t, withModules(nil, false), func(o *Options) { o.Commit = strings.Repeat("0123456789abcdef", 2) + "01234567" })
	h.createAdmin()
	tb := newTab(t)
	tb.do("sign in",
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-checklist]`),
	)
	for _, w := range []struct {
		name          string
		width, height int64
	}{{"phone", 390, 844}, {"desktop", 1280, 800}} {
		tb.do("overview at "+w.name, chromedp.EmulateViewport(w.width, w.height), chromedp.Reload(), visible(`[data-testid=overview-checklist]`),
			visible(`[data-testid=scheduler-state]`), visible(`[data-testid=checklist-assistant-link]`))
		tb.wantText(`[data-testid=checklist-progress]`, "1 of 4 done") // withModules selected two modules
		tb.wantText(`[data-testid=checklist-modules-detail]`, "2 modules selected.")
		fit := evalJS[overviewFit](tb, overviewFitJS)
		if fit.Steps != 4 || fit.Out != 0 || len(fit.Tight) > 0 || len(fit.Skewed) > 0 || len(fit.Links) > 0 {
			t.Errorf("%s: %d steps, commit out of its card by %.0f px, cards without a gap %v, side by side at different heights %v, links not shown or small %v",
				w.name, fit.Steps, fit.Out, fit.Tight, fit.Skewed, fit.Links)
		}
		if w.name == "phone" {
			tb.checkPhone("overview-checklist", "light", true)
		}
	}
	tb.shootForReview("overview-checklist")
	tb.do("dismiss the checklist", click(`[data-testid=checklist-dismiss]`), visible(`[data-testid=alert-success]`))
	tb.wantText(`[data-testid=alert-success]`, "The checklist is dismissed.")
	tb.do("reload", chromedp.Reload(), visible(`[data-testid=overview-version]`))
	if strings.Contains(tb.html(`body`), `data-testid="overview-checklist"`) {
		t.Fatal("the checklist is back after its dismissal")
	}
}
