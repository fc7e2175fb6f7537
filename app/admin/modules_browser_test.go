package admin

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestBrowserModulesJourney walks the module pages in a real browser:
// disable hello through its confirmation and see its state change, open
// the probe's page with its health chart and manifest, save a setting
// refused on its field and then a correct one; then, on the overview, a
// health change of the probe appears without a reload (the live script
// over the SSE stream).
func TestBrowserModulesJourney(t *testing.T) {
	p := &probe{}
	h := newHarness(t, withModules(p, false))
	requireRunning(t, h, "hello", probeName)
	h.createAdmin()
	tb := newTab(t)
	tb.do("sign in", chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))

	tb.do("open /modules", chromedp.Navigate(h.ts.URL+"/modules"), visible(`[data-testid=module-list]`))
	tb.wantText(`[data-testid=module-state-hello]`, "running")
	tb.do("disable hello", click(`[data-testid=module-toggle-hello]`), visible(`[data-testid=confirm-card]`))
	tb.wantText(`[data-testid=confirm-message]`, "closes hello")
	tb.do("confirm", click(`[data-testid=confirm-yes]`), visible(`[data-testid=alert-success]`), visible(`[data-testid=module-list]`))
	tb.wantText(`[data-testid=module-state-hello]`, "not selected")
	tb.wantText(`[data-testid=module-toggle-hello]`, "Enable")

	tb.do("open the probe", click(`[data-testid=module-open-probe]`), visible(`[data-testid=module-manifest]`),
		visible(`[data-testid=health-chart]`))
	tb.wantText(`[data-testid=module-manifest]`, "Dependencies")
	tb.do("a limit above its maximum", fill(`#setting-limit`, "99"), click(`[data-testid=module-settings-save]`),
		visible(`[data-testid="error-setting.limit"]`))
	tb.wantText(`[data-testid="error-setting.limit"]`, "at most 10")
	tb.do("a limit in bounds", chromedp.Evaluate[chromedp.Void](`document.querySelector('#setting-limit').value = ''`), fill(`#setting-limit`, "7"),
		click(`[data-testid=module-settings-save]`), visible(`[data-testid=alert-success]`))
	tb.wantText(`[data-testid=alert-success]`, "Settings saved")

	tb.do("open the overview", chromedp.Navigate(h.ts.URL+"/"), visible(`[data-testid=glance-probe]`),
		chromedp.Evaluate[chromedp.Void](`window.kimiNoReload = true`))
	tb.wantText(`[data-testid=glance-probe]`, "running")
	p.report(t, sdk.HealthDegraded, "backlog of 3")
	tb.do("the change arrives without a reload", visible(`[data-testid=glance-probe] [data-state=degraded]`))
	tb.wantText(`[data-testid=glance-probe]`, "backlog of 3")
	if !evalJS[bool](tb, `window.kimiNoReload === true`) {
		t.Fatal("the overview reloaded instead of updating in place")
	}
}
