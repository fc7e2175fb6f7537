package admin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/modules/kudos"
)

// inCard fails unless want appears in the guild page's card id (between
// its id and the next card's).
func inCard(t *testing.T, body, card, want string) {
	t.Helper()
	start := strings.Index(body, `id="`+card+`"`)
	if start < 0 {
		t.Fatalf("the page has no card %q", card)
	}
	end := len(body)
	if next := strings.Index(body[start+1:], `<section class="card" id="`); next >= 0 {
		end = start + 1 + next
	}
	if !strings.Contains(body[start:end], want) {
		t.Errorf("card %s lacks %q", card, want)
	}
	if strings.Contains(body[:start], want) {
		t.Errorf("%q appears above card %s too", want, card)
	}
}

// feedbackScenarios: each guild form posts to its card's fragment; a
// refusal lists its fields' errors at the top of that form, linking to
// each input; a lost save's text shows in its card; a save's notice shows
// beside the form that saved, not on top.
var feedbackScenarios = []scenario{
	{name: "the forms post to their cards", method: http.MethodGet, url: "/guilds/42", signedIn: true,
		setup: withGuild(activeGuild), wantStatus: http.StatusOK,
		wantContains: []string{`action="/guilds/42/setup#setup"`, `action="/guilds/42/document#raw"`,
			`action="/guilds/42/modules/` + kudos.Name + `#module-` + kudos.Name + `"`}},
	{name: "a refused setup save: its summary links to the field", method: http.MethodPost, url: setupURL, signedIn: true,
		setup: withGuild(activeGuild), form: setupForm(form.GuildTasksTimezone, "Not/AZone"),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			inCard(t, res.body, "setup", `data-testid="setup-error-summary"`)
			inCard(t, res.body, "setup", `href="#gs-tasks-tz"`)
		}},
	{name: "a refused raw save: its summary links to the text", method: http.MethodPost, url: rawURL, signedIn: true,
		setup: withGuild(activeGuild), form: rawForm("---\nbot_active: maybe\n---\n"),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			inCard(t, res.body, "raw", `data-testid="raw-error-summary"`)
			inCard(t, res.body, "raw", `href="#gr-text"`)
		}},
	{name: "a refused module save: its summary links to the field", method: http.MethodPost, url: kudosURL, signedIn: true,
		setup: withEmptyRevisions, form: moduleForm(kudos.FieldDigestChannel, "abc"),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			inCard(t, res.body, "module-"+kudos.Name, `data-testid="module-error-summary-`+kudos.Name+`"`)
			inCard(t, res.body, "module-"+kudos.Name, `href="#ms-`+kudos.Name+`-`+kudos.FieldDigestChannel+`"`)
		}},
	{name: "a module conflict shows in its card", method: http.MethodPost, url: kudosURL, signedIn: true,
		setup: func(t *testing.T, h *harness) { h.writeDocument(kudosT, "---\ngiver_min_tier: staff\n---\n") },
		form:  withRev(moduleForm(kudos.FieldGiverMinTier, "regular"), "{oldrev}"), wantStatus: http.StatusConflict, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			inCard(t, res.body, "module-"+kudos.Name, `data-testid="guild-conflict"`)
		}},
	{name: "a setup save's notice shows beside its form", method: http.MethodPost, url: setupURL, signedIn: true,
		setup: withGuild(activeGuild), form: setupForm(form.GuildStaffRoleIDs, "222"),
		wantStatus: http.StatusSeeOther, wantLocation: "/guilds/42#setup", wantAudit: saveAudit,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := c.get("/guilds/42")
			inCard(t, page.body, "setup", `data-testid="near-flash"`)
			inCard(t, page.body, "setup", "Saved as a new revision.")
		}},
	{name: "a module save's notice shows beside its form", method: http.MethodPost, url: kudosURL, signedIn: true,
		setup: withEmptyRevisions, form: moduleForm(kudos.FieldDigestChannel, "777"),
		wantStatus: http.StatusSeeOther, wantAudit: saveAudit,
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := c.get("/guilds/42")
			inCard(t, page.body, "module-"+kudos.Name, "Saved as a new revision.")
		}},
}

func TestFeedbackPages(t *testing.T) { runScenarios(t, feedbackScenarios) }
