package admin

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app/results"
)

// TestBrowserResults: /results' counts follow a notification settled in
// the background without a reload (waits for the text, never one read of
// the live region), then the subscription page retries one row and then
// all of them, each with its flash.
func TestBrowserResults(t *testing.T) {
	h := newHarness(t, withSettling)
	h.createAdmin()
	resultFixture(t, h)
	s := h.settler(t)
	tb := newTab(t)
	tb.do("sign in", chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))

	tb.do("open /results", chromedp.Navigate(h.ts.URL+"/results"), visible(`[data-testid=results-module-kudos]`),
		waitTestIDText("result-count-kudos-digest-42-pending", "1"),
		chromedp.Evaluate[chromedp.Void](`window.kimiNoReload = true`))
	// The stream is open once its first fragment could have arrived; a
	// settle before that is in the first fragment anyway.
	s.settle(t, h.vars["pending"], results.StatusAcknowledged)
	tb.do("the settle arrives without a reload", waitTestIDText("result-count-kudos-digest-42-acknowledged", "2"),
		waitTestIDText("result-count-kudos-digest-42-pending", "0"))
	if !evalJS[bool](tb, `window.kimiNoReload === true`) {
		t.Fatal("/results reloaded instead of updating in place")
	}

	tb.do("open the subscription", click(`[data-testid=result-open-kudos-digest-42]`), visible(`[data-testid=result-table]`))
	tb.wantText(`[data-testid=result-actions]`, "Retry now (2 waiting)")
	tb.do("retry the blocked row", click(`[data-testid=result-retry-`+h.vars["blocked"]+`]`), visible(`[data-testid=alert-success]`))
	tb.wantText(`[data-testid=alert-success]`, "Retry requested: 1 notification due now.")
	if ms := h.resultRetryMs(t, h.vars["blocked"]); ms > time.Now().UnixMilli() {
		t.Errorf("the blocked row is not due: retry_ms %d", ms)
	}
	tb.do("retry all", click(`[data-testid=result-retry-all]`), visible(`[data-testid=alert-success]`),
		waitTestIDText("alert-success", "Retry requested: 2 notifications due now."))
	if ms := h.resultRetryMs(t, h.vars["retry"]); ms > time.Now().UnixMilli() {
		t.Errorf("the retry row is not due: retry_ms %d", ms)
	}
	if n := h.auditCount(results.ActionRetryNow); n != 2 {
		t.Errorf("%d retry-now audit rows, want 2", n)
	}
}
