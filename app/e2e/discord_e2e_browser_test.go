package e2e

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/internal/browsertest"
	"github.com/kimiapp/kimi/kimitest"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// The browser conventions are app/admin's (browser_test.go): the shared
// browser of app/internal/browsertest (Debian's chromium, headless, kept on
// loopback), a tab per test whose console errors fail it.

var e2eBrowser browsertest.Browser

func TestMain(m *testing.M) {
	code := m.Run()
	e2eBrowser.Close()
	os.Exit(code)
}

// e2eRequireBrowser returns the shared browser, skipping loudly when
// chromium is missing locally and failing under CI=true.
func e2eRequireBrowser(t *testing.T) context.Context { t.Helper(); return e2eBrowser.Require(t) }

// e2eTab is one tab bound to a test: console errors and exceptions fail it
// (a page's deliberate 4xx status aside).
type e2eTab struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

func newE2ETab(t *testing.T) *e2eTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(e2eRequireBrowser(t))
	tb := &e2eTab{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			deliberate := m.Source == "network" && strings.HasPrefix(m.Text, "Failed to load resource") && !strings.Contains(m.URL, "/static/")
			if (m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException) && !deliberate {
				tb.mu.Lock()
				tb.problems = append(tb.problems, m.String()+" ("+m.URL+")")
				tb.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			tb.screenshot()
		}
		cancel()
		<-done
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, p := range tb.problems {
			t.Errorf("browser console: %s", p)
		}
	})
	return tb
}

// screenshot keeps a full-page screenshot in kimitest.ArtifactDir, as
// app/admin's browser tests do.
func (tb *e2eTab) screenshot() {
	ctx, cancel := context.WithTimeout(tb.ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Logf("screenshot failed: %v", err)
		return
	}
	kimitest.KeepArtifact(tb.t, strings.ReplaceAll(tb.t.Name(), "/", "_")+"-failure-*.png", png)
}

func (tb *e2eTab) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, e2eWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %v\n%s", step, err, tb.page())
	}
}

// page describes where the tab is and what it shows, for a failed step's
// message: the address and the start of the page's text (a step that timed
// out says only that it did).
func (tb *e2eTab) page() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	url, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	if err != nil {
		return "the page could not be read: " + err.Error()
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return "page " + url + "; its text could not be read: " + err.Error()
	}
	// One line: the page's lines joined, so a long page does not push the
	// failure out of a log's tail.
	var parts []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	text = strings.Join(parts, " · ")
	const most = 1200
	if r := []rune(text); len(r) > most {
		text = string(r[:most]) + " …"
	}
	return "page " + url + " shows: " + text
}

// wantText waits until the first element matching css shows want: a
// wait, not a single read (browsertest.WaitText).
func (tb *e2eTab) wantText(css, want string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, e2eWait)
	defer cancel()
	if got, err := browsertest.WaitText(ctx, css, want); err != nil {
		tb.t.Fatalf("%s text = %q, want it to contain %q (%v)", css, got, want, err)
	}
}

// signIn signs the tab in as the e2e admin through serve's login form
// at url and waits for the overview.
func (tb *e2eTab) signIn(url string) {
	tb.t.Helper()
	tb.do("sign in",
		chromedp.Navigate(url+"/login"),
		e2eFill(`#login-username`, kimitest.AdminUsername),
		e2eFill(`#login-password`, kimitest.AdminPassword),
		e2eClick(`[data-testid=login-submit]`),
		e2eVisible(`[data-testid=overview-version]`),
	)
}

func e2eFill(css, value string) chromedp.Action[chromedp.Void] {
	return chromedp.SendKeys(chromedp.CSS(css), value)
}
func e2eClick(css string) chromedp.Action[chromedp.Void] { return browsertest.Click(chromedp.CSS(css)) }
func e2eVisible(css string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(css))
}

