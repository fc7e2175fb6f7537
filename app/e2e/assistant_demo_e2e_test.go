package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/store"
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
	c.waitPage("the bot connected", "/discord", `data-state="connected"`, `data-testid="discord-guild-`+a.Demo().GuildID+`"`)
	channel, ada, bo := a.Demo().Channels[1], a.Demo().Members[0], a.Demo().Members[1]

	ask := func(question string) string {
		t.Helper()
		trigger, err := a.Discord().PostMessage(channel, ada, "<@"+a.Discord().BotID()+"> "+question)
		if err != nil {
			t.Fatal(err)
		}
		// The turn ends (✅ on the trigger) before the next question, which
		// would otherwise get the busy reply.
		var answer string
		done := false
		a.WaitFor("the demo model's answer to "+question+" and the turn's end", func() bool {
			for _, m := range a.Discord().Messages(channel) {
				if m.Author != nil && m.Author.ID == a.Discord().BotID() && m.MessageReference != nil &&
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

// TestE2EKudosJourneyLeavesItsRowsAndReactions is the demo's kudos
// journey, `@Kimi give kudos to bo for the docs` in the demo guild, read
// from what it leaves: the trigger got the bot's ⏳ while the turn ran —
// the fake recorded the reaction's PUT, then its DELETE, then ✅'s PUT —
// and ends with ✅ alone; and the store holds one turn (done, two iterations on the demo model,
// the demo model's reported tokens summed) and one give_kudos call
// (module kudos, ok, within the turn's duration, bo's id in its
// arguments, the kudos in its result).
func TestE2EKudosJourneyLeavesItsRowsAndReactions(t *testing.T) {
	a := startE2E(t, e2eOptions{specs: []sdk.Spec{hello.Spec(), kudos.Spec()}})
	c := a.signIn()
	c.waitPage("the bot connected", "/discord", `data-state="connected"`, `data-testid="discord-guild-`+a.Demo().GuildID+`"`)
	channel, ada, bo := a.Demo().Channels[1], a.Demo().Members[0], a.Demo().Members[1]

	before := len(a.Model().Requests())
	trigger, err := a.Discord().PostMessage(channel, ada, "<@"+a.Discord().BotID()+"> give kudos to bo for the docs")
	if err != nil {
		t.Fatal(err)
	}
	var answer string
	reactions := func() map[string]*discordgo.MessageReactions {
		out := map[string]*discordgo.MessageReactions{}
		for _, m := range a.Discord().Messages(channel) {
			if m.Author != nil && m.Author.ID == a.Discord().BotID() && m.MessageReference != nil && m.MessageReference.MessageID == trigger.ID &&
				strings.HasPrefix(m.Content, "(demo model) ") {
				answer = m.Content
			}
			if m.ID == trigger.ID {
				for _, r := range m.Reactions {
					out[r.Emoji.Name] = r
				}
			}
		}
		return out
	}
	a.WaitFor("the answer and ✅ on the trigger", func() bool {
		r := reactions()
		return answer != "" && r[assistant.ReactDone] != nil && r[assistant.ReactWorking] == nil
	})
	if want := "Done. Kudos to <@" + bo + ">: the docs"; !strings.Contains(answer, want) {
		t.Fatalf("answer = %q, want it to contain %q", answer, want)
	}
	if r := reactions()[assistant.ReactDone]; !r.Me || r.Count != 1 {
		t.Fatalf("✅ on the trigger = %+v, want the bot's alone", r)
	}

	// The reactions over time: the fake's record of the bot's requests.
	var got []string
	for _, r := range a.Discord().Requests() {
		if !strings.HasPrefix(r.Route, "PUT /channels/{channel}/messages/{message}/reactions/") &&
			!strings.HasPrefix(r.Route, "DELETE /channels/{channel}/messages/{message}/reactions/") {
			continue
		}
		if !strings.Contains(r.Path, "/messages/"+trigger.ID+"/") {
			continue
		}
		emoji, err := url.PathUnescape(strings.TrimSuffix(r.Path[strings.LastIndex(r.Path, "/reactions/")+len("/reactions/"):], "/@me"))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %d", r.Method, emoji, r.Status))
	}
	if want := []string{"PUT ⏳ 204", "DELETE ⏳ 204", "PUT ✅ 204"}; !slices.Equal(got, want) {
		t.Fatalf("the bot's reactions on the trigger, in order = %q, want %q", got, want)
	}

	// What the demo model reported: 10 prompt tokens a message, 3
	// completion tokens for a call, a word each for a text.
	reqs := a.Model().Requests()[before:]
	if len(reqs) != 2 {
		t.Fatalf("the demo model got %d requests, want 2 (give_kudos, its result)", len(reqs))
	}
	wantPrompt := 10 * (len(reqs[0].Body.Messages) + len(reqs[1].Body.Messages))
	wantCompletion := 3 + len(strings.SplitAfter(answer, " "))
	a.Stop()

	st, err := store.Open(context.Background(), filepath.Join(a.DataDir(), config.DBFile), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var (
		turnID, iterations, prompt, completion, took int64
		status, model, errKind                       string
	)
	if err := st.Reader().QueryRow(`SELECT id, status, iterations, model_served, prompt_tokens, completion_tokens, duration_ms, error_kind
		FROM kimi_assistant_turns WHERE trigger_message_id = ?`, trigger.ID).
		Scan(&turnID, &status, &iterations, &model, &prompt, &completion, &took, &errKind); err != nil {
		t.Fatal(err)
	}
	if status != assistant.StatusDone || errKind != "" || iterations != 2 || model != app.DemoModelID ||
		prompt != int64(wantPrompt) || completion != int64(wantCompletion) || took <= 0 {
		t.Fatalf("the turn = %s (error %q), %d iterations on %q, %d+%d tokens, %d ms; want done, 2 on %q, %d+%d tokens, some ms",
			status, errKind, iterations, model, prompt, completion, took, app.DemoModelID, wantPrompt, wantCompletion)
	}
	rows, err := st.Reader().Query(`SELECT seq, tool, module, outcome, duration_ms, arguments, result FROM kimi_assistant_tool_calls WHERE turn_id = ?`, turnID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type call struct {
		seq                   int
		tool, module, outcome string
		ms                    int64
		args, result          string
	}
	var calls []call
	for rows.Next() {
		var c call
		if err := rows.Scan(&c.seq, &c.tool, &c.module, &c.outcome, &c.ms, &c.args, &c.result); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 {
		t.Fatalf("tool calls = %+v, want give_kudos alone", calls)
	}
	k := calls[0]
	if k.seq != 1 || k.tool != kudos.ToolGive || k.module != kudos.Name || k.outcome != string(assistant.OutcomeOK) ||
		k.ms > took || !strings.Contains(k.args, bo) || !strings.Contains(k.result, "Kudos to <@"+bo+">") {
		t.Fatalf("the tool call = %+v, want #1 %s of %s, ok, within the turn's %d ms, %s in its arguments, the kudos in its result",
			k, kudos.ToolGive, kudos.Name, took, bo)
	}
}
