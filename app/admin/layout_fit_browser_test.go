package admin

import "strings"

// fitReport is what fitCheckJS measures on the page.
type fitReport struct {
	Overflow  float64  `json:"overflow"`
	Scrollers []string `json:"scrollers"`
	Hidden    []string `json:"hidden"`
	Danger    []string `json:"danger"`
}

// fitCheckJS measures, at any width: how far the page scrolls sideways;
// every table wrapper that scrolls inside itself; every action button
// (a button or .btn in the main column) that is not wholly on screen and
// inside every ancestor that clips; and every checkbox that, ticked, is
// drawn in the danger colour (each is ticked for the measurement and put
// back).
const fitCheckJS = `(() => {
	const out = {overflow: document.documentElement.scrollWidth - innerWidth, scrollers: [], hidden: [], danger: []};
	const name = e => e.tagName.toLowerCase() + (e.dataset.testid ? '[' + e.dataset.testid + ']' : '') +
		(e.id ? '#' + e.id : '') + ' "' + (e.textContent || e.value || '').trim().slice(0, 30) + '"';
	for (const w of document.querySelectorAll('.table-wrap')) {
		if (w.scrollWidth - w.clientWidth > 1) out.scrollers.push((w.querySelector('table') ? name(w.querySelector('table')) : name(w)) +
			' by ' + (w.scrollWidth - w.clientWidth) + 'px');
	}
	const main = document.querySelector('main') || document.body;
	for (const b of main.querySelectorAll('button, .btn')) {
		if (b.closest('[aria-hidden=true], .visually-hidden, details:not([open]), dialog:not([open])')) continue;
		if (!b.checkVisibility({visibilityProperty: true})) continue;
		const r = b.getBoundingClientRect();
		if (r.width === 0 || r.height === 0) continue;
		let ok = r.left >= -0.5 && r.right <= innerWidth + 0.5;
		for (let a = b.parentElement; ok && a && a !== document.body; a = a.parentElement) {
			const st = getComputedStyle(a);
			if (st.overflowX === 'visible' && st.overflowY === 'visible') continue;
			const ar = a.getBoundingClientRect();
			ok = r.left >= ar.left - 0.5 && r.right <= ar.right + 0.5;
		}
		if (!ok) out.hidden.push(name(b) + ' at ' + Math.round(r.left) + '..' + Math.round(r.right));
	}
	const probe = document.createElement('span');
	probe.style.color = 'var(--danger)';
	document.body.appendChild(probe);
	const danger = getComputedStyle(probe).color;
	probe.remove();
	for (const c of document.querySelectorAll('input[type=checkbox]')) {
		if (!c.checkVisibility({visibilityProperty: true})) continue;
		const was = c.checked;
		c.checked = true;
		const st = getComputedStyle(c);
		if (st.backgroundColor === danger || st.borderTopColor === danger) out.danger.push(name(c));
		c.checked = was;
	}
	return out;
})()`

// checkFits asserts the rules of fitCheckJS on the current page.
func (tb *tab) checkFits(where string) {
	tb.t.Helper()
	rep := evalJS[fitReport](tb, fitCheckJS)
	if rep.Overflow > 0 {
		tb.t.Errorf("%s: the page scrolls sideways by %.0f px", where, rep.Overflow)
	}
	if len(rep.Scrollers) > 0 {
		tb.t.Errorf("%s: tables scroll inside their wrapper:\n  %s", where, strings.Join(rep.Scrollers, "\n  "))
	}
	if len(rep.Hidden) > 0 {
		tb.t.Errorf("%s: action buttons not wholly visible:\n  %s", where, strings.Join(rep.Hidden, "\n  "))
	}
	if len(rep.Danger) > 0 {
		tb.t.Errorf("%s: ticked boxes in the danger colour:\n  %s", where, strings.Join(rep.Danger, "\n  "))
	}
}
