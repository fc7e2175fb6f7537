package admin

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// proposalGuild puts testGuild (42) in the harness's fake with a #general
// channel and a staff member, stores its server setup, connects the bot and
// names them {general} and {staff}: proposals can then be made (their cards
// posted in #general).
func proposalGuild(t *testing.T, h *harness) {
	t.Helper()
	if h.vars["general"] != "" {
		return
	}
	g := h.fake.AddGuild(fakediscord.GuildSpec{ID: strconv.Itoa(testGuild), Name: "Proposals guild"})
	h.vars["general"] = h.fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "general"}).ID
	staff := h.fake.AddUser(discordgo.User{Username: "staffer"})
	h.fake.AddMember(g.ID, staff.ID)
	h.vars["staff"] = staff.ID
	h.writeDocument(guildT, fmt.Sprintf("---\nbot_active: true\nstaff_user_ids: [%s]\n---\n", staff.ID))
	startBot(withToken(""))(t, h)
	discordWait(t, "the bot connected in the proposals' guild", func() bool {
		st := h.bot.Status()
		return st.State == discord.StateConnected && len(st.Guilds) == 1
	})
}

// propose proposes content for module's settings of testGuild as module
// (its card posted in #general) and returns the proposal's id, also {id}.
func (h *harness) propose(t *testing.T, module, content, summary string) string {
	t.Helper()
	proposalGuild(t, h)
	return h.proposeIn(t, h.vars["general"], h.vars["staff"], module, content, summary)
}

// proposeIn proposes content for module's settings of testGuild from a
// request in channel by user (both in the fake, the bot connected).
func (h *harness) proposeIn(t *testing.T, channel, user, module, content, summary string) string {
	t.Helper()
	ch, _ := strconv.ParseUint(channel, 10, 64)
	uid, _ := strconv.ParseUint(user, 10, 64)
	ref, err := h.props.Port(module).Propose(context.Background(), sdk.Proposal{
		Target: sdk.GuildModuleTarget(testGuild, module), Content: content, Summary: summary,
		Actor: sdk.ProposalActor{UserID: uid, Source: module + ":setup", GuildID: testGuild, ChannelID: ch},
	})
	if err != nil {
		t.Fatalf("Propose: %v", err)
	}
	h.vars["id"] = ref.ID
	return ref.ID
}

// proposeKudos proposes kudos' digest channel (a valid document).
func proposeKudos(t *testing.T, h *harness) {
	t.Helper()
	h.propose(t, kudos.Name, "---\ndigest_channel_id: 123456789012345678\n---\n", "Set the kudos digest channel")
}

