package admin

import (
	"net/http"
	"testing"

	"github.com/kimiapp/kimi/modules/kudos"
)

// controlScenarios: an on/off setting is a switch (a checkbox with
// role="switch" inside .switch, its label for it), not a bare tick box.
var controlScenarios = []scenario{
	{name: "the privileged intents are switches", method: "GET", url: "/discord", signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{
			`<div class="check switch" data-testid="discord-intent-members"><input type="checkbox" role="switch" id="intent-members"`,
			`<div class="check switch" data-testid="discord-intent-message_content"><input type="checkbox" role="switch" id="intent-message_content"`,
			`<label for="intent-members">`}},
	{name: "the assistant's private-network setting is a switch", method: "GET", url: "/assistant", signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{`<div class="check switch"><input type="checkbox" role="switch" id="assistant-private"`,
			`<label for="assistant-private">`}},
}

// TestOnOffSettingsAreSwitches runs controlScenarios.
func TestOnOffSettingsAreSwitches(t *testing.T) { runScenarios(t, controlScenarios) }

// settingSourceScenarios: a settings field shows the value in effect (in
// the field, or as its placeholder) and where it comes from.
var settingSourceScenarios = []scenario{
	{name: "a guild's module settings say which come from the document and which are defaults", method: http.MethodGet,
		url: "/guilds/42", signedIn: true, wantStatus: http.StatusOK,
		setup: func(t *testing.T, h *harness) {
			withGuild(activeGuild)(t, h)
			h.writeDocument(kudosT, "---\ngiver_min_tier: staff\n---\n")
		},
		wantContains: []string{`data-testid="source-setting.giver_min_tier">Set in the document.</p>`,
			`data-testid="source-setting.allow_thank_back">Default: on.</p>`},
		wantNotContains: []string{`data-testid="source-setting.digest_channel_id"`}},
	{name: "a module's deployment settings show the value in effect in the field", method: http.MethodGet,
		url: "/modules/probe", opts: mods, signedIn: true, wantStatus: http.StatusOK, setup: needsRunning(probeName),
		wantContains: []string{`placeholder="5"`, `<option value="">(default: quiet)</option>`, "Now from: default."}},
	{name: "a count of seconds reads as a duration", method: http.MethodGet,
		url: "/modules/" + kudos.Name, opts: mods, signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{"Current value: 604800 (7 days)."}},
}

// TestSettingsShowTheirSource runs settingSourceScenarios.
func TestSettingsShowTheirSource(t *testing.T) { runScenarios(t, settingSourceScenarios) }
