package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
)

// TestChecklistSteps: each combination of the four steps' states gives
// each step its done flag and the sentence that says what is missing; the
// intents are named one by one.
func TestChecklistSteps(t *testing.T) {
	for mask := 0; mask < 16; mask++ {
		st := checklistState{}
		if mask&1 != 0 {
			st.token, st.members, st.content = true, true, true
		}
		if mask&2 != 0 {
			st.modules = 2
		}
		if mask&4 != 0 {
			st.guilds = 1
		}
		st.assistant = mask&8 != 0
		steps := checklistSteps(st)
		if len(steps) != 4 {
			t.Fatalf("mask %d: %d steps", mask, len(steps))
		}
		for i, want := range []struct {
			key, done, todo string
		}{
			{"discord", "Token set, both privileged intents on.", "No bot token yet"},
			{"modules", "2 modules selected.", "No module selected"},
			{"guild", "Active in 1 guild.", "Kimi is active in no guild yet"},
			{"assistant", "A model provider is set up.", "No model provider yet"},
		} {
			s, done := steps[i], mask&(1<<i) != 0
			if s.Key != want.key || s.Done != done || s.Href == "" || s.Action == "" {
				t.Fatalf("mask %d step %d = %+v, want %s done=%v with a link", mask, i, s, want.key, done)
			}
			if wantDetail := map[bool]string{true: want.done, false: want.todo}[done]; !strings.HasPrefix(s.Detail, wantDetail) {
				t.Errorf("mask %d %s: detail %q, want it to start %q", mask, s.Key, s.Detail, wantDetail)
			}
		}
		wantPending := []string{}
		for i, title := range []string{"connect discord", "choose modules", "activate a guild", "set up the assistant"} {
			if mask&(1<<i) == 0 {
				wantPending = append(wantPending, title)
			}
		}
		if got := checklistPending(steps); got != strings.Join(wantPending, ", ") {
			t.Errorf("mask %d: pending %q, want %q", mask, got, strings.Join(wantPending, ", "))
		}
	}
	for _, tc := range []struct {
		members, content bool
		want             string
	}{
		{false, false, "Token set; turn on the members and message content intents here and in the Developer Portal."},
		{true, false, "Token set; turn on the message content intent here and in the Developer Portal."},
		{false, true, "Token set; turn on the members intent here and in the Developer Portal."},
	} {
		s := checklistSteps(checklistState{token: true, members: tc.members, content: tc.content})[0]
		if s.Done || s.Detail != tc.want {
			t.Errorf("members=%v content=%v: %+v, want not done, %q", tc.members, tc.content, s, tc.want)
		}
	}
}

// allStepsDone saves a token and both intents, activates testGuild and
// saves a model provider (the options add the module host).
func allStepsDone(t *testing.T, h *harness) {
	t.Helper()
	withToken("")(t, h)
	if err := settings.SaveDiscordIntents(context.Background(), h.st, true, true, settings.Actor{Name: "test"}); err != nil {
		t.Fatal(err)
	}
	withGuild(activeGuild)(t, h)
	withSavedProvider("demo-model")(t, h)
}

var withHost = []func(*Options){withModules(nil, false)}

var checklistScenarios = []scenario{
	{name: "checklist: a fresh overview lists the four steps, none done, each with its link", method: "GET", url: "/", signedIn: true,
		wantStatus: http.StatusOK, wantContains: []string{`data-testid="overview-checklist"`, "0 of 4 done",
			`data-testid="checklist-discord" data-done="false"`, `data-testid="checklist-modules" data-done="false"`,
			`data-testid="checklist-guild" data-done="false"`, `data-testid="checklist-assistant" data-done="false"`,
			`href="/discord"`, `href="/modules"`, `href="/guilds"`, `href="/assistant"`,
			`action="/overview/checklist/dismiss"`, `name="_csrf"`}},
	{name: "checklist: the steps done show as done", method: "GET", url: "/", signedIn: true, opts: withHost,
		setup: func(t *testing.T, h *harness) {
			withToken("")(t, h)
			withGuild(activeGuild)(t, h)
		},
		wantStatus: http.StatusOK, wantContains: []string{"2 of 4 done", `data-testid="checklist-discord" data-done="false"`,
			"Token set; turn on the members and message content intents", `data-testid="checklist-modules" data-done="true"`,
			"2 modules selected.", `data-testid="checklist-guild" data-done="true"`, "Active in 1 guild.",
			`data-testid="checklist-assistant" data-done="false"`}},
	{name: "checklist: every step done, the card is gone", method: "GET", url: "/", signedIn: true, opts: withHost,
		setup: allStepsDone, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="overview-version"`}, wantNotContains: []string{`data-testid="overview-checklist"`}},
	{name: "checklist: demo mode connects Discord and the assistant by itself", method: "GET", url: "/", signedIn: true, opts: demo,
		setup: func(t *testing.T, h *harness) {
			if err := settings.SaveDiscordIntents(context.Background(), h.st, true, true, settings.Actor{Name: "test"}); err != nil {
				t.Fatal(err)
			}
		},
		wantStatus: http.StatusOK, wantContains: []string{`data-testid="checklist-discord" data-done="true"`}},
	{name: "checklist: dismiss without the CSRF token changes nothing", method: "POST", url: "/overview/checklist/dismiss", signedIn: true,
		noCSRF: true, form: url.Values{}, wantStatus: http.StatusForbidden, wantNoAudit: true,
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			wantBody(t, c.get("/"), `data-testid="overview-checklist"`)
		}},
	{name: "checklist: dismiss anonymously is refused", method: "POST", url: "/overview/checklist/dismiss",
		form: url.Values{}, wantStatus: http.StatusUnauthorized, wantNoAudit: true},
	{name: "checklist: dismiss hides it for good, audited with the steps left open", method: "POST", url: "/overview/checklist/dismiss",
		signedIn: true, opts: withHost, setup: func(t *testing.T, h *harness) { withGuild(activeGuild)(t, h) },
		form: url.Values{}, wantStatus: http.StatusSeeOther, wantLocation: "/", wantAudit: []string{settings.AuditActionChecklistDismiss},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := followFlash(t, c, res, "/")
			wantBody(t, page, "The checklist is dismissed.")
			if strings.Contains(page.body, `data-testid="overview-checklist"`) {
				t.Fatal("the checklist still shows after its dismissal")
			}
			if strings.Contains(c.get("/").body, `data-testid="overview-checklist"`) {
				t.Fatal("the checklist came back on the next visit")
			}
			entries, _, err := h.st.ListAudit(context.Background(), store.AuditFilter{Action: settings.AuditActionChecklistDismiss})
			if err != nil || len(entries) != 1 || entries[0].Detail != "dismissed with steps open: connect discord, set up the assistant" || entries[0].Actor != testUser {
				t.Fatalf("audit = %+v, %v", entries, err)
			}
		}},
}

// TestOverviewChecklist runs the checklist's scenario table.
func TestOverviewChecklist(t *testing.T) { runScenarios(t, checklistScenarios) }