// decide decides {id} through the service as another admin (the page's
// "already decided" case).
func decideFirst(approve bool) func(*testing.T, *harness) {
	return func(t *testing.T, h *harness) {
		t.Helper()
		proposeKudos(t, h)
		d := proposals.Decider{Source: "web", Admin: "other-admin"}
		var err error
		if approve {
			_, err = h.props.Approve(context.Background(), h.vars["id"], d)
		} else {
			_, err = h.props.Reject(context.Background(), h.vars["id"], d, "not now")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// proposalPage follows the decision's redirect and returns the page.
func proposalPage(t *testing.T, h *harness, c *client, res *response) *response {
	t.Helper()
	if loc := res.Header.Get("Location"); loc != "/proposals/"+h.vars["id"] {
		t.Fatalf("Location = %q, want the proposal's page", loc)
	}
	return c.get(res.Header.Get("Location"))
}

func proposalState(t *testing.T, h *harness) proposals.Proposal {
	t.Helper()
	p, _, err := h.props.Get(context.Background(), h.vars["id"])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var proposalScenarios = []scenario{
	{
		name: "approve applies the proposal, audited with the admin's name", method: http.MethodPost, url: "/proposals/{id}/approve",
		signedIn: true, setup: func(t *testing.T, h *harness) { proposeKudos(t, h) },
		wantStatus: http.StatusSeeOther, wantAudit: []string{guildcfg.ActionDocumentSave, proposals.ActionApprove},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := proposalPage(t, h, c, res)
			wantBody(t, page, `data-state="applied"`, proposals.ReplyApplied)
			if p := proposalState(t, h); p.State != sdk.ProposalApplied || p.DecidedByAdmin != testUser {
				t.Errorf("proposal = %s by %q", p.State, p.DecidedByAdmin)
			}
			if d := h.document(kudosT); !strings.Contains(d.Text, "digest_channel_id: 123456789012345678") {
				t.Errorf("kudos document = %q", d.Text)
			}
			if got := h.auditDetail(proposals.ActionApprove); !strings.HasPrefix(got, testUser+" ") {
				t.Errorf("audit row = %q, want the admin's name", got)
			}
		},
	},
	{
		name: "reject with a reason, audited", method: http.MethodPost, url: "/proposals/{id}/reject",
		form: url.Values{form.ProposalReason: {"Use #kudos instead"}}, signedIn: true, setup: func(t *testing.T, h *harness) { proposeKudos(t, h) },
		wantStatus: http.StatusSeeOther, wantAudit: []string{proposals.ActionReject},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := proposalPage(t, h, c, res)
			wantBody(t, page, `data-state="rejected"`, proposals.ReplyRejected, "Use #kudos instead")
			if p := proposalState(t, h); p.State != sdk.ProposalRejected || p.DecisionReason != "Use #kudos instead" {
				t.Errorf("proposal = %s (%q)", p.State, p.DecisionReason)
			}
			if d := h.document(kudosT); d.Exists {
				t.Errorf("a rejection wrote the document: %q", d.Text)
			}
		},
	},
	{
		name: "reject without a reason is refused, nothing decided", method: http.MethodPost, url: "/proposals/{id}/reject",
		form: url.Values{form.ProposalReason: {"   "}}, signedIn: true, setup: func(t *testing.T, h *harness) { proposeKudos(t, h) },
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true, wantContains: []string{form.MsgProposalReason},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if p := proposalState(t, h); p.State != sdk.ProposalPending {
				t.Errorf("proposal = %s, want pending", p.State)
			}
		},
	},
	{
		name: "reject with too long a reason keeps the text", method: http.MethodPost, url: "/proposals/{id}/reject",
		form: url.Values{form.ProposalReason: {strings.Repeat("x", 501)}}, signedIn: true, setup: func(t *testing.T, h *harness) { proposeKudos(t, h) },
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true, wantContains: []string{form.MsgProposalReason, strings.Repeat("x", 501)},
	},
	{
		name: "approve without the CSRF token", method: http.MethodPost, url: "/proposals/{id}/approve", noCSRF: true,
		signedIn: true, setup: func(t *testing.T, h *harness) { proposeKudos(t, h) },
		wantStatus: http.StatusForbidden, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if p := proposalState(t, h); p.State != sdk.ProposalPending {
				t.Errorf("proposal = %s, want pending", p.State)
			}
		},
	},
	{
		name: "reject without the CSRF token", method: http.MethodPost, url: "/proposals/{id}/reject", noCSRF: true,
		form: url.Values{form.ProposalReason: {"no"}}, signedIn: true, setup: func(t *testing.T, h *harness) { proposeKudos(t, h) },
		wantStatus: http.StatusForbidden, wantNoAudit: true,
	},
	{
		name: "approve an unknown id", method: http.MethodPost, url: "/proposals/0123456789abcdef0123456789abcdef/approve",
		signedIn: true, wantStatus: http.StatusNotFound, wantNoAudit: true,
	},
	{
		name: "reject an unknown id", method: http.MethodPost, url: "/proposals/0123456789abcdef0123456789abcdef/reject",
		form: url.Values{form.ProposalReason: {"no"}}, signedIn: true, wantStatus: http.StatusNotFound, wantNoAudit: true,
	},
	{
		name: "approve a non-hex id", method: http.MethodPost, url: "/proposals/0123456789ABCDEF0123456789abcdeg/approve",
		signedIn: true, wantStatus: http.StatusNotFound, wantNoAudit: true,
	},
	{
		name: "a non-hex id's page", method: http.MethodGet, url: "/proposals/1", signedIn: true, wantStatus: http.StatusNotFound,
	},
	{
		name: "an unknown id's page", method: http.MethodGet, url: "/proposals/0123456789abcdef0123456789abcdef", signedIn: true, wantStatus: http.StatusNotFound,
	},
	{
		name: "approve what another admin rejected: already rejected, nothing written", method: http.MethodPost, url: "/proposals/{id}/approve",
		signedIn: true, setup: decideFirst(false),
		wantStatus: http.StatusSeeOther, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := proposalPage(t, h, c, res)
			wantBody(t, page, "Proposal is already rejected.", `data-state="rejected"`)
			if d := h.document(kudosT); d.Exists {
				t.Errorf("the document was written: %q", d.Text)
			}
		},
	},
	{
		name: "reject what another admin approved: already applied", method: http.MethodPost, url: "/proposals/{id}/reject",
		form: url.Values{form.ProposalReason: {"too late"}}, signedIn: true, setup: decideFirst(true),
		wantStatus: http.StatusSeeOther, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := proposalPage(t, h, c, res)
			wantBody(t, page, "Proposal is already applied.", `data-state="applied"`)
		},
	},
	{
		name: "save a webhook: stored, shown only by its host", method: http.MethodPost, url: "/settings/proposals",
		form:     url.Values{form.ProposalNotifyMode: {form.ProposalNotifyWebhook}, form.ProposalNotifyWebhookURL: {"https://hooks.example.org/t/secret-token-123"}},
		signedIn: true, wantStatus: http.StatusSeeOther, wantLocation: "/settings#proposal-notifications",
		wantAudit: []string{settings.AuditActionProposalNotifications},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			n, err := settings.LoadProposalNotifications(context.Background(), h.st)
			if err != nil || n.Mode != settings.NotifyWebhook || n.WebhookURL != "https://hooks.example.org/t/secret-token-123" {
				t.Fatalf("stored = %v, %v", n, err)
			}
			page := c.get("/settings")
			wantBody(t, page, "hooks.example.org", "leave blank to keep it")
			if strings.Contains(page.body, "secret-token-123") {
				t.Error("the settings page shows the webhook URL's token")
			}
			// A blank field keeps the stored URL.
			res = c.post("/settings/proposals", url.Values{"_csrf": {c.csrf}, form.ProposalNotifyMode: {form.ProposalNotifyDM}})
			wantStatus(t, res, http.StatusSeeOther)
			if n, _ := settings.LoadProposalNotifications(context.Background(), h.st); n.Mode != settings.NotifyDM || n.WebhookURL == "" {
				t.Errorf("after a blank save = %v", n)
			}
		},
	},
	{
		name: "a webhook on a private address is refused by the settings, on its field", method: http.MethodPost, url: "/settings/proposals",
		form:     url.Values{form.ProposalNotifyMode: {form.ProposalNotifyWebhook}, form.ProposalNotifyWebhookURL: {"https://10.0.0.7/hook-secret-path"}},
		signedIn: true, wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains:    []string{"The webhook must be on a public address", `data-testid="error-` + form.ProposalNotifyWebhookURL + `"`, form.MsgProposalNotifyNotSaved},
		wantNotContains: []string{"hook-secret-path"},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if n, _ := settings.LoadProposalNotifications(context.Background(), h.st); n.Mode != settings.NotifyOff || n.WebhookURL != "" {
				t.Errorf("stored = %v", n)
			}
		},
	},
	{
		name: "a webhook mode without a URL", method: http.MethodPost, url: "/settings/proposals",
		form:     url.Values{form.ProposalNotifyMode: {form.ProposalNotifyWebhook}},
		signedIn: true, wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{"no webhook URL is stored yet", `data-testid="error-` + form.ProposalNotifyWebhookURL + `"`},
	},
	{
		name: "an http webhook", method: http.MethodPost, url: "/settings/proposals",
		form:     url.Values{form.ProposalNotifyMode: {form.ProposalNotifyWebhook}, form.ProposalNotifyWebhookURL: {"http://hooks.example.org/x-secret"}},
		signedIn: true, wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{"an absolute https:// URL", `data-testid="error-` + form.ProposalNotifyWebhookURL + `"`}, wantNotContains: []string{"x-secret"},
	},
	{
		name: "notifications without the CSRF token", method: http.MethodPost, url: "/settings/proposals", noCSRF: true,
		form:     url.Values{form.ProposalNotifyMode: {form.ProposalNotifyDM}},
		signedIn: true, wantStatus: http.StatusForbidden, wantNoAudit: true,
	},
}

