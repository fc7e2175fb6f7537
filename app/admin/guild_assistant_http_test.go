package admin

import (
	"html"
	"net/http"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/modules/kudos"
)

// TestGuildAssistantForm: the assistant fields of the server-setup form
// are saved as the document's assistant mapping (enabled only when
// chosen), refused with guildcfg's messages and the typed values kept,
// shown from the stored document, and a tool no module declares is a
// warning on the page, not a refusal.
func TestGuildAssistantForm(t *testing.T) {
	invalidName := "assistant.blocked_tools contains an invalid tool name 'give kudos': use 1 to 64 letters, digits, '_' or '-'"
	runScenarios(t, []scenario{
		{name: "the assistant fields are saved canonically", method: http.MethodPost, url: setupURL, signedIn: true,
			setup: withGuild(activeGuild),
			form: setupForm(form.GuildStaffRoleIDs, "111", form.GuildAssistantEnabled, form.AssistantOff, form.GuildAssistantMinTier, "owner",
				form.GuildAssistantBlocked, kudos.ToolLeaderboard+"\n"+kudos.ToolGive+"\n"+kudos.ToolGive, form.GuildAssistantPinned, "browse_tools"),
			wantStatus: http.StatusSeeOther, wantLocation: "/guilds/42#setup", wantAudit: saveAudit,
			check: storedIs(guildT, "---\nbot_active: true\nstaff_role_ids: [111]\nassistant:\n  enabled: false\n  min_tier: owner\n"+
				"  blocked_tools: [\""+kudos.ToolGive+"\", \""+kudos.ToolLeaderboard+"\"]\n  pinned_tools: [\"browse_tools\"]\n---\nBe kind.\n")},
		{name: "the default choices write no assistant mapping", method: http.MethodPost, url: setupURL, signedIn: true,
			setup:      withGuild("---\nbot_active: true\nstaff_role_ids: [111]\nassistant:\n  min_tier: staff\n---\nBe kind.\n"),
			form:       setupForm(form.GuildStaffRoleIDs, "111", form.GuildAssistantEnabled, form.AssistantDefault, form.GuildAssistantMinTier, "member"),
			wantStatus: http.StatusSeeOther, wantAudit: saveAudit, check: storedIs(guildT, activeGuild)},
		{name: "the daily token budget is saved in the assistant mapping", method: http.MethodPost, url: setupURL, signedIn: true,
			setup:      withGuild(activeGuild),
			form:       setupForm(form.GuildStaffRoleIDs, "111", form.GuildAssistantDailyTokens, "250,000"),
			wantStatus: http.StatusSeeOther, wantAudit: saveAudit,
			check: storedIs(guildT, "---\nbot_active: true\nstaff_role_ids: [111]\nassistant:\n  min_tier: member\n  daily_tokens: 250000\n---\nBe kind.\n")},
		setupRefused("a daily token budget too small", form.GuildAssistantDailyTokens, "999", "assistant.daily_tokens must be from 1000 to 1000000000 tokens"),
		setupRefused("a daily token budget of text", form.GuildAssistantDailyTokens, "lots", "assistant.daily_tokens must be an integer"),
		{name: "the page shows the stored daily token budget", method: http.MethodGet, url: "/guilds/42", signedIn: true,
			setup:        withGuild("---\nbot_active: true\nassistant:\n  daily_tokens: 5000\n---\n"),
			wantStatus:   http.StatusOK,
			wantContains: []string{`name="assistant.daily_tokens"`, `value="5000"`}, wantNotContains: []string{"also sets assistant"}},
		setupRefused("an invalid tool name", form.GuildAssistantBlocked, "give kudos", invalidName),
		setupRefused("an unknown tier", form.GuildAssistantMinTier, "admin", "assistant.min_tier must be one of member, regular, staff, owner"),
		setupRefused("an enabled choice the select lacks", form.GuildAssistantEnabled, "maybe", form.MsgGuildAssistantEnabled),
		{name: "a refused save keeps every typed assistant value", method: http.MethodPost, url: setupURL, signedIn: true,
			setup: withGuild(activeGuild),
			form: setupForm(form.GuildStaffRoleIDs, "111", form.GuildAssistantEnabled, form.AssistantOn, form.GuildAssistantMinTier, "regular",
				form.GuildAssistantBlocked, "give kudos", form.GuildAssistantPinned, "pin_me"),
			wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
			wantContains: []string{html.EscapeString(invalidName), ">give kudos</textarea>", ">pin_me</textarea>",
				`<option value="on" selected>`, `<option value="regular" selected>`},
			check: unchanged(guildT)},
		{name: "the page shows the stored assistant mapping and warns of unknown tools", method: http.MethodGet, url: "/guilds/42", signedIn: true,
			setup:      withGuild("---\nbot_active: true\nassistant:\n  enabled: true\n  min_tier: staff\n  blocked_tools: [gone_tool, " + kudos.ToolGive + "]\n---\n"),
			wantStatus: http.StatusOK,
			wantContains: []string{`data-testid="guild-assistant-fields"`, `data-testid="guild-assistant-warnings"`,
				html.EscapeString(`assistant.blocked_tools names "gone_tool", which no module of this build declares`),
				`<option value="on" selected>`, `<option value="staff" selected>`, ">" + kudos.ToolGive + "\ngone_tool</textarea>"},
			wantNotContains: []string{"also sets assistant"}},
		{name: "a guild without the mapping shows the defaults and no warning", method: http.MethodGet, url: "/guilds/42", signedIn: true,
			setup: withGuild(activeGuild), wantStatus: http.StatusOK,
			wantContains:    []string{`<option value="default" selected>`, `<option value="member" selected>`},
			wantNotContains: []string{`data-testid="guild-assistant-warnings"`}},
	})
}
