package proposals

import (
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestInboxCountsFollowEveryWrite: the inbox's counts by state, its kept
// pages, each proposal's kept page data and the pending badge, read again and again between writes, always
// equal a COUNT(*) of the table after each write — a proposal, a
// rejection, an approval — so a kept count or page is never read after
// the write that changed it.
func TestInboxCountsFollowEveryWrite(t *testing.T) {
	w := newWorld(t)
	web := Decider{Source: "web", Admin: "admin"}
	check := func(step string) {
		t.Helper()
		for range 2 { // the second read is the kept one
			page, err := w.svc.List(w.ctx, Filter{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range []State{sdk.ProposalPending, sdk.ProposalApplied, sdk.ProposalRejected, sdk.ProposalRolledBack} {
				if want := w.count(`SELECT count(*) FROM kimi_proposals WHERE state = ?`, string(st)); page.Counts[st] != want {
					t.Fatalf("%s: %s counted %d, the table has %d", step, st, page.Counts[st], want)
				}
			}
			if want := w.count(`SELECT count(*) FROM kimi_proposals`); len(page.Items) != want {
				t.Fatalf("%s: the page lists %d of %d", step, len(page.Items), want)
			}
			for _, p := range page.Items {
				if got := w.proposal(p.ID).State; p.State != got {
					t.Fatalf("%s: the page shows %s as %s, the table %s", step, p.ID, p.State, got)
				}
				// A proposal's page: kept until the next write too.
				one, events, err := w.svc.Get(w.ctx, p.ID)
				if err != nil {
					t.Fatal(err)
				}
				if want := w.count(`SELECT count(*) FROM kimi_proposal_events WHERE proposal_id = ?`, p.ID); one.State != p.State || len(events) != want {
					t.Fatalf("%s: Get shows %s as %s with %d events, the table %s with %d", step, p.ID, one.State, len(events), p.State, want)
				}
			}
			pending, err := w.svc.PendingCount(w.ctx)
			if err != nil || pending != w.count(`SELECT count(*) FROM kimi_proposals WHERE state = 'pending'`) {
				t.Fatalf("%s: pending badge %d, %v", step, pending, err)
			}
		}
	}
	check("empty")
	a := w.propose("---\nmode: quiet\n---\n")
	check("one proposed")
	b := w.propose("---\nmode: loud\nchannel_id: 5\n---\n")
	check("two proposed")
	if _, err := w.svc.Reject(w.ctx, b.ID, web, "no"); err != nil {
		t.Fatal(err)
	}
	check("one rejected")
	if _, err := w.svc.Approve(w.ctx, a.ID, web); err != nil {
		t.Fatal(err)
	}
	check("one approved")
}
