package admin

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
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
	before := list(first)
	if again := list(first); again != before {
		t.Fatal("two requests with nothing changed rendered differently")
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
