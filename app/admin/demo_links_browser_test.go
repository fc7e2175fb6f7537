package admin

import (
	"strconv"
	"testing"

	"github.com/bwmarrin/discordgo"
	"github.com/chromedp/chromedp"
)

// demoLinksJS reports the open command disclosure's and a closed one's
// chevron (the summary's ::before) and where the fragment's message is.
const demoLinksJS = `(() => {
  const chevron = sel => {
    const s = document.querySelector(sel);
    if (!s) return 'missing';
    const st = getComputedStyle(s, '::before');
    return st.content === 'none' || parseFloat(st.width) === 0 ? 'none' : st.transform;
  };
  // The element the fragment names (a live update of the chat replaces
  // it, and :target with it, keeping the scroll).
  const t = document.getElementById(decodeURIComponent(location.hash.slice(1)));
  const r = t ? t.getBoundingClientRect() : null;
  return {
    closed: chevron('[data-testid=demo-command-ping]:not([open]) > summary'),
    target: t ? (t.dataset.messageId || '') : '',
    inView: r ? r.top >= 0 && r.bottom <= window.innerHeight : false,
  };
})()`

type demoLinksReport struct {
	Closed string `json:"closed"`
	Target string `json:"target"`
	InView bool   `json:"inView"`
}

// TestBrowserDemoLinks: at phone and desktop widths, /demo without
// commands links to /modules; a registered command's disclosure shows a
// chevron that turns when it opens; demo mode's "Open in Discord" address
// (/demo?channel=…#demo-message-…) opens the channel scrolled to that
// message (the first of 40), and ?channel= takes the channel's name.
func TestBrowserDemoLinks(t *testing.T) {
	h := newHarness(t, withDemo)
	h.createAdmin()
	demoVars(t, h)
	chat := demoChatOf(t, h)
	for i := range 40 {
		if err := chat.PostAsMember(t.Context(), h.vars["general"], h.vars["bo"], "message "+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := chat.DemoMessages(t.Context(), h.vars["general"], "")
	if err != nil || len(ms) != 40 {
		t.Fatalf("messages = %d, %v", len(ms), err)
	}
	first, _ := strconv.ParseUint(ms[0].ID, 10, 64)
	general, _ := strconv.ParseUint(h.vars["general"], 10, 64)
	link := h.srv.messageLink(0, general, first)

	tb := newTab(t)
	tb.do("sign in",
		colorScheme("light"), // with reduced motion: the chevron turns at once
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
		chromedp.Navigate(h.ts.URL+"/demo?channel=help"),
		visible(`[data-testid=demo-no-commands-modules]`),
	)
	tb.wantText(`[data-testid=demo-send]`, "Send to #help")

	f := demoFakeOf(t, h)
	bot := f.Session()
	if _, err := bot.ApplicationCommandBulkOverwrite(f.AppID(), demoGuildID(t, h), []*discordgo.ApplicationCommand{
		{Name: "ping", Description: "Answer pong."}, {Name: "echo", Description: "Say it back."},
	}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name          string
		width, height int64
	}{{"phone", 390, 844}, {"desktop", 1280, 800}} {
		tb.do("open the message link at "+w.name, chromedp.EmulateViewport(w.width, w.height),
			chromedp.Navigate(h.ts.URL+"/demo?channel=help"), visible(`[data-testid=demo-command-ping]`),
			chromedp.Navigate(h.ts.URL+link), visible(`[data-testid=demo-command-ping]`))
		rep := evalJS[demoLinksReport](tb, demoLinksJS)
		if rep.Target != ms[0].ID || !rep.InView {
			t.Errorf("%s: the fragment's message is %q (in view %v), want message %s in view", w.name, rep.Target, rep.InView, ms[0].ID)
		}
		if rep.Closed == "none" || rep.Closed == "missing" {
			t.Errorf("%s: a closed command shows no chevron (%s)", w.name, rep.Closed)
		}
		tb.do("open /ping", click(`[data-testid=demo-command-ping] summary`), visible(`[data-testid=demo-run-ping]`))
		opened := tb.eval(`getComputedStyle(document.querySelector('[data-testid=demo-command-ping][open] > summary'), '::before').transform`)
		if opened == rep.Closed {
			t.Errorf("%s: the chevron does not turn when the command opens (%s)", w.name, opened)
		}
	}
	tb.shootForReview("demo-links")
}
