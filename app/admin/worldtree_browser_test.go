package admin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserWorldtree configures Worldtree in the settings against a fake server, follows the
// new navigation link and sees the agents, their live PAD state and the sessions.
func TestBrowserWorldtree(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	wt := newFakeWorldtree(t)
	tb := newTab(t)

	tb.do("sign in",
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
	)
	tb.do("open the Worldtree settings",
		click(`[data-testid=nav-settings]`),
		visible(`[data-testid=worldtree-form]`),
	)
	tb.do("save the Worldtree settings",
		fill(`#wt-base-url`, wt.URL),
		fill(`#wt-default-key`, wtDefaultKey),
		fill(`#wt-consumer-key`, wtConsumerKey),
		click(`[data-testid=worldtree-submit]`),
		visible(`[data-testid=worldtree-agents]`),
	)
	tb.wantText(`[data-testid=alert-success]`, "Saved. Connected as alice (scopes conversations.read, persona.read).")
	tb.wantText(`[data-testid=nav-worldtree]`, "Worldtree")
	tb.wantText(`[data-testid=worldtree-agent-name]`, "Mimir")
	tb.wantText(`[data-testid=worldtree-pad-pleasure]`, "0.52")
	tb.wantText(`[data-testid=worldtree-user]`, "alice")
	tb.wantText(`[data-testid=worldtree-session]`, "sess-one")
	tb.shootForReview("worldtree")

	tb.do("next page of sessions",
		click(`[data-testid=page-next]`),
		visible(`[data-testid=page-first]`),
	)
	tb.wantText(`[data-testid=worldtree-session]`, "sess-two")

	tb.do("back to settings through the navigation",
		click(`[data-testid=nav-settings]`),
		visible(`[data-testid=worldtree-remove]`),
	)
	tb.shootForReview("settings-worldtree")
	html := tb.html(`body`)
	for _, k := range []string{wtDefaultKey, wtConsumerKey} {
		if strings.Contains(html, k) {
			t.Error("the settings page shows a stored key")
		}
	}
	tb.do("remove the configuration",
		click(`[data-testid=worldtree-remove]`),
		visible(`[data-testid=confirm-yes]`),
	)
	tb.wantText(`[data-testid=page-title]`, "Remove the Worldtree configuration?")
	tb.do("confirm the removal",
		click(`[data-testid=confirm-yes]`),
		visible(`[data-testid=alert-success]`),
	)
	tb.wantText(`[data-testid=alert-success]`, "removed")
	if strings.Contains(tb.html(`body`), `data-testid="nav-worldtree"`) {
		t.Error("Worldtree still in the navigation after removal")
	}
}

// shootForReview writes desktop and phone screenshots of the current page into
// $KIMI_SCREENSHOTS, for a human to review; without it, it does nothing.
func (tb *tab) shootForReview(name string) {
	tb.t.Helper()
	dir := os.Getenv("KIMI_SCREENSHOTS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	for _, vp := range []struct {
		label string
		w, h  int64
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		tb.do("viewport", chromedp.EmulateViewport(vp.w, vp.h))
		ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			tb.t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+"-"+vp.label+".png"), png, 0o644); err != nil {
			tb.t.Fatal(err)
		}
	}
	tb.do("reset viewport", chromedp.EmulateViewport(1280, 900))
}

// html returns the outer HTML of the first element matching css.
func (tb *tab) html(css string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	out, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS(css)))
	if err != nil {
		tb.t.Fatalf("outer HTML of %s: %v", css, err)
	}
	return out
}

// TestBrowserWorldtreePhoneSessions opens the Worldtree page at a phone's 390x844 viewport with
// a session whose name is a sentence: the name must read as a title line, at least 60% of the
// card's width, not squeezed into a column a few characters wide. It keeps a screenshot,
// worldtree-phone.png, in $KIMI_ARTIFACTS.
func TestBrowserWorldtreePhoneSessions(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	wt := newFakeWorldtree(t)
	wt.mu.Lock()
	wt.sessionPages[""] = `{"items":[{"session_id":"sess-5f2c9a1e-7b44-4f0e-9d1a-2c3b4a5d6e7f","agent_id":"mimir",
		"created_at":"2026-05-25T22:30:18+00:00","last_active":"2026-05-26T08:00:00Z","metadata":{},
		"name":"Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor",
		"archived":true,"tags":["research","long-running","phone"]}],"next_cursor":null}`
	wt.mu.Unlock()
	tb := newTab(t)
	tb.do("sign in",
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
	)
	tb.do("save the Worldtree settings",
		chromedp.Navigate(h.ts.URL+"/settings"),
		fill(`#wt-base-url`, wt.URL),
		fill(`#wt-default-key`, wtDefaultKey),
		click(`[data-testid=worldtree-submit]`),
		visible(`[data-testid=worldtree-sessions]`),
	)
	tb.do("phone viewport",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(h.ts.URL+"/worldtree"),
		visible(`[data-testid=worldtree-session-name]`),
	)
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	ratio, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => {
		const name = document.querySelector('[data-testid=worldtree-session-name]');
		const card = document.querySelector('[data-testid=worldtree-sessions]');
		return name.getBoundingClientRect().width / card.getBoundingClientRect().width;
	})()`))
	if err != nil {
		t.Fatalf("measure the session name: %v", err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := artifactDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "worldtree-phone.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("session name width / card width = %.2f at 390x844; screenshot %s", ratio, shot)
	if ratio < 0.6 {
		t.Errorf("the session name is %.0f%% of the card's width at 390x844, want at least 60%%", 100*ratio)
	}
	tb.wantText(`[data-testid=worldtree-session-meta]`, "mimir")
}
