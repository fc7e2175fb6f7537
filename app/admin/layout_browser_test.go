package admin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/web/templates"
)

// minTap is the least tap target, in CSS pixels, at phone width.
const minTap = 44

// layoutPage is one page the layout test visits.
type layoutPage struct {
	name, path, ready string
	signedIn          bool
}

// TestBrowserLayout checks every page in the light and dark themes at phone,
// tablet and desktop widths: each unbuilt section's navigation entry shows
// its "soon" marker (inside the menu on phones); at phone width the header
// is one row while the menu is closed, every link, button and form control
// is a 44px tap target (inline links in a sentence excepted), nothing
// scrolls sideways, and the audit log's cells are not squeezed; every form
// control's border is 3:1 against its background as the browser computes
// it. It saves <page>-phone-<theme>.png for every page in $KIMI_ARTIFACTS.
func TestBrowserLayout(t *testing.T) {
	jp := &probe{slow: make(chan string, 1)}
	h := newHarness(t, withModules(jp, false), withDemo) // demo mode: every page carries its banner
	wt := newFakeWorldtree(t)
	tb := newTab(t)
	ctx := context.Background()
	token, _, err := h.auth.NewSetupToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := artifactDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	// The set-up page is only there before the first admin exists.
	for _, theme := range []string{"light", "dark"} {
		tb.do("phone "+theme, colorScheme(theme), chromedp.EmulateViewport(390, 844))
		tb.do("open set-up", chromedp.Navigate(h.ts.URL+"/setup?token="+token), visible(`[data-testid=setup-form]`))
		tb.checkPhone("setup", theme, false)
		tb.savePhone(dir, "setup", theme)
	}
	tb.do("create the admin at phone width",
		fill(`#setup-username`, testUser), fill(`#setup-password`, testPassword), fill(`#setup-confirm`, testPassword),
		click(`[data-testid=setup-submit]`), visible(`[data-testid=overview-version]`))

	// Worldtree configured (its page and the settings' clear-key boxes);
	// audit rows of every kind the page renders specially.
	c := h.newClient()
	c.login(testUser, testPassword)
	configureWorldtree(t, c, allKeysForm(wt.URL))
	for _, e := range []store.AuditEntry{
		{At: time.Now().Add(-26 * time.Hour), Actor: "a-very-long-username-that-wraps@example.com", Action: "auth.login_failed", IP: "2001:db8:85a3::8a2e:370:7334", Detail: "invalid username or password"},
		{At: time.Now().Add(-5 * time.Minute), Actor: testUser, Action: "worldtree.settings", Target: "worldtree", Detail: "base URL changed; default key set; consumer key set", IP: "203.0.113.7"},
	} {
		if err := h.st.Audit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}

	// A guild with a server setup, module settings of two revisions (the
	// history's diff) and an invalid module document (the list's warning).
	h.writeDocument(guildT, activeGuild)
	h.writeDocument(kudosT, "---\ngiver_min_tier: regular\ndigest_channel_id: 123456789012345678\n---\n")
	h.writeDocument(kudosT, "---\ngiver_min_tier: staff\n---\n")
	h.storeInvalid(allT, "---\nlimit: many\n---\n")

	// The probe's jobs table: a long key, a failed job's error, a running
	// job's lease holder.
	scheduleLayoutJobs(t, h, jp)
	// The demo guild's #general with a long message (the chat view wraps it).
	demoVars(t, h)
	if err := h.srv.opts.Demo.PostAsMember(ctx, h.vars["general"], h.vars["ada"], "a long message "+strings.Repeat("without-any-spaces-", 12)); err != nil {
		t.Fatal(err)
	}
	// The bot's messages (an embed with buttons and a select, a Components V2 layout), the
	// slash commands' forms (one opened) and an open modal, so their controls are measured too.
	demoBotPosts(t, h)
	demoModalOpen(t, h)

	// The bot connected to the harness's fake Discord, in two guilds (one
	// with a long name), and one rate limit met.
	h.fake.AddGuild(fakediscord.GuildSpec{ID: "42", Name: "Layout guild"})
	h.fake.AddGuild(fakediscord.GuildSpec{ID: "43", Name: "A guild with a rather long name that has to wrap on a phone"})
	withToken("")(t, h)
	h.bot.Start(ctx)
	discordWait(t, "the bot connected in both guilds", func() bool {
		st := h.bot.Status()
		return st.State == discord.StateConnected && len(st.Guilds) == 2 && st.Guilds[0].Name != "" && st.Guilds[1].Name != ""
	})
	// A pending proposal of kudos' settings (a long summary, a diff against
	// the live document): the inbox's row, the badge and the review page.
	proposalID := h.proposeIn(t, h.fake.AddChannel(fakediscord.ChannelSpec{GuildID: "42", Name: "general"}).ID, "", kudos.Name,
		"---\ngiver_min_tier: regular\ndigest_channel_id: 123456789012345678\nallow_thank_back: false\n---\n",
		"Send the weekly kudos digest to #general and let regulars give kudos, "+strings.Repeat("with a long summary ", 4))

	// Scheduled results: a subscription in the long-named guild with a row
	// in every state (a long error detail), and one in a guild the bot does
	// not know.
	longKey := results.SubKey{Module: kudos.Name, Name: "digest_of_the_week_with_a_long_subscription_name", GuildID: 43}
	h.addSubscription(t, longKey)
	for _, st := range results.Statuses {
		h.addResult(t, longKey, resultFix{status: st, age: time.Hour, retryIn: time.Hour, expired: st == results.StatusExpired,
			detail: results.DetailRaisedPrefix + "*kudos.aVeryLongErrorTypeNameWithoutAnySpacesThatMustWrapOnPhones"})
	}
	resultFixture(t, h)
	// A task, so /tasks has its table (cards on a phone).
	seedTask(taskDef("Standup reminder for the whole team, every weekday morning", "Standup time"))(t, h)

	pages := []layoutPage{
		{"overview", "/", `[data-testid=overview-version]`, true},
		{"guilds", "/guilds", `[data-testid=guild-list]`, true},
		{"guild", "/guilds/42", `[data-testid=guild-setup-form]`, true},
		{"guild-history", "/guilds/42/history?module=" + kudos.Name, `[data-testid=history-list]`, true},
		{"modules", "/modules", `[data-testid=module-list]`, true},
		{"module", "/modules/probe", `[data-testid=module-jobs]`, true},
		{"proposals", "/proposals", `[data-testid=proposal-list]`, true},
		{"proposal", "/proposals/" + proposalID, `[data-testid=proposal-reject-form]`, true},
		{"results", "/results", `[data-testid=results-module-kudos]`, true},
		{"result", resultPath(longKey), `[data-testid=result-table]`, true},
		{"tasks", "/tasks", `[data-testid=task-table]`, true},
		{"discord", "/discord", `[data-testid=discord-guild-table]`, true},
		{"worldtree", "/worldtree", `[data-testid=worldtree-agents]`, true},
		{"audit", "/audit", `[data-testid=audit-table]`, true},
		{"settings", "/settings", `[data-testid=worldtree-form]`, true},
		{"demo", "/demo?channel=" + demoChannel(t, h, "general") + "&as=" + h.vars["ada"], `[data-testid=demo-modal]`, true},
		{"not-found", "/nope", `[data-testid=error-page]`, true},
	}
	for _, theme := range []string{"light", "dark"} {
		for _, vp := range viewports {
			tb.do(vp.label+" "+theme, colorScheme(theme), chromedp.EmulateViewport(vp.w, vp.h))
			for _, p := range pages {
				tb.do("open "+p.name, chromedp.Navigate(h.ts.URL+p.path), visible(p.ready))
				tb.checkSoonMarkers(p.name+" "+vp.label+" "+theme, vp.label == "phone")
				tb.checkFits(p.name + " at " + vp.label + " width, " + theme)
				if vp.label == "phone" {
					tb.checkPhone(p.name, theme, p.signedIn)
					tb.savePhone(dir, p.name, theme)
				}
			}
		}
		// The open menu at phone width, for review.
		tb.do("phone "+theme, chromedp.EmulateViewport(390, 844))
		tb.do("open the menu", chromedp.Navigate(h.ts.URL+"/audit"), visible(`[data-testid=audit-table]`),
			click(`[data-testid=nav-toggle]`), visible(`[data-testid=nav-settings]`))
		tb.savePhone(dir, "menu-open", theme)
		tb.do("follow a menu entry", click(`[data-testid=nav-settings]`), visible(`[data-testid=password-form]`))
	}

	// Signed out: the sign-in page and its error.
	tb.do("sign out", click(`[data-testid=logout-compact]`), visible(`[data-testid=login-form]`))
	tb.do("failed sign-in", fill(`#login-username`, testUser), fill(`#login-password`, "wrong password"),
		click(`[data-testid=login-submit]`), visible(`[data-testid=alert-error]`))
	for _, theme := range []string{"light", "dark"} {
		tb.do("theme "+theme, colorScheme(theme))
		tb.checkPhone("login", theme, false)
		tb.savePhone(dir, "login", theme)
	}
}

