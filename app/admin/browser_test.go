package admin

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/auth"
	"github.com/kimiapp/kimi/app/internal/browsertest"
	"github.com/kimiapp/kimi/app/store"
)

// One browser for the whole package (2 cores): started lazily by the first
// browser test, each test opens its own tab, TestMain closes it.
var browser browsertest.Browser

func TestMain(m *testing.M) {
	code := m.Run()
	browser.Close()
	os.Exit(code)
}

// requireBrowser returns the shared browser context, skipping loudly when
// chromium is missing locally and failing under CI=true.
func requireBrowser(t *testing.T) context.Context { t.Helper(); return browser.Require(t) }

// tab is one browser tab bound to a test: console errors fail the test and a
// full-page screenshot is kept when the test fails.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

func newTab(t *testing.T) *tab {
	t.Helper()
	parent := requireBrowser(t)
	ctx, cancel := chromedp.NewContext(parent)
	tb := &tab{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if (m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException) && !expectedPageStatus(m) {
				tb.mu.Lock()
				tb.problems = append(tb.problems, m.String()+" ("+m.URL+")")
				tb.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			tb.screenshot("failure")
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

// expectedPageStatus reports a network-log entry for a page whose 4xx status
// is deliberate (401 after a failed sign-in, 422 on form errors). Failed
// subresources — CSS, icons — still fail the test, as do CSP violations and
// script errors.
func expectedPageStatus(m chromedp.ConsoleMessage) bool {
	return m.Source == "network" && strings.HasPrefix(m.Text, "Failed to load resource") &&
		!strings.Contains(m.URL, "/static/")
}

// artifactDir is $KIMI_ARTIFACTS, or a directory under the system temp dir
// that outlives the test.
func artifactDir() string {
	if d := os.Getenv("KIMI_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "kimi-artifacts")
}

func (tb *tab) screenshot(label string) {
	ctx, cancel := context.WithTimeout(tb.ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Logf("screenshot failed: %v", err)
		return
	}
	dir := artifactDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Logf("screenshot dir: %v", err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(tb.t.Name()) + "-" + label + "-" +
		time.Now().UTC().Format("20060102T150405") + ".png"
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.t.Logf("screenshot write: %v", err)
		return
	}
	tb.t.Logf("screenshot kept: %s", p)
}

// do runs steps with a timeout, failing the test with the step name.
func (tb *tab) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %v", step, err)
	}
}

// text returns the visible text of the first element matching css.
func (tb *tab) text(css string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		tb.t.Fatalf("text of %s: %v", css, err)
	}
	return strings.TrimSpace(s)
}

// wantText waits (up to 20 s) until the first element matching css shows
// want: a wait, not a single read (browsertest.WaitText).
func (tb *tab) wantText(css, want string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	if got, err := browsertest.WaitText(ctx, css, want); err != nil {
		tb.t.Fatalf("%s text = %q, want it to contain %q (%v)", css, got, want, err)
	}
}

// viewports are the screen sizes the layout is checked and shown at.
var viewports = []struct {
	label string
	w, h  int64
}{{"desktop", 1280, 900}, {"tablet", 768, 1024}, {"phone", 390, 844}}

// colorScheme emulates prefers-color-scheme: "light" or "dark".
func colorScheme(theme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			// Reduced motion turns off the colour transitions, so a style read
			// right after the switch sees the new theme, not a frame between.
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}, {Name: "prefers-reduced-motion", Value: "reduce"}},
		})
		return err
	})
}

func fill(css, value string) chromedp.Action[chromedp.Void] {
	return chromedp.SendKeys(chromedp.CSS(css), value)
}

// click clicks css, querying again if a live update replaced the node
// between the query and the click.
func click(css string) chromedp.Action[chromedp.Void] {
	return browsertest.Click(chromedp.CSS(css))
}

func visible(css string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(css))
}

