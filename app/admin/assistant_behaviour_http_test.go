package admin

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/settings"
)

// personaCanary is a persona text the tests save: distinctive, so its
// appearance in the audit log is found.
const personaCanary = "You are {name}, a terse pirate. Canary-persona-4711."

// behaviourForm is a valid behaviour form; extra sets name, value pairs.
func behaviourForm(extra ...string) url.Values {
	v := url.Values{form.AssistantName: {""}, form.AssistantDMMode: {"off"}, form.AssistantDMUserIDs: {""}, form.AssistantPersona: {settings.DefaultPersona},
		form.AssistantTurnDeadline: {"180"}, form.AssistantIterationCap: {"12"}}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return v
}

// storedBehaviour is the behaviour settings as stored now.
func storedBehaviour(t *testing.T, h *harness) settings.AssistantBehaviour {
	t.Helper()
	b, err := settings.LoadAssistantBehaviour(context.Background(), h.st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// behaviourUnchanged fails unless the stored settings are the defaults.
func behaviourUnchanged(t *testing.T, h *harness, _ *client, _ *response) {
	t.Helper()
	if b, want := storedBehaviour(t, h), settings.DefaultAssistantBehaviour(); b.Name != "" || b.DMMode != want.DMMode || b.Persona != "" ||
		b.TurnDeadline != want.TurnDeadline || b.IterationCap != want.IterationCap || len(b.DMUserIDs) != 0 {
		t.Fatalf("stored %+v, want the defaults", b)
	}
}

// behaviourRefusal is a scenario of a behaviour form refused on field,
// showing msg beside it and the typed value kept.
func behaviourRefusal(name, field, msg, kept string, extra ...string) scenario {
	return scenario{name: "assistant behaviour: " + name, method: "POST", url: "/assistant/behaviour", signedIn: true,
		form: behaviourForm(extra...), wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{form.MsgAssistantBehaviourNotSaved, `data-testid="assistant-behaviour-refused"`,
			`<p class="field-error" data-testid="error-` + field + `">` + msg, kept},
		wantNotContains: []string{form.MsgAssistantNotSaved},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if n := strings.Count(res.body, `class="field-error"`); n != 1 {
				t.Errorf("%d field errors shown, want 1 (on %s)", n, field)
			}
			behaviourUnchanged(t, h, c, res)
		}}
}

var assistantBehaviourScenarios = []scenario{
	{name: "assistant behaviour: anonymous save is refused", method: "POST", url: "/assistant/behaviour",
		form: behaviourForm(form.AssistantIterationCap, "30"), wantStatus: http.StatusUnauthorized, wantNoAudit: true, check: behaviourUnchanged},
	{name: "assistant behaviour: a save without CSRF changes nothing", method: "POST", url: "/assistant/behaviour", signedIn: true, noCSRF: true,
		form: behaviourForm(form.AssistantIterationCap, "30"), wantStatus: http.StatusForbidden, wantNoAudit: true, check: behaviourUnchanged},
	{name: "assistant behaviour: the page shows the defaults", method: "GET", url: "/assistant", signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="card-assistant-behaviour"`, `action="/assistant/behaviour"`, `<option value="off" selected`,
			"You are {name}, a helpful assistant in this Discord server.", `name="turn_deadline_seconds"`, `value="180"`,
			`name="iteration_cap"`, `value="12"`, "10 to 1800 seconds (default 180)", "1 to 200 (default 12)",
			`<input id="assistant-name" name="assistant_name" type="text" autocomplete="off"`, "leave it empty for the bot&#39;s own names only",
			"a change takes effect at the next reconnect (Reconnect now on the Discord page, or a restart); saving does not reconnect."},
		wantNotContains: []string{`name="assistant_name" type="text" value=`}},

	behaviourRefusal("an unknown direct-message mode", form.AssistantDMMode, "Choose off, the owner only, or these users.", `<option value="off">Off`,
		form.AssistantDMMode, "everyone"),
	behaviourRefusal("these users without ids", form.AssistantDMUserIDs, "List the Discord user ids", `<option value="users" selected`,
		form.AssistantDMMode, "users"),
	behaviourRefusal("a user id that is not one", form.AssistantDMUserIDs, "&#34;bob&#34; is not a Discord user id", "123\nbob</textarea>",
		form.AssistantDMMode, "users", form.AssistantDMUserIDs, "123\nbob"),
	behaviourRefusal("a name too long", form.AssistantName, "Use at most 32 characters for the name.", `value="`+strings.Repeat("é", 33)+`"`,
		form.AssistantName, strings.Repeat("é", 33)),
	behaviourRefusal("a name on two lines", form.AssistantName, "The name must be one line without control or invisible characters.", `value="Ava`,
		form.AssistantName, "Ava\nBot", form.AssistantIterationCap, "30"),
	behaviourRefusal("a persona too long", form.AssistantPersona, "The persona is longer than 8000 bytes.", strings.Repeat("y", 8001),
		form.AssistantPersona, strings.Repeat("y", 8001)),
	behaviourRefusal("a turn deadline too short", form.AssistantTurnDeadline, "Enter a turn deadline in whole seconds, from 10 to 1800", `value="5"`,
		form.AssistantTurnDeadline, "5"),
	behaviourRefusal("a turn deadline that is not a number", form.AssistantTurnDeadline, form.MsgAssistantTurnDeadline, `value="soon"`,
		form.AssistantTurnDeadline, "soon"),
	behaviourRefusal("a turn deadline past any Duration", form.AssistantTurnDeadline, "Enter a turn deadline in whole seconds", `value="36028797018964148"`,
		form.AssistantTurnDeadline, "36028797018964148"),
	behaviourRefusal("an iteration cap of zero", form.AssistantIterationCap, "Enter the most model calls a turn may make, from 1 to 200", `value="0"`,
		form.AssistantIterationCap, "0"),
	behaviourRefusal("an iteration cap that is not a number", form.AssistantIterationCap, form.MsgAssistantIterationCap, `value="many"`,
		form.AssistantIterationCap, "many"),

	{name: "assistant behaviour: a save stores the settings, the page shows them and the audit names the change", method: "POST",
		url: "/assistant/behaviour", signedIn: true,
		form: behaviourForm(form.AssistantDMMode, "users", form.AssistantDMUserIDs, "  700\n5, 700", form.AssistantPersona, personaCanary,
			form.AssistantTurnDeadline, "300", form.AssistantIterationCap, "20"),
		wantStatus: http.StatusSeeOther, wantLocation: "/assistant#behaviour", wantAudit: []string{settings.AuditActionAssistantBehaviour},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			b := storedBehaviour(t, h)
			if b.DMMode != settings.DMUsers || !slices.Equal(b.DMUserIDs, []uint64{5, 700}) || b.Persona != personaCanary ||
				b.TurnDeadline != 300*time.Second || b.IterationCap != 20 {
				t.Fatalf("stored %+v", b)
			}
			page := c.get("/assistant")
			wantBody(t, page, "Behaviour settings saved.", `<option value="users" selected`, ">5\n700</textarea>",
				">"+personaCanary+"</textarea>", `value="300"`, `value="20"`)
			d := lastAuditDetail(t, h, settings.AuditActionAssistantBehaviour)
			if strings.Contains(d, "Canary-persona-4711") || strings.Contains(d, "pirate") {
				t.Fatalf("the audit holds the persona's text: %q", d)
			}
			if want := "direct messages users; direct-message users 2; persona changed; turn deadline 5m0s; iteration cap 20"; d != want {
				t.Fatalf("audit detail %q, want %q", d, want)
			}
		}},
	{name: "assistant behaviour: a name is saved trimmed, shown, audited and used for text invocation at once", method: "POST",
		url: "/assistant/behaviour", signedIn: true, form: behaviourForm(form.AssistantName, "  Kimi Helper  "),
		wantStatus: http.StatusSeeOther, wantLocation: "/assistant#behaviour", wantAudit: []string{settings.AuditActionAssistantBehaviour},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			if b := storedBehaviour(t, h); b.Name != "Kimi Helper" {
				t.Fatalf("stored name %q", b.Name)
			}
			if got := h.assistant.AssistantName(); got != "Kimi Helper" {
				t.Fatalf("the provider's owner keeps %q: the save did not reload it", got)
			}
			wantBody(t, c.get("/assistant"), "Behaviour settings saved.", `name="assistant_name" type="text" value="Kimi Helper"`)
			if d := lastAuditDetail(t, h, settings.AuditActionAssistantBehaviour); d != `assistant name "Kimi Helper"` {
				t.Fatalf("audit detail %q", d)
			}
			res := c.post("/assistant/behaviour", behaviourForm(form.AssistantName, " "))
			if res.StatusCode != http.StatusSeeOther || storedBehaviour(t, h).Name != "" || h.assistant.AssistantName() != "" {
				t.Fatalf("clearing the name: %d, stored %q, kept %q", res.StatusCode, storedBehaviour(t, h).Name, h.assistant.AssistantName())
			}
		}},
	{name: "assistant behaviour: turning direct messages on says they follow at the next reconnect, without reconnecting", method: "POST",
		url: "/assistant/behaviour", signedIn: true, form: behaviourForm(form.AssistantDMMode, "users", form.AssistantDMUserIDs, "700"),
		wantStatus: http.StatusSeeOther, wantAudit: []string{settings.AuditActionAssistantBehaviour},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			wantBody(t, c.get("/assistant"), "Direct messages reach Kimi from the next reconnect: press Reconnect now on the Discord page (saving does not reconnect).")
			if res := c.post("/assistant/behaviour", behaviourForm(form.AssistantDMMode, "users", form.AssistantDMUserIDs, "700\n800")); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("second save: %d", res.StatusCode)
			}
			if page := c.get("/assistant"); strings.Contains(page.body, "next reconnect: press") {
				t.Fatal("a save that leaves DMs on repeats the reconnect notice")
			}
		}},
	{name: "assistant behaviour: saving the shown default persona keeps the default", method: "POST", url: "/assistant/behaviour", signedIn: true,
		form: behaviourForm(form.AssistantDMMode, "owner"), wantStatus: http.StatusSeeOther, wantAudit: []string{settings.AuditActionAssistantBehaviour},
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			if b := storedBehaviour(t, h); b.Persona != "" || b.DMMode != settings.DMOwner {
				t.Fatalf("stored %+v, want the default persona and DMs for the owner", b)
			}
			if d := lastAuditDetail(t, h, settings.AuditActionAssistantBehaviour); d != "direct messages owner" {
				t.Fatalf("audit detail %q", d)
			}
		}},
	{name: "assistant behaviour: without the provider's owner the save answers 503", method: "POST", url: "/assistant/behaviour", signedIn: true,
		opts: []func(*Options){func(o *Options) { o.Assistant = nil }}, form: behaviourForm(),
		wantStatus: http.StatusServiceUnavailable, wantNoAudit: true},
}

func TestAssistantBehaviourScenarios(t *testing.T) { runScenarios(t, assistantBehaviourScenarios) }