// checkSoonMarkers: every unbuilt section's entry shows "soon"; on phones
// after opening the menu (and closing it again).
func (tb *tab) checkSoonMarkers(where string, phone bool) {
	tb.t.Helper()
	if phone {
		tb.do("open the menu", click(`[data-testid=nav-toggle]`), visible(`[data-testid=nav-overview]`))
	}
	for _, item := range templates.Nav {
		if !item.Soon {
			continue
		}
		js := `(() => { const s = document.querySelector('[data-testid="nav-` + item.Key + `"] .nav-soon');
			if (!s) return false; const r = s.getBoundingClientRect(), st = getComputedStyle(s);
			const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
			return r.width > 0 && r.height > 0 && r.right <= innerWidth && r.left >= 0 && st.visibility === 'visible' &&
				s.textContent.trim() === 'soon' && !!hit && s.parentElement.contains(hit); })()`
		if !evalJS[bool](tb, js) {
			tb.t.Errorf("%s: the %s entry does not show its soon marker", where, item.Label)
		}
	}
	if phone {
		tb.do("close the menu", click(`[data-testid=nav-toggle]`))
	}
}

// phoneReport is what checkPhone's script measures on the page.
type phoneReport struct {
	HeaderRows   int      `json:"headerRows"`
	HeaderHeight float64  `json:"headerHeight"`
	NavShown     bool     `json:"navShown"`
	Overflow     float64  `json:"overflow"`
	Small        []string `json:"small"`
	LowContrast  []string `json:"lowContrast"`
	Squeezed     []string `json:"squeezed"`
	Covered      []string `json:"covered"`
}

