package e2e

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/llm/llmfake"
)

// TestE2EAssistantBudgetRefusesBeforeTheModel is the composed appliance:
// the guild's assistant.daily_tokens (1,000) is spent by one answer's
// reported tokens (written to the roll-up in the turn's transaction), so
// the next mention — even staff's, not exempt by default — is refused
// with the budget's text through the real bot and the fake Discord, with
// no ⏳ and no request to the model; /usage then shows the member's
// tokens, ephemerally.
func TestE2EAssistantBudgetRefusesBeforeTheModel(t *testing.T) {
	doc := "---\nbot_active: true\nstaff_role_ids: [" + e2eStaffRole + "]\nassistant:\n  daily_tokens: 1000\n---\n"
	a := startE2E(t, e2eOptions{docs: map[guildcfg.Target]string{guildcfg.GuildTarget(e2eID(t, e2eGuild)): doc}})
	c := a.signIn()
	a.waitConnected(c)
	c.get("/assistant")
	if code, _, loc := c.post("/assistant/limits", url.Values{"user_turns_per_10min": {"10"}, "user_daily_tokens": {"100000"},
		"guild_daily_tokens": {"1000000"}, "monthly_tokens": {"0"}}); code != http.StatusSeeOther || loc != "/assistant#limits" {
		t.Fatalf("saving the limits: %d to %q", code, loc)
	}
	a.Model().SetSteps(llmfake.Step{Repeat: true, Plan: llmfake.Plan{Content: []string{"Sure."}, Usage: llmfake.Usage{Prompt: 800, Completion: 300}}})
	before := len(a.Model().Requests())

	first := a.mention("hello")
	a.botAnswer(first.ID, "Sure.")
	if n := len(a.Model().Requests()) - before; n != 1 {
		t.Fatalf("the first mention made %d model requests", n)
	}
	second := a.mention("again")
	a.botAnswer(second.ID, assistant.DailyBudgetText)
	staff, err := a.Discord().PostMessage(e2eChannel, e2eBob, "<@"+a.Discord().BotID()+"> me too?")
	if err != nil {
		t.Fatal(err)
	}
	a.botAnswer(staff.ID, assistant.DailyBudgetText)
	if n := len(a.Model().Requests()) - before; n != 1 {
		t.Fatalf("the model received %d requests, want only the first (the refusals ask none)", n)
	}
	for _, id := range []string{second.ID, staff.ID} {
		for _, m := range a.Discord().Messages(e2eChannel) {
			if m.ID == id && len(m.Reactions) > 0 {
				t.Fatalf("a refused trigger has reactions %+v", m.Reactions)
			}
		}
	}

	a.WaitFor("/usage synced", func() bool {
		return slices.ContainsFunc(a.Discord().Commands(""), func(c *discordgo.ApplicationCommand) bool { return c.Name == "usage" })
	})
	id, err := a.Discord().RunCommand(e2eChannel, e2eAnn, "usage")
	if err != nil {
		t.Fatal(err)
	}
	st := a.answered(id)
	if st.Response.Data == nil || st.Response.Data.Flags&discordgo.MessageFlagsEphemeral == 0 || !strings.HasPrefix(st.Response.Data.Content, "Your assistant usage here: 1,100 tokens today of your 100,000 daily budget, 1,100 this month.") ||
		strings.Contains(st.Response.Data.Content, "This server") {
		t.Fatalf("/usage answered %+v", st.Response.Data)
	}
}
