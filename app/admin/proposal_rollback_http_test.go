package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// kudosBase is the kudos document a proposal replaces in the scenarios
// whose base exists.
const kudosBase = "---\ndigest_channel_id: 777\n---\n"

// appliedKudos proposes kudos' digest channel and applies it as another
// admin; with base, a kudos document exists first.
func appliedKudos(base bool) func(*testing.T, *harness) {
	return func(t *testing.T, h *harness) {
		t.Helper()
		proposalGuild(t, h)
		if base {
			h.writeDocument(kudosT, kudosBase)
		}
		decideFirst(true)(t, h)
	}
}

var confirmRollback = url.Values{form.FieldConfirm: {form.ConfirmYes}}

var proposalRollbackScenarios = []scenario{
	{
		name: "roll back signed out is refused", method: http.MethodPost, url: "/proposals/{id}/rollback", form: confirmRollback,
		setup: appliedKudos(false), wantStatus: http.StatusUnauthorized, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if p := proposalState(t, h); p.State != sdk.ProposalApplied {
				t.Errorf("proposal = %s, want applied", p.State)
			}
		},
	},
	{
		name: "roll back without the CSRF token changes nothing", method: http.MethodPost, url: "/proposals/{id}/rollback", form: confirmRollback,
		noCSRF: true, signedIn: true, setup: appliedKudos(false), wantStatus: http.StatusForbidden, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if p := proposalState(t, h); p.State != sdk.ProposalApplied || !h.document(kudosT).Exists {
				t.Errorf("proposal = %s, document exists %v; want applied and live", p.State, h.document(kudosT).Exists)
			}
		},
	},
	{
		name: "roll back a pending proposal is refused, nothing written", method: http.MethodPost, url: "/proposals/{id}/rollback", form: confirmRollback,
		signedIn: true, setup: func(t *testing.T, h *harness) { proposeKudos(t, h) }, wantStatus: http.StatusSeeOther, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := proposalPage(t, h, c, res)
			wantBody(t, page, "Only an applied proposal can be rolled back; this one is pending.", `data-state="pending"`)
			if p := proposalState(t, h); p.State != sdk.ProposalPending || h.document(kudosT).Exists {
				t.Errorf("proposal = %s; document written %v", p.State, h.document(kudosT).Exists)
			}
		},
	},
	{
		name: "roll back a rejected proposal is refused", method: http.MethodPost, url: "/proposals/{id}/rollback", form: confirmRollback,
		signedIn: true, setup: decideFirst(false), wantStatus: http.StatusSeeOther, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			wantBody(t, proposalPage(t, h, c, res), "Only an applied proposal can be rolled back; this one is rejected.")
		},
	},
	{
		name: "roll back an unknown id", method: http.MethodPost, url: "/proposals/0123456789abcdef0123456789abcdef/rollback", form: confirmRollback,
		signedIn: true, wantStatus: http.StatusNotFound, wantNoAudit: true,
	},
	{
		name: "an applied proposal's page offers Roll back", method: http.MethodGet, url: "/proposals/{id}",
		signedIn: true, setup: appliedKudos(false), wantStatus: http.StatusOK,
		wantContains:    []string{`data-testid="proposal-rollback"`, `action="/proposals/{id}/rollback"`},
		wantNotContains: []string{`data-testid="proposal-rollback-note"`},
	},
	{
		name: "roll back unconfirmed asks first, nothing written", method: http.MethodPost, url: "/proposals/{id}/rollback",
		signedIn: true, setup: appliedKudos(true), wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains: []string{"Roll back this proposal?", "Set the kudos digest channel", `name="` + form.FieldConfirm + `"`, "Yes, roll back"},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if p := proposalState(t, h); p.State != sdk.ProposalApplied {
				t.Errorf("proposal = %s, want applied", p.State)
			}
			if d := h.document(kudosT); !strings.Contains(d.Text, "123456789012345678") {
				t.Errorf("document = %q, want the proposal's", d.Text)
			}
		},
	},
	{
		name: "roll back confirmed restores the base, audited, the proposal rolled back", method: http.MethodPost, url: "/proposals/{id}/rollback",
		form: confirmRollback, signedIn: true, setup: appliedKudos(true), wantStatus: http.StatusSeeOther,
		wantAudit: []string{guildcfg.ActionDocumentSave, proposals.ActionRollback},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := proposalPage(t, h, c, res)
			wantBody(t, page, proposals.ReplyRolledBack, `data-state="rolled_back"`, "rolled back by <strong>"+testUser+"</strong>",
				`data-testid="proposal-event-rolled_back"`)
			if strings.Contains(page.body, `data-testid="proposal-rollback"`) {
				t.Error("a rolled-back proposal still offers Roll back")
			}
			if p := proposalState(t, h); p.State != sdk.ProposalRolledBack || p.DecidedByAdmin != testUser {
				t.Errorf("proposal = %s by %q", p.State, p.DecidedByAdmin)
			}
			if d := h.document(kudosT); d.Text != kudosBase {
				t.Errorf("document = %q, want the base %q", d.Text, kudosBase)
			}
			if got := h.auditDetail(proposals.ActionRollback); !strings.HasPrefix(got, testUser+" proposal:"+h.vars["id"]+" ") {
				t.Errorf("audit row = %q, want the admin's name and the proposal", got)
			}
			// A second roll back is refused: it is no longer applied.
			res = c.post("/proposals/"+h.vars["id"]+"/rollback", url.Values{"_csrf": {c.csrf}, form.FieldConfirm: {form.ConfirmYes}})
			wantBody(t, proposalPage(t, h, c, res), "this one is rolled back.")
			// A later change to the document is noted on the rolled-back proposal.
			h.writeDocument(kudosT, "---\ndigest_channel_id: 999\n---\n")
			wantBody(t, c.get("/proposals/"+h.vars["id"]), `data-testid="proposal-rollback-note"`, "changed again since this proposal was rolled back")
		},
	},
	{
		name: "roll back confirmed without a base deletes the document", method: http.MethodPost, url: "/proposals/{id}/rollback",
		form: confirmRollback, signedIn: true, setup: appliedKudos(false), wantStatus: http.StatusSeeOther,
		wantAudit: []string{guildcfg.ActionDocumentDelete, proposals.ActionRollback},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if d := h.document(kudosT); d.Exists {
				t.Errorf("document = %q, want none (it did not exist before)", d.Text)
			}
		},
	},
	{
		name: "roll back after the document changed since is refused, explained", method: http.MethodPost, url: "/proposals/{id}/rollback",
		form: confirmRollback, signedIn: true, wantStatus: http.StatusSeeOther, wantNoAudit: true,
		setup: func(t *testing.T, h *harness) {
			appliedKudos(true)(t, h)
			h.writeDocument(kudosT, "---\ndigest_channel_id: 555\n---\n")
		},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := proposalPage(t, h, c, res)
			wantBody(t, page, "Not rolled back: the document changed since this proposal was applied", `data-state="applied"`,
				`data-testid="proposal-rollback-note"`)
			if strings.Contains(page.body, `data-testid="proposal-rollback"`) {
				t.Error("the page still offers Roll back over a later change")
			}
			if d := h.document(kudosT); !strings.Contains(d.Text, "555") {
				t.Errorf("document = %q, want the later change kept", d.Text)
			}
		},
	},
	{
		name: "a proposal that only reorders keys shows no change", method: http.MethodGet, url: "/proposals/{id}",
		signedIn: true, wantStatus: http.StatusOK,
		setup: func(t *testing.T, h *harness) {
			proposalGuild(t, h)
			h.writeDocument(kudosT, "---\ndigest_channel_id: 777\ngiver_min_tier: regular\n---\n")
			h.propose(t, kudos.Name, "---\ngiver_min_tier: regular\ndigest_channel_id: 777\n---\n", "Reorder")
		},
		wantContains:    []string{`data-testid="proposal-no-changes"`, "only their text differs", `data-testid="proposal-diff-note"`},
		wantNotContains: []string{`data-testid="proposal-diff-split"`},
	},
}

