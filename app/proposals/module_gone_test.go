package proposals

import (
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestApproveRefusesAModuleNoLongerLoaded: a proposal for a module's guild
// settings made while the module was loaded is not applied once it is gone;
// it stays pending with the reason and the document is untouched.
func TestApproveRefusesAModuleNoLongerLoaded(t *testing.T) {
	w := newWorld(t)
	ref := w.propose("---\nmode: loud\nchannel_id: 5\n---\n")
	target := guildcfg.GuildModuleTarget(w.guild, "alpha")
	before := w.doc(target)
	w.svc.known = func(m string) bool { return m == "beta" }
	out, err := w.svc.Approve(w.ctx, ref.ID, Decider{Source: "web", Admin: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Applied || !strings.Contains(out.Message, "unknown module 'alpha'") {
		t.Fatalf("outcome = %+v, want not applied: unknown module 'alpha'", out)
	}
	p := w.proposal(ref.ID)
	if p.State != sdk.ProposalPending || !strings.Contains(p.LastError, "unknown module") {
		t.Fatalf("proposal = %s %q, want pending with the reason", p.State, p.LastError)
	}
	if after := w.doc(target); after.Revision != before.Revision {
		t.Fatalf("the document changed: %s → %s", before.Revision, after.Revision)
	}
}
