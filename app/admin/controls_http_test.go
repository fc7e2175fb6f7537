package admin

import (
	"net/http"
	"testing"
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
