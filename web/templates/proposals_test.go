package templates

import (
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
)

// xss is a payload in every text a proposal carries.
const xss = `<script>alert(1)</script><img src=x onerror=alert(2)>`

func sampleProposalsView() ProposalsView {
	return ProposalsView{State: "pending", Guild: "42", Filtered: true, Live: "/proposals/events?view=list&state=pending",
		Errors: form.Errors{form.ProposalModule: "Bad module"},
		List: ProposalListView{
			Counts: []ProposalCount{{State: "all", Label: "all", Count: 3, URL: "/proposals"}, {State: "pending", Label: "pending", Count: 1, URL: "/proposals?state=pending", Active: true}},
			Rows: []ProposalRow{{ID: strings.Repeat("a", 32), URL: "/proposals/" + strings.Repeat("a", 32), Summary: xss, State: "pending",
				StateKind: "warning", Module: "kudos", Target: "guild:42:kudos", Proposer: "<@1>", At: "2026-01-01 00:00 UTC"}},
			Filtered: true, FirstURL: "/proposals?state=pending", NextURL: "/proposals?after=x&state=pending",
		}}
}

func sampleProposalView() ProposalView {
	id := strings.Repeat("b", 32)
	return ProposalView{ID: id, Summary: xss, Live: "/proposals/events?view=detail&id=" + id, Detail: ProposalDetailView{
		ID: id, Summary: xss, State: "pending", StateKind: "warning", Pending: true, Module: "kudos", Proposer: "<@1>",
		Source: xss, Channel: "<#2>", Target: "guild:42:kudos", TargetName: "kudos settings in guild 42", TargetURL: "/guilds/42#module-kudos",
		HistoryURL: "/guilds/42/history?module=kudos", Checked: true, Problems: []string{xss}, LastError: xss,
		DiffTitle: "Live now against proposed", DiffOld: "Live now", DiffNew: "Proposed",
		Split:   []SplitRow{{Header: "@@ -1,1 +1,1 @@"}, {OldNo: "1", NewNo: "1", Old: "a: 1", New: xss, OldOp: "del", NewOp: "add", OldMarker: "-", NewMarker: "+"}},
		Unified: []DiffHunk{{Header: "@@ -1,1 +1,1 @@", Lines: []DiffLine{{Op: "del", Marker: "-", Text: "a: 1"}, {Op: "add", Marker: "+", Text: xss}}}},
		Events:  []ProposalEventView{{Kind: "created", Label: "proposed", Actor: "<@1>", Source: "discord", Detail: xss, BadgeKind: "neutral"}},
		Reason:  xss, Errors: form.Errors{form.ProposalReason: "Say why"},
	}}
}

// TestProposalPagesRenderTextAsText: a payload in the summary, content,
// source, problems, last error, history and the reason typed renders as
// text on the inbox and the proposal page — no element, no attribute.
func TestProposalPagesRenderTextAsText(t *testing.T) {
	for name, page := range map[string]string{
		"inbox":    render(t, ProposalsPage(sampleChrome("admin"), sampleProposalsView())),
		"proposal": render(t, ProposalPage(sampleChrome("admin"), sampleProposalView())),
	} {
		if strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x") {
			t.Errorf("%s: the payload is live markup", name)
		}
		if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the payload is not shown as text", name)
		}
	}
}

// TestProposalDiffBothLayouts: the page carries the side-by-side and the
// unified diff (CSS shows one by width), and both hold the changed lines.
func TestProposalDiffBothLayouts(t *testing.T) {
	page := render(t, ProposalPage(sampleChrome("admin"), sampleProposalView()))
	for _, want := range []string{`data-testid="proposal-diff-split"`, `data-testid="proposal-diff-unified"`,
		`class="diff-side diff-del"`, `class="diff-side diff-add"`, `class="diff-line diff-add"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if n := strings.Count(page, "&lt;img src=x"); n < 2 {
		t.Errorf("the added line shows %d times, want in both layouts", n)
	}
}

// TestNavPendingBadge: the pre-rendered navigation carries the pending
// count exactly as a fresh render does, for every section; none shows for
// zero, and the mark is never left in the page.
func TestNavPendingBadge(t *testing.T) {
	for _, pending := range []int{0, 1, 12} {
		for _, active := range []string{"", "overview", "proposals", "settings"} {
			c := sampleChrome("admin")
			c.Active, c.Pending = active, pending
			pre, fresh := render(t, navMarkup(c)), render(t, navList(c.Active, shownOptional(c.ShowOptional), c.Pending))
			if pre != fresh {
				t.Fatalf("pending %d, %q: pre-rendered nav differs:\n%s\n%s", pending, active, pre, fresh)
			}
			if strings.Contains(pre, navPendingMark) {
				t.Fatalf("the mark is left in the nav")
			}
			has := strings.Contains(pre, `data-testid="nav-pending"`)
			if has != (pending > 0) {
				t.Fatalf("pending %d: badge shown %v", pending, has)
			}
			if pending > 0 {
				i := strings.Index(pre, `data-testid="nav-proposals"`)
				j := strings.Index(pre, `data-testid="nav-pending"`)
				k := strings.Index(pre[i:], "</a>")
				if i < 0 || j < i || j > i+k {
					t.Fatalf("the badge is not inside the Proposals entry:\n%s", pre)
				}
				if !strings.Contains(pre[j:], ">"+itoa(pending)+"<") {
					t.Fatalf("the badge does not show %d", pending)
				}
			}
		}
	}
}

// TestProposalNotifyNeverRendersWebhookURL: a stored webhook shows as set,
// with its host only.
func TestProposalNotifyNeverRendersWebhookURL(t *testing.T) {
	out := render(t, SettingsPage(sampleChrome("admin"), SettingsView{Username: "admin",
		Proposals: ProposalNotifySettingsView{Available: true, Mode: "webhook", WebhookSet: true, WebhookHost: "hooks.example.org"}}))
	if !strings.Contains(out, "A webhook URL is set (hooks.example.org)") {
		t.Error("the stored webhook is not reported as set")
	}
	if strings.Contains(out, `name="proposal_webhook_url" value=`) {
		t.Error("the webhook field has a value")
	}
}