// TestBrowserE2EKudosInTheDemo: `kimi serve --demo` with kudos, in a real
// headless Chromium: sign in, see the demo guild active out of the box, open
// /demo in #general as ada, run `/kudos give` with bo and a reason, and
// see Kimi's public reply appear with its Thank back button; switch to bo,
// click it, and see Kimi's kudos back to ada appear.
func TestBrowserE2EKudosInTheDemo(t *testing.T) {
	a := startE2E(t, e2eOptions{specs: []sdk.Spec{kudos.Spec()}, modules: kudos.Name,
		seed: func(*fakediscord.Server) {}})
	tb := newE2ETab(t)
	guild, general, ada, bo := a.Demo().GuildID, a.Demo().Channels[1], a.Demo().Members[0], a.Demo().Members[1]
	// The global commands are synced: /demo lists /kudos give.
	a.WaitFor("/kudos registered", func() bool {
		for _, c := range a.Discord().Commands("") {
			if c.Name == "kudos" {
				return true
			}
		}
		return false
	})

	tb.do("sign in",
		chromedp.Navigate(a.URL()+"/login"),
		e2eVisible(`[data-testid=demo-banner]`),
		e2eFill(`#login-username`, kimitest.AdminUsername),
		e2eFill(`#login-password`, kimitest.AdminPassword),
		e2eClick(`[data-testid=login-submit]`),
		e2eVisible(`[data-testid=overview-version]`),
	)
	// Demo mode prepares the demo guild itself: Kimi is active there on
	// the first start, with nothing to set up.
	tb.do("the demo guild is active out of the box",
		chromedp.Navigate(a.URL()+"/guilds/"+guild),
		e2eVisible(`[data-testid=guild-status]`),
	)
	tb.wantText(`[data-testid=guild-status]`, "Active")

	tb.do("open /demo in #general as ada",
		chromedp.Navigate(a.URL()+"/demo?channel="+general+"&as="+ada),
		e2eVisible(`[data-testid=demo-chat]`),
		e2eVisible(`[data-testid=demo-command-kudos-give]`),
	)
	tb.do("run /kudos give",
		e2eClick(`[data-testid=demo-command-kudos-give] summary`),
		chromedp.SetValue(chromedp.CSS(`[data-testid=demo-o-kudos-give-member]`), bo),
		e2eFill(`[data-testid=demo-o-kudos-give-reason]`, "answering in #help"),
		e2eClick(`[data-testid=demo-run-kudos-give]`),
		e2eVisible(`[data-testid=demo-chat]`),
	)
	thankBack := `[data-testid^="demo-button-m:` + kudos.Name + `:` + kudos.ButtonThankBack + `:"]`
	// Waits, not reads: the live region may be re-rendered under a read.
	tb.do("Kimi's reply appears",
		e2eVisible(thankBack),
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="demo-messages"]//*[contains(., "answering in #help")]`)),
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="demo-messages"]//*[contains(., "used /kudos give")]`)),
		chromedp.WaitVisible(chromedp.Search(`//*[starts-with(@data-testid, "demo-button-m:`+kudos.Name+`:`+kudos.ButtonThankBack+`:") and contains(., "Thank back")]`)),
	)

	tb.do("switch to bo and thank back",
		chromedp.SetValue(chromedp.CSS(`[data-testid=demo-as]`), bo),
		e2eClick(`[data-testid=demo-as-switch]`),
		// bo's page, not ada's still showing: the click must be bo's.
		chromedp.WaitVisible(chromedp.Search(`//*[@data-testid="demo-post"]//*[contains(., "Post as bo")]`)),
		e2eVisible(thankBack),
		e2eClick(thankBack),
		e2eVisible(`[data-testid=demo-chat]`),
	)
	tb.do("Kimi's kudos back appears", chromedp.WaitVisible(chromedp.Search(
		`//*[@data-testid="demo-messages"]//*[contains(., "thanks for the kudos!")]`)))

	// The fake's model: both of Kimi's posts in #general, in order.
	want := []string{"Kudos to <@" + bo + ">: answering in #help", "Kudos to <@" + ada + ">: thanks for the kudos!"}
	var got []string
	for _, m := range a.Discord().Messages(general) {
		if m.Author != nil && m.Author.ID == a.Discord().BotID() {
			got = append(got, m.Content)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Kimi's posts in #general = %q, want %q", got, want)
	}
}