func TestProposalScenarios(t *testing.T) { runScenarios(t, proposalScenarios) }

// auditDetail is the newest audit row of action as "actor target detail".
func (h *harness) auditDetail(action string) string {
	h.t.Helper()
	var s string
	if err := h.st.Reader().QueryRow(`SELECT actor || ' ' || target || ' ' || detail FROM kimi_audit_log WHERE action = ? ORDER BY id DESC LIMIT 1`, action).Scan(&s); err != nil {
		h.t.Fatal(err)
	}
	return s
}

// TestProposalNotifyFieldNamesAreTheSettings': the form's field names are
// the keys of the settings' refusals, so each lands on its field.
func TestProposalNotifyFieldNamesAreTheSettings(t *testing.T) {
	if form.ProposalNotifyMode != settings.FieldProposalNotify || form.ProposalNotifyWebhookURL != settings.FieldProposalWebhook {
		t.Fatalf("form fields %q, %q; settings fields %q, %q", form.ProposalNotifyMode, form.ProposalNotifyWebhookURL,
			settings.FieldProposalNotify, settings.FieldProposalWebhook)
	}
	for _, m := range []string{form.ProposalNotifyOff, form.ProposalNotifyDM, form.ProposalNotifyWebhook} {
		if m != settings.NotifyOff && m != settings.NotifyDM && m != settings.NotifyWebhook {
			t.Errorf("form mode %q is not a settings mode", m)
		}
	}
}

