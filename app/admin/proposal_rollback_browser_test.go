package admin

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestBrowserProposalRollback: at 1280 px an applied proposal's page offers
// Roll back; the click asks first, the confirmation rolls it back (the
// flash says so, the page reads rolled back, Roll back is gone, the
// document is its base again). At 390 px a pending proposal's diff shows
// the unified view with its own caption (−/+, no left and right) and the
// split view's caption hidden.
func TestBrowserProposalRollback(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	appliedKudos(true)(t, h)
	applied := h.vars["id"]
	pending := h.propose(t, kudos.Name, "---\ndigest_channel_id: 888\n---\n", "Another digest channel")

	tb := newTab(t)
	tb.do("sign in", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(h.ts.URL+"/login"), visible(`[data-testid=login-form]`),
		fill(`#login-username`, testUser), fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`), visible(`[data-testid=overview-version]`))

	tb.do("1280: the applied proposal", chromedp.Navigate(h.ts.URL+"/proposals/"+applied), visible(`[data-testid=proposal-rollback]`))
	tb.wantText(`[data-testid=proposal-state]`, "applied")
	tb.do("1280: roll back asks first", click(`[data-testid=proposal-rollback]`), visible(`[data-testid=confirm-card]`))
	tb.wantText(`[data-testid=confirm-message]`, "Set the kudos digest channel")
	tb.do("1280: confirm", click(`[data-testid=confirm-yes]`), visible(`[data-testid=proposal-detail][data-state=rolled_back]`))
	tb.wantText(`[data-testid=alert-success]`, "Proposal rolled back")
	tb.wantText(`[data-testid=proposal-state]`, "rolled back")
	tb.wantText(`[data-testid=proposal-event-rolled_back]`, testUser)
	if n := tb.eval(`String(document.querySelectorAll('[data-testid=proposal-rollback]').length)`); n != "0" {
		t.Errorf("a rolled-back proposal shows %s Roll back buttons", n)
	}
	if p, _, err := h.props.Get(context.Background(), applied); err != nil || p.State != sdk.ProposalRolledBack {
		t.Errorf("proposal = %s (%v), want rolled back", p.State, err)
	}
	if d := h.document(kudosT); d.Text != kudosBase {
		t.Errorf("document = %q, want the base", d.Text)
	}

	shown := func(testid string) string {
		return tb.eval(`(() => { const e = document.querySelector('[data-testid=` + testid + `]'); return e && e.offsetParent !== null ? 'shown' : 'hidden' })()`)
	}
	tb.do("390: the pending proposal", chromedp.EmulateViewport(390, 844), chromedp.Navigate(h.ts.URL+"/proposals/"+pending),
		visible(`[data-testid=proposal-diff-unified]`))
	for testid, want := range map[string]string{
		"proposal-diff-unified": "shown", "proposal-diff-title-unified": "shown",
		"proposal-diff-split": "hidden", "proposal-diff-title": "hidden",
	} {
		if got := shown(testid); got != want {
			t.Errorf("390: %s is %s, want %s", testid, got, want)
		}
	}
	caption := tb.text(`[data-testid=proposal-diff-title-unified]`)
	if !strings.Contains(caption, "marked −") || strings.Contains(caption, "left") {
		t.Errorf("390: caption %q, want the unified view's markers and no sides", caption)
	}
	tb.do("1280: the same page", chromedp.EmulateViewport(1280, 900), chromedp.Reload(), visible(`[data-testid=proposal-diff-split]`))
	if got := shown("proposal-diff-title"); got != "shown" || shown("proposal-diff-title-unified") != "hidden" {
		t.Errorf("1280: the split caption is %s, the unified one %s", got, shown("proposal-diff-title-unified"))
	}
}
