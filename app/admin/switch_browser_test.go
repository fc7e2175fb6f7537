package admin

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// switchReport is what switchCheckJS reads of a focused switch.
type switchReport struct {
	Focused      bool    `json:"focused"`
	Checked      bool    `json:"checked"`
	FocusVisible bool    `json:"focusVisible"`
	Outline      float64 `json:"outline"`
	Labelled     bool    `json:"labelled"`
	Role         string  `json:"role"`
	Knob         bool    `json:"knob"`
}

// switchCheckJS reads the switch sel: focus, state, its focus ring's
// width, its label and role, and whether it is drawn as a track (wider
// than tall) with a knob.
const switchCheckJS = `((sel) => {
	const e = document.querySelector(sel), st = getComputedStyle(e), r = e.getBoundingClientRect();
	const knob = getComputedStyle(e, '::before');
	return {focused: document.activeElement === e, checked: e.checked, focusVisible: e.matches(':focus-visible'),
		outline: st.outlineStyle === 'none' ? 0 : parseFloat(st.outlineWidth), labelled: e.labels.length > 0 && e.labels[0].textContent.trim() !== '',
		role: e.getAttribute('role') || '', knob: r.width > r.height * 1.5 && knob.content !== 'none' && parseFloat(knob.width) > 0};
})`

// TestBrowserSwitches: an on/off setting is a switch a keyboard can reach
// and flip with Space, labelled, announced as a switch, drawn as a track
// and knob, with a visible focus ring.
func TestBrowserSwitches(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	tb := newTab(t)
	tb.do("sign in", chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))
	for _, tt := range []struct{ page, sel string }{
		{"/discord", `#intent-members`},
		{"/assistant", `#assistant-private`},
	} {
		tb.do("open "+tt.page, chromedp.Navigate(h.ts.URL+tt.page), visible(tt.sel))
		before := evalJS[switchReport](tb, switchCheckJS+"('"+tt.sel+"')")
		tb.do("press Space on "+tt.sel, fill(tt.sel, " "))
		after := evalJS[switchReport](tb, switchCheckJS+"('"+tt.sel+"')")
		if !after.Focused || after.Checked == before.Checked {
			t.Errorf("%s %s: Space did not flip the focused switch (focused %v, checked %v → %v)", tt.page, tt.sel, after.Focused, before.Checked, after.Checked)
		}
		if !after.FocusVisible || after.Outline < 2 {
			t.Errorf("%s %s: focused by keyboard, the focus ring is %.1f px (focus-visible %v), want at least 2", tt.page, tt.sel, after.Outline, after.FocusVisible)
		}
		if !after.Labelled || after.Role != "switch" || !after.Knob {
			t.Errorf("%s %s: labelled %v, role %q, track and knob %v; want a labelled switch drawn as one", tt.page, tt.sel, after.Labelled, after.Role, after.Knob)
		}
	}
}