var (
	proposalRowRE  = regexp.MustCompile(`data-testid="proposal-row-([0-9a-f]{32})"`)
	proposalNextRE = regexp.MustCompile(`href="([^"]+)" rel="next" data-testid="page-next"`)
)

// listedProposals are the ids of a list page, in order, and its next page's
// address ("" on the last).
func listedProposals(t *testing.T, res *response) (ids []string, next string) {
	t.Helper()
	wantStatus(t, res, http.StatusOK)
	for _, m := range proposalRowRE.FindAllStringSubmatch(res.body, -1) {
		ids = append(ids, m[1])
	}
	if m := proposalNextRE.FindStringSubmatch(res.body); m != nil {
		next = html.UnescapeString(m[1])
	}
	return ids, next
}

// TestProposalInboxFiltersAndPages: 28 proposals (26 of kudos, 2 of
// allkinds, one of them rejected), listed newest first 25 to a page: the
// cursor's second page holds the rest with no repeat, every filter keeps
// only what it names, the counts are per state, and a bad filter is
// refused (400) on its field with nothing listed.
func TestProposalInboxFiltersAndPages(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	var kudosIDs []string
	for i := range 26 {
		kudosIDs = append(kudosIDs, h.propose(t, kudos.Name, fmt.Sprintf("---\ndigest_channel_id: %d\n---\n", 1000+i), fmt.Sprintf("kudos #%d", i)))
	}
	allPending := h.propose(t, "allkinds", "---\nlimit: 7\n---\n", "allkinds limit")
	allRejected := h.propose(t, "allkinds", "---\nlimit: 8\n---\n", "allkinds limit again")
	if _, err := h.props.Reject(context.Background(), allRejected, proposals.Decider{Source: "web", Admin: "x"}, "no"); err != nil {
		t.Fatal(err)
	}
	newestFirst := []string{allRejected, allPending}
	for _, id := range slices.Backward(kudosIDs) {
		newestFirst = append(newestFirst, id)
	}
	c := h.newClient()
	c.login(testUser, testPassword)

	first, next := listedProposals(t, c.get("/proposals"))
	if !slices.Equal(first, newestFirst[:25]) || next == "" {
		t.Fatalf("first page = %d ids (next %q), want the newest 25 in order", len(first), next)
	}
	second, last := listedProposals(t, c.get(next))
	if !slices.Equal(second, newestFirst[25:]) || last != "" {
		t.Fatalf("second page = %v (next %q), want %v and no further page", second, last, newestFirst[25:])
	}
	wantBody(t, c.get("/proposals"), `data-testid="proposal-count-pending-n">27<`, `data-testid="proposal-count-rejected-n">1<`)

	filters := []struct {
		query string
		want  []string
	}{
		{"state=rejected", []string{allRejected}},
		{"module=allkinds", []string{allRejected, allPending}},
		{"module=allkinds&state=pending", []string{allPending}},
		{"target=guild:42:allkinds", []string{allRejected, allPending}},
		{"guild=42&module=allkinds", []string{allRejected, allPending}},
		{"guild=43", nil},
		{"module=hello", nil},
	}
	for _, f := range filters {
		got, next := listedProposals(t, c.get("/proposals?"+f.query))
		if !slices.Equal(got, f.want) || next != "" {
			t.Errorf("?%s = %v (next %q), want %v", f.query, got, next, f.want)
		}
	}
	// The pending filter pages too, and its cursor keeps the filter.
	pending, next := listedProposals(t, c.get("/proposals?state=pending"))
	rest, _ := listedProposals(t, c.get(next))
	if len(pending) != 25 || len(rest) != 2 || !strings.Contains(next, "state=pending") || slices.Contains(append(pending, rest...), allRejected) {
		t.Errorf("pending pages = %d + %d (next %q)", len(pending), len(rest), next)
	}
	wantBody(t, c.get("/proposals?guild=43"), "No matching proposals")

	for _, bad := range []struct{ query, field string }{
		{"state=maybe", form.ProposalState},
		{"guild=abc", form.ProposalGuild},
		{"module=Not%20A%20Module", form.ProposalModule},
		{"target=nowhere", form.ProposalTarget},
		{"after=%3Cscript%3E", form.ProposalAfter},
	} {
		res := c.get("/proposals?" + bad.query)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `data-testid="error-`+bad.field+`"`) || proposalRowRE.MatchString(res.body) {
			t.Errorf("?%s = %d, error on %s: %t", bad.query, res.StatusCode, bad.field, strings.Contains(res.body, `data-testid="error-`+bad.field+`"`))
		}
	}
}

