package admin

import (
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserTaskScheduleFields: the task form shows, for each schedule
// kind chosen in Repeats, exactly the schedule fields that kind uses (CSS
// :has() on the select, no script), and a field's hint keeps a gap above
// the next field's label.
func TestBrowserTaskScheduleFields(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	tb := newTab(t)
	tb.do("sign in", chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))
	tb.do("open the form", chromedp.Navigate(h.ts.URL+"/tasks/new"), visible(`[data-testid=task-form]`))

	all := []string{"sched-at", "sched-every", "sched-time", "sched-weekday", "sched-day", "sched-timezone"}
	for _, tc := range []struct {
		kind string
		want []string
	}{
		{"once", []string{"sched-at", "sched-timezone"}},
		{"interval", []string{"sched-every"}},
		{"daily", []string{"sched-time", "sched-timezone"}},
		{"weekdays", []string{"sched-time", "sched-timezone"}},
		{"weekly", []string{"sched-time", "sched-weekday", "sched-timezone"}},
		{"monthly", []string{"sched-time", "sched-day", "sched-timezone"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			tb.do("choose "+tc.kind, chromedp.SetValue(chromedp.CSS(`#task-kind`), tc.kind))
			var shown []string
			for _, id := range all {
				if evalJS[bool](tb, `document.querySelector('[data-testid=`+id+`]').getClientRects().length > 0`) {
					shown = append(shown, id)
				}
			}
			if !slices.Equal(shown, tc.want) {
				t.Errorf("kind %s shows %v, want %v", tc.kind, shown, tc.want)
			}
			// Late is every kind's.
			if !evalJS[bool](tb, `document.querySelector('#task-late').getClientRects().length > 0`) {
				t.Errorf("kind %s hides the missed-run choice", tc.kind)
			}
		})
	}
	// The template's hint and the embed title's label: a gap of at least
	// half a line between them.
	gap := evalJS[float64](tb, `(() => {
		const hint = document.querySelector('#task-content-desc').getBoundingClientRect();
		const label = document.querySelector('label[for=task-embed-title]').getBoundingClientRect();
		return label.top - hint.bottom;
	})()`)
	if gap < 8 {
		t.Errorf("the template's hint is %.1fpx above the next label, want at least 8", gap)
	}
}
