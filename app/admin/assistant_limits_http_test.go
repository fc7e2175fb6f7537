package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/settings"
)

// limitsForm is a valid limits form; extra sets name, value pairs.
func limitsForm(extra ...string) url.Values {
	v := url.Values{form.AssistantUserTurnsPer10Min: {"10"}, form.AssistantUserDailyTokens: {"100000"},
		form.AssistantGuildDailyTokens: {"1000000"}, form.AssistantMonthlyTokens: {"0"}}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return v
}

func storedLimits(t *testing.T, h *harness) settings.AssistantLimits {
	t.Helper()
	l, err := settings.LoadAssistantLimits(context.Background(), h.st)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func limitsUnchanged(t *testing.T, h *harness, _ *client, _ *response) {
	t.Helper()
	if l := storedLimits(t, h); l != settings.DefaultAssistantLimits() {
		t.Fatalf("stored %+v, want the defaults", l)
	}
}

// limitsRefusal is a limits form refused on field with msg, the typed
// value kept and nothing stored.
func limitsRefusal(name, field, msg, value string) scenario {
	return scenario{name: "assistant limits: " + name, method: "POST", url: "/assistant/limits", signedIn: true,
		form: limitsForm(field, value), wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{form.MsgAssistantLimitsNotSaved, `data-testid="assistant-limits-refused"`,
			`<p class="field-error" data-testid="error-` + field + `">` + msg, `value="` + value + `"`},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if n := strings.Count(res.body, `class="field-error"`); n != 1 {
				t.Errorf("%d field errors shown, want 1 (on %s)", n, field)
			}
			limitsUnchanged(t, h, c, res)
		}}
}

// TestAssistantLimitsScenarios: the limits card shows the defaults, a
// save is stored and audited with what changed, each bound is refused
// with its message and nothing stored, and a save needs a session and
// its CSRF token.
// assistantLimitsScenarios are the limits card's route scenarios (run
// with every other table by TestScenarios).
var assistantLimitsScenarios = []scenario{
	{name: "assistant limits: the page shows the defaults", method: "GET", url: "/assistant", signedIn: true, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="card-assistant-limits"`, `action="/assistant/limits"`,
			`name="user_turns_per_10min"`, `value="10"`, `name="user_daily_tokens"`, `value="100000"`,
			`name="guild_daily_tokens"`, `value="1000000"`, `name="monthly_tokens"`, `value="0"`,
			"1 to 10000 (default 10)", "1,000 to 1,000,000,000 (default 100,000)", "assistant.daily_tokens"},
		wantNotContains: []string{`name="limits_exempt_staff" value="true" checked`}},
	{name: "assistant limits: anonymous save is refused", method: "POST", url: "/assistant/limits",
		form: limitsForm(form.AssistantUserTurnsPer10Min, "3"), wantStatus: http.StatusUnauthorized, wantNoAudit: true, check: limitsUnchanged},
	{name: "assistant limits: a save without CSRF changes nothing", method: "POST", url: "/assistant/limits", signedIn: true, noCSRF: true,
		form: limitsForm(form.AssistantUserTurnsPer10Min, "3"), wantStatus: http.StatusForbidden, wantNoAudit: true, check: limitsUnchanged},
	{name: "assistant limits: a save is stored and audited", method: "POST", url: "/assistant/limits", signedIn: true,
		form: limitsForm(form.AssistantUserTurnsPer10Min, "3", form.AssistantUserDailyTokens, "5000", form.AssistantGuildDailyTokens, "20000",
			form.AssistantMonthlyTokens, "900000", form.AssistantLimitsExemptStaff, "true"),
		wantStatus: http.StatusSeeOther, wantLocation: "/assistant#limits", wantAudit: []string{settings.AuditActionAssistantLimits},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			want := settings.AssistantLimits{UserTurnsPer10Min: 3, UserDailyTokens: 5000, GuildDailyTokens: 20000, MonthlyTokens: 900000, ExemptStaff: true}
			if got := storedLimits(t, h); got != want {
				t.Fatalf("stored %+v, want %+v", got, want)
			}
			page := c.get("/assistant")
			for _, s := range []string{"Limits saved", `value="900000"`, `name="limits_exempt_staff" value="true" checked`} {
				if !strings.Contains(page.body, s) {
					t.Errorf("the page after the save lacks %q", s)
				}
			}
		}},
	limitsRefusal("no turns", form.AssistantUserTurnsPer10Min, "Enter the turns a member may start in ten minutes, from 1 to 10000", "0"),
	limitsRefusal("a member's budget too small", form.AssistantUserDailyTokens, "Enter a member&#39;s tokens a day, from 1000", "999"),
	limitsRefusal("a guild's budget of text", form.AssistantGuildDailyTokens, "Enter a guild&#39;s tokens a day", "lots"),
	limitsRefusal("a negative monthly cap", form.AssistantMonthlyTokens, "Enter the tokens of all guilds a month, 0 (no cap)", "-5"),
}

func TestAssistantLimitsScenarios(t *testing.T) { runScenarios(t, assistantLimitsScenarios) }
