package admin

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app/internal/fulldisk"
)

// TestBrowserFullDiskBannerAndKeptText saves a guild document in a real
// browser while the database is full: the answer shows the banner and the
// refusal and keeps the typed text; once there is room again the same form
// saves and the banner is gone.
func TestBrowserFullDiskBannerAndKeptText(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	tb := newTab(t)
	tb.do("sign in",
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))
	if err := fulldisk.Fill(context.Background(), h.st); err != nil {
		t.Fatal(err)
	}
	const typed = "---\nbot_active: true\n---\nTyped in the browser 7341.\n"
	tb.do("save the document on a full disk",
		chromedp.Navigate(h.ts.URL+"/guilds/42"),
		chromedp.SetValue(chromedp.CSS(`#gr-text`), typed),
		click(`[data-testid=guild-raw-submit]`), visible(`[data-testid=write-banner]`))
	tb.wantText(`[data-testid=write-banner]`, "Kimi's disk is full: writes have failed since")
	tb.wantText(`main`, "Kimi's disk is full: nothing was saved. Free space in "+h.st.DataDir())
	kept, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.querySelector('#gr-text').value`))
	if err != nil {
		t.Fatal(err)
	}
	if kept != typed {
		t.Errorf("the textarea holds %q after the refusal, want what was typed %q", kept, typed)
	}
	if err := fulldisk.Free(context.Background(), h.st); err != nil {
		t.Fatal(err)
	}
	tb.do("save again with room", click(`[data-testid=guild-raw-submit]`))
	tb.wantText(`main`, "Saved as a new revision")
	if d := h.document(guildT); d.Text != typed {
		t.Errorf("stored after the retry: %q, want %q", d.Text, typed)
	}
	banners, err := chromedp.Run(tb.ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=write-banner]').length`))
	if err != nil {
		t.Fatal(err)
	}
	if banners != 0 {
		t.Errorf("%d banners after a successful save, want 0", banners)
	}
}