// TestBrowserFirstRunJourney walks the operator's first minutes: set-up from
// the logged token, overview, sign out, sign in, change the password, and
// sign in with the new one.
func TestBrowserFirstRunJourney(t *testing.T) {
	h := newHarness(t)
	tb := newTab(t)
	token, _, err := h.auth.NewSetupToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	tb.do("open set-up link",
		chromedp.Navigate(h.ts.URL+"/setup?token="+token),
		visible(`[data-testid=setup-form]`),
	)
	tb.wantText(`h1`, "Create the admin account")
	tb.do("submit set-up",
		fill(`#setup-username`, testUser),
		fill(`#setup-password`, testPassword),
		fill(`#setup-confirm`, testPassword),
		click(`[data-testid=setup-submit]`),
		visible(`[data-testid=overview-version]`),
	)
	tb.wantText(`[data-testid=page-title]`, "Overview")
	tb.wantText(`[data-testid=alert-success]`, "Welcome")
	tb.wantText(`[data-testid=overview-version]`, "v0.0.0-test")
	tb.wantText(`[data-testid=overview-discord]`, "not configured")
	tb.wantText(`[data-testid=current-user]`, testUser)

	tb.do("sign out",
		click(`[data-testid=logout]`),
		visible(`[data-testid=login-form]`),
	)
	tb.wantText(`[data-testid=alert-success]`, "signed out")

	tb.do("sign in",
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
	)

	const newPassword = "a much better passphrase"
	tb.do("open settings",
		click(`[data-testid=nav-settings]`),
		visible(`[data-testid=password-form]`),
	)
	tb.wantText(`[data-testid=page-title]`, "Settings")
	tb.do("change password",
		fill(`#pw-current`, testPassword),
		fill(`#pw-new`, newPassword),
		fill(`#pw-confirm`, newPassword),
		click(`[data-testid=password-submit]`),
		visible(`[data-testid=alert-success]`),
	)
	tb.wantText(`[data-testid=alert-success]`, "Password changed")

	tb.do("sign out again",
		click(`[data-testid=logout]`),
		visible(`[data-testid=login-form]`),
	)
	tb.do("old password is refused",
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=alert-error]`),
	)
	tb.wantText(`[data-testid=alert-error]`, "Invalid username or password")
	tb.do("sign in with the new password",
		fill(`#login-password`, newPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
	)
	tb.do("audit log lists the journey",
		click(`[data-testid=nav-audit]`),
		visible(`[data-testid=audit-table]`),
	)
	audit := tb.text(`[data-testid=audit-table]`)
	table := tb.html(`[data-testid=audit-table]`)
	for _, action := range []string{auth.ActionSetup, auth.ActionLogout, auth.ActionLogin, auth.ActionPasswordChange, auth.ActionLoginFailed} {
		label := auditAction(action).Label
		if label == action || !strings.Contains(audit, label) {
			t.Errorf("audit page lacks %s's label %q", action, label)
		}
		if !strings.Contains(table, `title="`+action+`" data-action="`+action+`"`) {
			t.Errorf("audit page lacks the raw id %s behind its label", action)
		}
	}
	if !strings.Contains(audit, "Someone (tried “"+testUser+"”)") {
		t.Errorf("the failed sign-in is not shown as an attempt:\n%s", audit)
	}
}

// TestBrowserConfirmSignOutOtherSessions: "Sign out other sessions" asks
// first on a plain HTML page (no script needed); Cancel goes back with the
// other session intact, and only "Yes, …" signs it out.
func TestBrowserConfirmSignOutOtherSessions(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	other := h.newClient()
	other.login(testUser, testPassword)
	tb := newTab(t)
	tb.do("sign in",
		chromedp.Navigate(h.ts.URL+"/login"),
		visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
	)
	tb.do("open settings",
		chromedp.Navigate(h.ts.URL+"/settings"),
		visible(`[data-testid=revoke-sessions]`),
	)
	tb.do("ask to sign out the others",
		click(`[data-testid=revoke-sessions]`),
		visible(`[data-testid=confirm-card]`),
	)
	tb.wantText(`[data-testid=page-title]`, "Sign out other sessions?")
	tb.wantText(`[data-testid=confirm-message]`, "must sign in again")
	tb.wantText(`[data-testid=confirm-yes]`, "Yes, sign out other sessions")
	wantStatus(t, other.get("/"), http.StatusOK)
	tb.do("cancel",
		click(`[data-testid=confirm-cancel]`),
		visible(`[data-testid=revoke-sessions]`),
	)
	wantStatus(t, other.get("/"), http.StatusOK)
	if n := h.auditCount(auth.ActionSessionsRevoke); n != 0 {
		t.Fatalf("revoke audited before confirmation: %d rows", n)
	}
	tb.do("ask again and confirm",
		click(`[data-testid=revoke-sessions]`),
		visible(`[data-testid=confirm-yes]`),
		click(`[data-testid=confirm-yes]`),
		visible(`[data-testid=alert-success]`),
	)
	tb.wantText(`[data-testid=alert-success]`, "All other sessions were signed out")
	tb.wantText(`[data-testid=page-title]`, "Settings")
	wantStatus(t, other.get("/"), http.StatusSeeOther)
	if n := h.auditCount(auth.ActionSessionsRevoke); n != 1 {
		t.Errorf("revoke audit rows = %d, want 1", n)
	}
}

