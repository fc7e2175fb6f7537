package app

import (
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/modules/hello"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestE2EDemoModelCallsTheBundledModulesTools is `kimi serve --demo` at its
// first start with the bundled modules installed and no KIMI_MODULES: the
// demo selects them, and in the demo guild a member's mentions run the
// demo model's scripts through the assistant and the module host — kudos
// to bo by name (give_kudos with bo's id, found in the demo guild's
// instructions), hello (hello_member), the leaderboard (browse_tools loads
// kudos_leaderboard, then its call, which counts the kudos just given) —
// and anything else gets the demo model's pointer to /assistant.
func TestE2EDemoModelCallsTheBundledModulesTools(t *testing.T) {
	a := startE2E(t, e2eOptions{specs: []sdk.Spec{hello.Spec(), kudos.Spec()}})
	c := a.signIn()
	// serve is ready once the modules started; the bot's READY may come later.
	c.waitPage("the bot connected", "/discord", `data-state="connected"`, `data-testid="discord-guild-`+a.demo.GuildID+`"`)
	channel, ada, bo := a.demo.Channels[1], a.demo.Members[0], a.demo.Members[1]

	ask := func(question string) string {
		t.Helper()
		trigger, err := a.fake.PostMessage(channel, ada, "<@"+a.fake.BotID()+"> "+question)
		if err != nil {
			t.Fatal(err)
		}
		// The turn ends (✅ on the trigger) before the next question, which
		// would otherwise get the busy reply.
		var answer string
		done := false
		e2eEventually(t, "the demo model's answer to "+question+" and the turn's end", func() bool {
			for _, m := range a.fake.Messages(channel) {
				if m.Author != nil && m.Author.ID == a.fake.BotID() && m.MessageReference != nil &&
					m.MessageReference.MessageID == trigger.ID && strings.HasPrefix(m.Content, "(demo model) ") {
					answer = m.Content
				}
				if m.ID == trigger.ID {
					done = slices.ContainsFunc(m.Reactions, func(r *discordgo.MessageReactions) bool {
						return r.Emoji != nil && r.Emoji.Name == assistant.ReactDone
					})
				}
			}
			return answer != "" && done
		})
		return answer
	}
	for _, tc := range []struct {
		name, question string
		want           []string
	}{
		{"give_kudos to a member named", "give kudos to bo for the docs", []string{"Done. Kudos to <@" + bo + ">: the docs"}},
		{"hello_member", "hello", []string{"Hello, ada!"}},
		{"browse_tools then kudos_leaderboard", "who has the most kudos?", []string{"Here is who has the most kudos.", "1. <@" + bo + "> — 1"}},
		{"anything else", "what is the weather?", []string{"demo model", "what is the weather?", "/assistant"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ask(tc.question)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Fatalf("the answer to %q is %q, want it to contain %q", tc.question, got, w)
				}
			}
		})
	}
}
