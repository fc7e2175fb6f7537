package admin

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserAssistantUsageChart: from /assistant the operator opens
// Usage and sees the chart drawn: 30 bars, today's (the tallest) filling
// the plot at its rendered size, and the table beside it. It needs no
// script.
func TestBrowserAssistantUsageChart(t *testing.T) {
	h := newHarness(t, withUsage(nil))
	h.createAdmin()
	seedUsageRows(t, h.st,
		"('2023-11-14', 10, 7, 'kimi-k2', 3, 800, 200, 0, 2)",
		"('2023-11-13', 10, 8, 'kimi-k2', 1, 400, 100, 0, 1)")
	tb := newTab(t)
	tb.do("sign in",
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
	)
	tb.do("open the usage page from the assistant's",
		click(`[data-testid=nav-assistant]`),
		click(`[data-testid=assistant-usage-link]`),
		visible(`[data-testid=usage-chart] svg`),
		visible(`[data-testid=usage-days-table]`),
	)
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=usage-chart] rect.chart-bar').length`))
	if err != nil || bars != 30 {
		t.Fatalf("%d bars (%v), want 30", bars, err)
	}
	// The bars as drawn: today's is twice yesterday's, both visibly tall.
	ratio, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => {
		const r = d => document.querySelector('rect[data-day="' + d + '"]').getBoundingClientRect().height;
		return r('2023-11-13') > 10 ? r('2023-11-14') / r('2023-11-13') : 0;
	})()`))
	if err != nil || ratio < 1.95 || ratio > 2.05 {
		t.Errorf("today's bar / yesterday's = %v (%v), want 2", ratio, err)
	}
	tb.wantText(`[data-testid=usage-total-tokens]`, "1,500")
	tb.shootForReview("assistant-usage")
}