// phoneCheckJS measures the page as a phone shows it. Targets are every
// rendered link, button, form control and summary; a link inside a sentence
// is exempt (WCAG 2.5.8's inline exception), and a checkbox counts its
// label as its tap area.
const phoneCheckJS = `(() => {
	const out = {headerRows: 0, headerHeight: 0, navShown: false, overflow: 0, small: [], lowContrast: [], squeezed: [], covered: []};
	const header = document.querySelector('.sidebar');
	if (header) {
		out.headerHeight = header.getBoundingClientRect().height;
		const rects = [...header.children].map(e => e.getBoundingClientRect()).filter(r => r.width > 0 && r.height > 0);
		// Rows: children that start below the bottom of every earlier one.
		let bottom = -Infinity;
		for (const r of rects.sort((a, b) => a.top - b.top)) {
			if (r.top >= bottom) { out.headerRows++; }
			bottom = Math.max(bottom, r.bottom);
		}
		const nav = header.querySelector('.nav');
		out.navShown = !!nav && nav.checkVisibility({contentVisibilityAuto: true, visibilityProperty: true});
	}
	out.overflow = document.documentElement.scrollWidth - innerWidth;
	for (const w of document.querySelectorAll('.table-wrap')) out.overflow = Math.max(out.overflow, w.scrollWidth - w.clientWidth);
	// Shown navigation entries must be on top where they are drawn (not
	// clipped or covered), or a tap misses them.
	for (const l of document.querySelectorAll('.nav-link')) {
		const r = l.getBoundingClientRect();
		if (r.width === 0 || !l.checkVisibility({visibilityProperty: true}) || r.bottom > innerHeight) continue;
		const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
		if (!hit || !l.contains(hit)) out.covered.push(l.dataset.testid);
	}
	const name = e => e.tagName.toLowerCase() + (e.dataset.testid ? '[' + e.dataset.testid + ']' : '') +
		(e.id ? '#' + e.id : '') + ' "' + (e.textContent || e.value || '').trim().slice(0, 30) + '"';
	for (const e of document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, summary')) {
		if (e.closest('[aria-hidden=true], .visually-hidden')) continue;
		let r = e.getBoundingClientRect();
		if (r.width === 0 || r.height === 0 || r.bottom <= 0 || !e.checkVisibility({visibilityProperty: true})) continue;
		const st = getComputedStyle(e);
		if (e.tagName === 'A' && st.display === 'inline' && e.parentElement &&
			e.parentElement.textContent.trim().length > e.textContent.trim().length) continue;
		let w = r.width, h = r.height;
		if (e.type === 'checkbox' || e.type === 'radio') {
			const l = (e.id && document.querySelector('label[for="' + e.id + '"]')) || e.closest('label');
			if (l) {
				const lr = l.getBoundingClientRect();
				h = Math.max(r.bottom, lr.bottom) - Math.min(r.top, lr.top);
				w = Math.max(r.right, lr.right) - Math.min(r.left, lr.left);
			}
		}
		if (w < 43.5 || h < 43.5) out.small.push(name(e) + ' ' + Math.round(w) + 'x' + Math.round(h));
		if (['INPUT', 'SELECT', 'TEXTAREA'].includes(e.tagName)) {
			const rgb = s => (s.match(/[\d.]+/g) || []).slice(0, 3).map(Number);
			const lum = c => { const [r, g, b] = c.map(v => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
				return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
			const a = lum(rgb(st.borderTopColor)), b = lum(rgb(st.backgroundColor));
			const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
			if (ratio < 3) out.lowContrast.push(name(e) + ' ' + st.borderTopColor + ' on ' + st.backgroundColor + ' = ' + ratio.toFixed(2));
		}
	}
	for (const td of document.querySelectorAll('[data-testid=audit-table] td')) {
		const r = td.getBoundingClientRect();
		if (r.width > 0 && td.textContent.trim() !== '' && r.width < innerWidth / 3) {
			if (!td.classList.contains('what') && !td.classList.contains('time')) out.squeezed.push(td.dataset.label + ' ' + Math.round(r.width) + 'px');
		}
	}
	return out;
})()`

