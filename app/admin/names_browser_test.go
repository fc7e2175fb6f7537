package admin

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// nameShown is what the browser shows of a name component.
type nameShown struct {
	Text    string `json:"text"`
	Title   string `json:"title"`
	Copy    string `json:"copy"`    // the copy button's id
	CopyOn  bool   `json:"copyOn"`  // the copy button is displayed
	Overlap bool   `json:"overlap"` // the name overflows its row
}

// nameShownJS reads the first element matching %s.
const nameShownJS = `(() => {
	const n = document.querySelector(%q);
	if (!n) return {};
	const b = n.querySelector('button[data-copy]');
	const row = n.closest('li, tr, .page-header') || document.body;
	return {text: n.querySelector('.name-text, h1') ? (n.querySelector('.name-text') || n).textContent.trim() : n.textContent.trim(),
		title: n.getAttribute('title') || '', copy: b ? b.dataset.copy : '',
		copyOn: !!b && getComputedStyle(b).display !== 'none',
		overlap: n.getBoundingClientRect().right > row.getBoundingClientRect().right + 1};
})()`

// TestBrowserNames: at 1280 and 390 px the guild list and a guild's page
// show the guild's name where its id was, the id in the title; the copy
// button is shown (live.js) from tablet width and left out on phones, where
// the page keeps its tap targets.
func TestBrowserNames(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	namesWithAudit(t, h)
	tb := newTab(t)
	tb.do("sign in", chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))
	for _, vp := range []struct {
		label  string
		w, h   int64
		copyOn bool
	}{{"desktop", 1280, 900, true}, {"phone", 390, 844, false}} {
		tb.do(vp.label, chromedp.EmulateViewport(vp.w, vp.h))
		tb.do(vp.label+": the guild list", chromedp.Navigate(h.ts.URL+"/guilds"), visible(`[data-testid=guild-row-42] [data-testid=name-guild]`))
		for _, tc := range []struct {
			css, text, title string
		}{
			{`[data-testid=guild-row-42] [data-testid=name-guild]`, "Proposals guild", "Proposals guild · guild id 42"},
			{`[data-testid=guild-row-77] [data-testid=name-guild]`, "unknown guild 77", "guild id 77"},
		} {
			got := evalJS[nameShown](tb, fmt.Sprintf(nameShownJS, tc.css))
			if got.Text != tc.text || got.Title != tc.title || got.Overlap {
				t.Errorf("%s: %s shows %+v, want text %q, title %q, inside its row", vp.label, tc.css, got, tc.text, tc.title)
			}
		}
		tb.do(vp.label+": the audit log", chromedp.Navigate(h.ts.URL+"/audit"), visible(`[data-testid=audit-actor] [data-testid=name-user]`))
		actor := `[data-testid=audit-actor] [data-testid=name-user]:not(.name-unknown)`
		if got := evalJS[nameShown](tb, fmt.Sprintf(nameShownJS, actor)); got.Text != "staffer" || got.Copy != h.vars["staff"] || got.CopyOn != vp.copyOn {
			t.Errorf("%s: the audit actor shows %+v, want staffer, copying %s, the button shown %v", vp.label, got, h.vars["staff"], vp.copyOn)
		}
		tb.do(vp.label+": a guild's page", chromedp.Navigate(h.ts.URL+"/guilds/42"), visible(`[data-testid=guild-setup-form]`))
		if got := evalJS[nameShown](tb, fmt.Sprintf(nameShownJS, `h1[data-testid=page-title]`)); got.Text != "Proposals guild" || got.Title != "Proposals guild · guild id 42" {
			t.Errorf("%s: the guild page's title shows %+v", vp.label, got)
		}
		if vp.label == "phone" {
			for _, page := range []string{"/guilds", "/audit"} {
				tb.do("phone: "+page, chromedp.Navigate(h.ts.URL+page), visible(`main`))
				tb.checkPhone(page, "light", true)
			}
		}
	}
}
