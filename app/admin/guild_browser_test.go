package admin

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/kudos"
)

// TestBrowserGuildJourney walks the operator's guild set-up at desktop and
// phone widths: add a guild by id, switch the bot on and add a staff role,
// edit a module's settings through the form generated from its schema
// (twice), read the change in the history's diff, and revert to the first
// version. At phone width it saves the guild page as guild-phone.png.
func TestBrowserGuildJourney(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	tb := newTab(t)
	tb.do("sign in", chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))
	for i, vp := range []struct {
		label string
		w, h  int64
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		id := uint64(4200 + i)
		ids := strconv.FormatUint(id, 10)
		mod := "#module-" + kudos.Name
		tier := mod + ` [data-testid="field-` + form.ModuleSettingName(kudos.FieldGiverMinTier) + `"]`
		tb.do(vp.label, chromedp.EmulateViewport(vp.w, vp.h))
		tb.do(vp.label+": add the guild", chromedp.Navigate(h.ts.URL+"/guilds"), visible(`[data-testid=guild-add-form]`),
			fill(`#guild-add-id`, ids), clearAlerts(), click(`[data-testid=guild-add-submit]`), visible(`[data-testid=guild-setup-form]`))
		tb.wantText(`[data-testid=alert-success]`, "Guild added")
		tb.wantText(`[data-testid=guild-status]`, "Inactive")

		tb.do(vp.label+": switch on, add a staff role", clearAlerts(), click(`label[for=gs-active]`), fill(`#gs-staff-roles`, "111222333"),
			click(`[data-testid=guild-setup-submit]`), visible(`[data-testid=alert-success]`))
		tb.wantText(`[data-testid=guild-status]`, "Active")
		if !h.guilds.Active(id) {
			t.Fatalf("%s: guild %d is not active after the save", vp.label, id)
		}
		if d := h.document(guildcfg.GuildTarget(id)); d.Guild == nil || len(d.Guild.StaffRoleIDs) != 1 || d.Guild.StaffRoleIDs[0] != 111222333 {
			t.Fatalf("%s: stored server setup %q", vp.label, d.Text)
		}

		tb.do(vp.label+": module settings", clearAlerts(), chromedp.SetValue(chromedp.CSS(tier), "regular"),
			fill("#ms-"+kudos.Name+"-"+kudos.FieldDigestChannel, "777"),
			click(`[data-testid=module-submit-`+kudos.Name+`]`), visible(`[data-testid=alert-success]`))
		first := h.document(guildcfg.GuildModuleTarget(id, kudos.Name)).Text
		if !strings.Contains(first, "digest_channel_id: 777") || !strings.Contains(first, `"regular"`) {
			t.Fatalf("%s: stored kudos settings %q", vp.label, first)
		}
		tb.do(vp.label+": refused by the module's rule", clearAlerts(), chromedp.SetValue(chromedp.CSS(tier), "staff"),
			click(`[data-testid=module-submit-`+kudos.Name+`]`), visible(mod+` [data-testid=alert-error]`))
		tb.wantText(mod+` [data-testid=alert-error]`, kudos.ErrStaffOnlyDigest)
		tb.do(vp.label+": corrected", clearAlerts(), chromedp.SetValue(chromedp.CSS("#ms-"+kudos.Name+"-"+kudos.FieldDigestChannel+"-choose"), ""),
			click(`[data-testid=module-submit-`+kudos.Name+`]`), visible(`[data-testid=alert-success]`))
		if vp.label == "phone" {
			tb.do("top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
			savePNG(tb, filepath.Join(artifactDir(), "guild-phone.png"))
		}

		tb.do(vp.label+": history", click(`[data-testid=module-history-`+kudos.Name+`]`), visible(`[data-testid=history-list]`))
		diff := tb.text(`[data-testid=history-list] li:first-child [data-testid=history-diff]`)
		for _, want := range []string{"-digest_channel_id: 777", `+giver_min_tier: "staff"`, `-giver_min_tier: "regular"`} {
			if !strings.Contains(diff, want) {
				t.Errorf("%s: the newest diff lacks %q:\n%s", vp.label, want, diff)
			}
		}
		tb.do(vp.label+": revert to the first version", clearAlerts(), click(`[data-testid=history-list] li:nth-child(2) button[data-testid^=revert-]`),
			visible(`[data-testid=alert-success]`))
		tb.wantText(`[data-testid=alert-success]`, "Reverted")
		if got := h.document(guildcfg.GuildModuleTarget(id, kudos.Name)).Text; got != first {
			t.Errorf("%s: after the revert the settings are %q, want %q", vp.label, got, first)
		}
	}
}

// clearAlerts removes the page's notices, so waiting for one after a click
// sees the next page's, never the current one's.
func clearAlerts() chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('.alert').forEach(e => e.remove())`)
}

// savePNG writes a full-page screenshot of the current page to p.
func savePNG(tb *tab, p string) {
	tb.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", p)
}