// checkPhone asserts the phone-width rules on the current page.
func (tb *tab) checkPhone(page, theme string, signedIn bool) {
	tb.t.Helper()
	rep := evalJS[phoneReport](tb, phoneCheckJS)
	where := page + " at phone width, " + theme
	if signedIn {
		if rep.HeaderRows != 1 || rep.HeaderHeight > 2*minTap {
			tb.t.Errorf("%s: the header takes %d rows (%.0f px) with the menu closed, want 1", where, rep.HeaderRows, rep.HeaderHeight)
		}
		if rep.NavShown {
			tb.t.Errorf("%s: the navigation shows with the menu closed", where)
		}
	}
	if rep.Overflow > 0 {
		tb.t.Errorf("%s: the page scrolls sideways by %.0f px", where, rep.Overflow)
	}
	if len(rep.Small) > 0 {
		tb.t.Errorf("%s: tap targets under %dpx:\n  %s", where, minTap, strings.Join(rep.Small, "\n  "))
	}
	if len(rep.LowContrast) > 0 {
		tb.t.Errorf("%s: form control borders under 3:1:\n  %s", where, strings.Join(rep.LowContrast, "\n  "))
	}
	if len(rep.Squeezed) > 0 {
		tb.t.Errorf("%s: audit cells squeezed: %s", where, strings.Join(rep.Squeezed, ", "))
	}
	if signedIn && page != "not-found" {
		// Opened, the menu's entries are tap targets too.
		tb.do("open the menu", click(`[data-testid=nav-toggle]`), visible(`[data-testid=nav-overview]`))
		rep = evalJS[phoneReport](tb, phoneCheckJS)
		if !rep.NavShown || len(rep.Covered) > 0 {
			tb.t.Errorf("%s, menu open: navigation shown %v, entries clipped or covered: %v", where, rep.NavShown, rep.Covered)
		}
		if len(rep.Small) > 0 {
			tb.t.Errorf("%s, menu open: tap targets under %dpx:\n  %s", where, minTap, strings.Join(rep.Small, "\n  "))
		}
		tb.do("close the menu", click(`[data-testid=nav-toggle]`))
	}
}

// savePhone writes the current page's screenshot as <page>-phone-<theme>.png.
func (tb *tab) savePhone(dir, page, theme string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot %s: %v", page, err)
	}
	p := filepath.Join(dir, page+"-phone-"+theme+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", p)
}

// evalJS runs a script in tb's page and decodes its result.
func evalJS[T any](tb *tab, js string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		tb.t.Fatalf("script: %v", err)
	}
	return v
}

// scheduleLayoutJobs gives the probe a job of every shape the jobs table
// renders: one ahead with a long key, a failed one and a running one.
func scheduleLayoutJobs(t *testing.T, h *harness, p *probe) {
	t.Helper()
	requireRunning(t, h, probeName)
	ctx := context.Background()
	sch := p.runtime(t).Scheduler
	if err := sch.RunAt(ctx, "digest/weekly run for guild 123456789012345678", time.Now().Add(2*time.Hour), "tick", nil); err != nil {
		t.Fatal(err)
	}
	if err := sch.RunAt(ctx, "flaky", time.Now(), "fail", nil); err != nil {
		t.Fatal(err)
	}
	waitJob(t, h, "flaky", func(j scheduler.Job, ok bool) bool { return ok && j.LastError != "" && !j.Running(time.Now()) })
	if err := sch.RunAt(ctx, "hold", time.Now(), "slow", nil); err != nil {
		t.Fatal(err)
	}
	holderOf(t, h, "hold")
}