// TestProposalEvents: the inbox's live region arrives when its stream opens
// and again, with the new proposal, when one is made; the detail page's
// region follows a decision (its state and the Discord card's outcome).
func TestProposalEvents(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	proposalGuild(t, h)
	c := h.newClient()
	c.login(testUser, testPassword)
	list, _ := openStream(t, c, "/proposals/events?view=list&state=pending")
	if first := readEvent(t, list); !strings.Contains(first, "No matching proposals") {
		t.Fatalf("first list fragment: %.600s", first)
	}
	id := h.propose(t, kudos.Name, "---\ndigest_channel_id: 123456789012345678\n---\n", "live kudos")
	for ev := readEvent(t, list); !strings.Contains(ev, `data-testid="proposal-row-`+id+`"`); ev = readEvent(t, list) {
	}

	detail, _ := openStream(t, c, "/proposals/events?view=detail&id="+id)
	if first := readEvent(t, detail); !strings.Contains(first, `data-state="pending"`) {
		t.Fatalf("first detail fragment: %.600s", first)
	}
	if _, err := h.props.Approve(context.Background(), id, proposals.Decider{Source: "web", Admin: "other"}); err != nil {
		t.Fatal(err)
	}
	for ev := readEvent(t, detail); !strings.Contains(ev, `data-state="applied"`); ev = readEvent(t, detail) {
	}
	// The pending list drops it.
	for ev := readEvent(t, list); strings.Contains(ev, `data-testid="proposal-row-`+id+`"`); ev = readEvent(t, list) {
	}
	if res := c.get("/proposals/events?view=detail&id=0123456789abcdef0123456789abcdef"); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown proposal's stream = %d, want 404", res.StatusCode)
	}
}
