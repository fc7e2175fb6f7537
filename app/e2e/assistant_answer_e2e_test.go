package e2e

import (
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
)

// TestE2EAssistantAnswersAMention is the composed appliance in demo mode:
// a member's mention of the bot in an active guild reaches the assistant
// through the real bot, the turn asks the scripted demo model, and the
// answer is posted in the channel as a reply to the trigger, mentioning
// no one but the caller; a message that mentions no one costs nothing.
func TestE2EAssistantAnswersAMention(t *testing.T) {
	a := startE2E(t, e2eOptions{docs: map[guildcfg.Target]string{guildcfg.GuildTarget(e2eID(t, e2eGuild)): e2eGuildDoc}})
	c := a.signIn()
	a.waitConnected(c)

	if _, err := a.Discord().PostMessage(e2eChannel, e2eAnn, "no mention here"); err != nil {
		t.Fatal(err)
	}
	trigger, err := a.Discord().PostMessage(e2eChannel, e2eAnn, "<@"+a.Discord().BotID()+"> what can you do?")
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	a.WaitFor("the demo model's answer in the channel", func() bool {
		answers = answers[:0]
		for _, m := range a.Discord().Messages(e2eChannel) {
			if m.Author != nil && m.Author.ID == a.Discord().BotID() && strings.Contains(m.Content, "(demo model)") {
				if m.MessageReference == nil || m.MessageReference.MessageID != trigger.ID {
					t.Fatalf("the answer %q is not a reply to the trigger %s", m.Content, trigger.ID)
				}
				answers = append(answers, m.Content)
			}
		}
		return len(answers) > 0
	})
	if len(answers) != 1 || !strings.Contains(answers[0], "what can you do?") {
		t.Fatalf("answers = %q, want one quoting the question (and none for the message without a mention)", answers)
	}
}
