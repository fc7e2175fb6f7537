package admin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/modules/kudos"
)

// TestProposalListKeptUntilAChange: the inbox's list is rendered once per
// filter and kept; a new proposal, a decision and a channel its summary
// mentions appearing in Discord each show on the next request.
func TestProposalListKeptUntilAChange(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	const later = "777000000000000001"
	first := h.propose(t, kudos.Name, "---\ndigest_channel_id: 123456789012345678\n---\n", "Post the digest in <#"+later+">")
	list := func(want ...string) string {
		t.Helper()
		res := c.get("/proposals")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /proposals = %d", res.StatusCode)
		}
		for _, w := range want {
			if !strings.Contains(res.body, w) {
				t.Fatalf("the inbox does not show %q:\n%.3000s", w, res.body)
			}
		}
		return res.body
	}
	// The proposer's name is fetched in the background at its first
	// lookup (a change of the directory: the next render names them).
	list(first)
	discordWait(t, "the proposer known", func() bool { _, ok := h.bot.Member(testGuild, parseUint(h.vars["staff"])); return ok })
	before := list(first, "staffer")
	if again := list(first); again != before {
		t.Fatalf("two requests with nothing changed rendered differently:\n%s\n----\n%s", before, again)
	}
	if len(h.srv.proposalLists.m) == 0 {
		t.Fatal("the inbox's render was not kept")
	}
	if strings.Contains(before, "#brand-new") {
		t.Fatal("the mentioned channel is named before it exists")
	}
	second := h.proposeIn(t, h.vars["general"], h.vars["staff"], kudos.Name, "---\ndigest_channel_id: 223456789012345678\n---\n", "Another digest channel")
	list(first, second)
	if res := c.post("/proposals/"+second+"/reject", url.Values{form.ProposalReason: {"not now"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("reject = %d %s", res.StatusCode, res.body)
	}
	if body := list(); !strings.Contains(body, `data-testid="proposal-count-rejected-n">1<`) {
		t.Fatalf("the rejection is not counted:\n%.3000s", body)
	}
	h.fake.AddChannel(fakediscord.ChannelSpec{ID: later, GuildID: "42", Name: "brand-new"})
	discordWait(t, "the bot knows #brand-new", func() bool { _, ok := h.bot.Channel(parseUint(later)); return ok })
	list("#brand-new")
}

// TestProposalPageKeptPerSession: a proposal's page is rendered once and
// kept, every session's forms carrying its own CSRF token; a change of the
// document it targets (its check now finds a conflict) and its rejection
// show on the next request.
func TestProposalPageKeptPerSession(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	a, b := h.newClient(), h.newClient()
	a.login(testUser, testPassword)
	b.login(testUser, testPassword)
	id := h.propose(t, kudos.Name, "---\ndigest_channel_id: 123456789012345678\n---\n", "Set the digest channel")
	page := func(c *client, want ...string) string {
		t.Helper()
		res := c.get("/proposals/" + id)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET = %d", res.StatusCode)
		}
		for _, w := range want {
			if !strings.Contains(res.body, w) {
				t.Fatalf("the proposal page does not show %q:\n%.3000s", w, res.body)
			}
		}
		toks := csrfRE.FindAllStringSubmatch(res.body, -1)
		if len(toks) < 2 {
			t.Fatalf("%d forms on a pending proposal's page, want approve and reject", len(toks))
		}
		for _, m := range toks {
			if m[1] != toks[0][1] {
				t.Fatalf("one page holds two CSRF tokens: %q", toks)
			}
		}
		return toks[0][1]
	}
	ta := page(a, `data-state="pending"`)
	tb := page(b, `data-state="pending"`)
	if ta == tb || page(a) != ta {
		t.Fatalf("sessions' tokens: a %q, b %q", ta, tb)
	}
	if len(h.srv.proposalDetails.m) != 1 {
		t.Fatalf("kept proposal pages = %d, want 1", len(h.srv.proposalDetails.m))
	}
	h.writeDocument(kudosT, "---\ngiver_min_tier: staff\n---\n")
	page(b, `data-testid="proposal-conflict"`)
	if res := a.post("/proposals/"+id+"/reject", url.Values{form.ProposalReason: {"not now"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("reject = %d %s", res.StatusCode, res.body)
	}
	if res := b.get("/proposals/" + id); !strings.Contains(res.body, `data-state="rejected"`) {
		t.Fatalf("the rejection is not shown:\n%.3000s", res.body)
	}
}

// failingCheck is the proposals service with its check failing while fail
// is set (a busy database, a timeout).
type failingCheck struct {
	*proposals.Service
	fail atomic.Bool
}

func (f *failingCheck) Check(ctx context.Context, id string) (proposals.CheckResult, error) {
	if f.fail.Load() {
		return proposals.CheckResult{}, errors.New("database is busy")
	}
	return f.Service.Check(ctx, id)
}

// TestProposalPageWithAFailedCheckIsNotKept: a page whose check against the
// live document failed says to reload and is not kept, so the reload after
// the check works again shows the check.
func TestProposalPageWithAFailedCheckIsNotKept(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	a := h.newClient()
	a.login(testUser, testPassword)
	fc := &failingCheck{Service: h.props}
	h.srv.opts.Proposals = fc
	id := h.propose(t, kudos.Name, "---\ndigest_channel_id: 123456789012345678\n---\n", "Set the digest channel")
	a.get("/proposals/" + id) // the proposer's name is fetched (a directory change)
	discordWait(t, "the proposer known", func() bool { _, ok := h.bot.Member(testGuild, parseUint(h.vars["staff"])); return ok })
	fc.fail.Store(true)
	for range 2 {
		if body := a.get("/proposals/" + id).body; !strings.Contains(body, "could not be checked") {
			t.Fatal("no check error shown while the check fails")
		}
	}
	fc.fail.Store(false)
	if body := a.get("/proposals/" + id).body; strings.Contains(body, "could not be checked") || !strings.Contains(body, `data-state="pending"`) {
		t.Error("the reload after the check works again still shows the check's failure")
	}
}
