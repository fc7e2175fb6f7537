package proposals

import (
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestDecideRolledBackSaysRolledBack: a decision on a rolled-back proposal
// (a tab opened while it was pending, a stale card) reads "already rolled
// back", in words, as the pages say the state, never the stored
// "rolled_back".
func TestDecideRolledBackSaysRolledBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		decide func(w *world, id string) (Outcome, error)
	}{
		{"approve", func(w *world, id string) (Outcome, error) { return w.svc.Approve(w.ctx, id, web) }},
		{"reject", func(w *world, id string) (Outcome, error) { return w.svc.Reject(w.ctx, id, web, "no") }},
		{"roll back again", func(w *world, id string) (Outcome, error) { return w.svc.Rollback(w.ctx, id, web) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			p := w.proposal(w.propose("---\nmode: loud\nchannel_id: 5\n---\n").ID)
			if out, err := w.svc.Approve(w.ctx, p.ID, web); err != nil || !out.Applied {
				t.Fatalf("approve: %+v, %v", out, err)
			}
			if out, err := w.svc.Rollback(w.ctx, p.ID, web); err != nil || !out.RolledBack {
				t.Fatalf("roll back: %+v, %v", out, err)
			}
			if st := w.proposal(p.ID).State; st != sdk.ProposalRolledBack {
				t.Fatalf("state %s, want rolled_back", st)
			}
			out, err := tc.decide(w, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"approve":         "Proposal is already rolled back.",
				"reject":          "Proposal is already rolled back.",
				"roll back again": "Only an applied proposal can be rolled back; this one is rolled back.",
			}[tc.name]
			if out.Message != want {
				t.Errorf("message %q, want %q", out.Message, want)
			}
		})
	}
}