// historyNameScenarios: the history names each revision by time, actor
// (a proposal's write links the proposal) and summary, the hash second.
var historyNameScenarios = []scenario{
	{
		name: "a proposal's write and its roll back in the history", method: http.MethodGet, url: "/guilds/42/history?module=" + kudos.Name,
		signedIn: true, wantStatus: http.StatusOK,
		setup: func(t *testing.T, h *harness) {
			appliedKudos(true)(t, h)
			if _, err := h.props.Rollback(context.Background(), h.vars["id"], proposals.Decider{Source: "web", Admin: testUser}); err != nil {
				t.Fatal(err)
			}
		},
		wantContains: []string{`<a href="/proposals/{id}" data-testid="history-actor"><strong>proposal `,
			`data-testid="history-summary">saved: changed digest_channel_id</span>`,
			`data-testid="history-summary">created the document: added digest_channel_id</span>`},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			name := strings.Index(res.body, `data-testid="history-name"`)
			hash := strings.Index(res.body, "Revision <code>")
			if name < 0 || hash < 0 || name > hash {
				t.Errorf("the first entry's name at %d, its hash at %d: want the name first", name, hash)
			}
			if n := strings.Count(res.body, "saved: changed digest_channel_id"); n != 2 {
				t.Errorf("%d entries say they changed digest_channel_id, want 2 (the apply and the roll back)", n)
			}
		},
	},
}

func TestHistoryNameScenarios(t *testing.T) { runScenarios(t, historyNameScenarios) }

func TestProposalRollbackScenarios(t *testing.T) { runScenarios(t, proposalRollbackScenarios) }

// TestProposalRollbackTwice: two roll backs of one proposal, one after the
// other through the service, write once; the second is refused.
func TestProposalRollbackTwice(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	appliedKudos(true)(t, h)
	d := proposals.Decider{Source: "web", Admin: "a"}
	first, err := h.props.Rollback(context.Background(), h.vars["id"], d)
	if err != nil || !first.RolledBack {
		t.Fatalf("first roll back = %+v, %v", first, err)
	}
	second, err := h.props.Rollback(context.Background(), h.vars["id"], d)
	if err != nil || second.RolledBack || second.Message != "Only an applied proposal can be rolled back; this one is rolled back." {
		t.Fatalf("second roll back = %+v, %v", second, err)
	}
}