// TestBrowserCatchesCSPViolations proves the console check works and the
// CSP blocks inline script: a page with an inline script must produce a
// console error (which this test then consumes instead of failing on it).
func TestBrowserCatchesCSPViolations(t *testing.T) {
	h := newHarness(t)
	h.srv.echo.GET("/test-inline-script", func(c echo.Context) error {
		return c.HTML(http.StatusOK, `<!DOCTYPE html><title>x</title><p id="p">static</p><script>document.getElementById("p").textContent="ran"</script>`)
	})
	tb := newTab(t)
	tb.do("open page with inline script",
		chromedp.Navigate(h.ts.URL+"/test-inline-script"),
		visible(`#p`),
	)
	if got := tb.text(`#p`); got != "static" {
		t.Errorf("inline script ran despite the CSP: %q", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		tb.mu.Lock()
		found := false
		for _, p := range tb.problems {
			found = found || strings.Contains(p, "Content Security Policy")
		}
		if found {
			tb.problems = nil
		}
		tb.mu.Unlock()
		if found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no CSP violation reported on the console")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowserScreenshots renders every page at desktop and phone widths for
// a human to review. It runs only when KIMI_SCREENSHOTS names a directory.
func TestBrowserScreenshots(t *testing.T) {
	dir := os.Getenv("KIMI_SCREENSHOTS")
	if dir == "" {
		t.Skip("set KIMI_SCREENSHOTS=<dir> to write page screenshots")
	}
	h := newHarness(t)
	tb := newTab(t)
	token, _, err := h.auth.NewSetupToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shoot := func(name string) {
		for _, vp := range viewports {
			tb.do("viewport", chromedp.EmulateViewport(vp.w, vp.h))
			ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			cancel()
			if err != nil {
				t.Fatalf("screenshot %s: %v", name, err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+"-"+vp.label+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		tb.do("reset viewport", chromedp.EmulateViewport(1280, 900))
	}
	dark := func(on bool) chromedp.Action[chromedp.Void] {
		if on {
			return colorScheme("dark")
		}
		return colorScheme("light")
	}
	tb.do("setup missing", chromedp.Navigate(h.ts.URL+"/setup"), visible(`[data-testid=setup-blocked]`))
	shoot("setup-missing")
	tb.do("setup", chromedp.Navigate(h.ts.URL+"/setup?token="+token), visible(`[data-testid=setup-form]`))
	tb.do("setup errors", fill(`#setup-username`, "bad name"), fill(`#setup-password`, "short12"),
		fill(`#setup-confirm`, "short12"), chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('input').forEach(i=>{i.removeAttribute('minlength');i.removeAttribute('required')})`),
		click(`[data-testid=setup-submit]`), visible(`[data-testid=error-username]`))
	shoot("setup-errors")
	tb.do("setup ok", chromedp.Navigate(h.ts.URL+"/setup?token="+token), visible(`[data-testid=setup-form]`),
		fill(`#setup-username`, testUser), fill(`#setup-password`, testPassword), fill(`#setup-confirm`, testPassword),
		click(`[data-testid=setup-submit]`), visible(`[data-testid=overview-version]`))
	shoot("overview")
	tb.do("dark", dark(true))
	shoot("overview-dark")
	tb.do("light", dark(false))
	for i, a := range []string{"proposal.approve", "module.enable", "auth.login_failed", "settings.update"} {
		if err := h.st.Audit(context.Background(), store.AuditEntry{At: time.Now(), Actor: testUser, Action: a,
			Target: fmt.Sprintf("guild 1234567890/%d", i), Detail: "changed welcome channel from #general to #welcome", IP: "203.0.113.7"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"modules", "audit", "settings", "discord"} {
		tb.do(p, chromedp.Navigate(h.ts.URL+"/"+p), visible(`[data-testid=page-title]`))
		shoot(p)
	}
	tb.do("404", chromedp.Navigate(h.ts.URL+"/nope"), visible(`[data-testid=error-page]`))
	shoot("not-found")
	tb.do("logout", chromedp.Navigate(h.ts.URL+"/settings"), visible(`[data-testid=logout]`), click(`[data-testid=logout]`),
		visible(`[data-testid=login-form]`))
	tb.do("login error", fill(`#login-username`, testUser), fill(`#login-password`, "wrong password"),
		click(`[data-testid=login-submit]`), visible(`[data-testid=alert-error]`))
	shoot("login-error")
	tb.do("dark", dark(true))
	shoot("login-error-dark")
}
