package llmfake

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The tools the demo model's scripts call, by name: the bundled modules'
// (kudos, hello) and the assistant's browse_tools. They are names in the
// request, not imports: llmfake knows nothing of Kimi's modules.
const (
	demoGiveKudos  = "give_kudos"
	demoLeaderbrd  = "kudos_leaderboard"
	demoHello      = "hello_member"
	demoBrowse     = "browse_tools"
	demoPrefix     = "(demo model) "
	demoSignature  = "I am Kimi's scripted demo model: I do not reach the network."
	demoPointToCfg = "Configure a real provider on /assistant for real answers."
)

var (
	// demoKudosRE reads "kudos to <name> [for <reason>]".
	demoKudosRE = regexp.MustCompile(`(?i)\bkudos\s+to\s+@?([\p{L}\p{N}_.\-]+)(?:\s+for\s+(.+?))?[.!?]*$`)
	// demoBoardRE reads a question about the most kudos or the leaderboard.
	demoBoardRE = regexp.MustCompile(`(?i)\b(most\s+kudos|leaderboard)\b`)
	// demoHelloRE reads a greeting.
	demoHelloRE = regexp.MustCompile(`(?i)^\W*(hello|hi|hey)\b`)
)

// Demo is demo mode's script. It reads what the request offers and says:
//
//   - "… kudos to <name> for <reason>" calls give_kudos with the member's
//     id, read from the system prompt's "<name> (<@id>)" (the demo guild's
//     server instructions list its members so);
//   - "hello" (or hi, hey) calls hello_member;
//   - "who has the most kudos?" (or "leaderboard") calls browse_tools with
//     load ["kudos_leaderboard"] unless that tool is already offered, then
//     kudos_leaderboard;
//   - after a tool's result, a short answer quoting it;
//   - anything else, or a tool not offered, gets a short answer naming the
//     demo model, quoting the message and pointing to /assistant.
func Demo() []Step {
	return []Step{{Repeat: true, Reply: demoReply}}
}

func demoReply(r Recorded) Plan {
	b := r.Body
	if last := b.Last(); last.Role == "tool" {
		return demoAfterTool(b, last)
	}
	text := demoTrigger(b)
	offered := func(name string) bool { return slices.Contains(b.ToolNames(), name) }
	switch {
	case demoKudosRE.MatchString(text) && offered(demoGiveKudos):
		m := demoKudosRE.FindStringSubmatch(text)
		id := demoMemberID(b, m[1])
		if id == "" {
			return demoText(b, "I cannot find a member named “"+m[1]+"” in this server's instructions, so I gave no kudos. "+demoSignature)
		}
		reason := strings.TrimSpace(m[2])
		if reason == "" {
			reason = "being great"
		}
		args, _ := json.Marshal(map[string]string{"user": "<@" + id + ">", "reason": reason})
		return demoCall(b, demoGiveKudos, string(args))
	case demoBoardRE.MatchString(text) && offered(demoLeaderbrd):
		return demoCall(b, demoLeaderbrd, `{}`)
	case demoBoardRE.MatchString(text) && offered(demoBrowse):
		return demoCall(b, demoBrowse, `{"load":["`+demoLeaderbrd+`"]}`)
	case demoHelloRE.MatchString(text) && offered(demoHello):
		return demoCall(b, demoHello, `{}`)
	}
	if text == "" {
		return demoText(b, "Hello! "+demoSignature+" "+demoPointToCfg)
	}
	if runes := []rune(text); len(runes) > 80 {
		text = string(runes[:80]) + "…"
	}
	return demoText(b, "You said: “"+text+"”. "+demoSignature+" "+demoPointToCfg)
}

// demoAfterTool answers a tool's result: browse_tools that loaded the
// leaderboard is followed by its call, any other result is quoted.
func demoAfterTool(b Body, last Message) Plan {
	name := ""
	for _, m := range b.Messages {
		for _, c := range m.ToolCalls {
			if c.ID == last.ToolCallID {
				name = c.Function.Name
			}
		}
	}
	result := demoResult(last.Content)
	switch name {
	case demoBrowse:
		if slices.Contains(b.ToolNames(), demoLeaderbrd) {
			return demoCall(b, demoLeaderbrd, `{}`)
		}
		return demoText(b, "The kudos leaderboard is not available here. "+demoSignature)
	case demoGiveKudos:
		return demoText(b, "Done. "+result)
	case demoLeaderbrd:
		return demoText(b, "Here is who has the most kudos.\n"+result)
	}
	return demoText(b, name+" answered: "+result)
}

// demoResult is a tool result's text: the envelope's "result" or "error"
// string when there is one, else the content as sent.
func demoResult(content string) string {
	var env map[string]any
	if json.Unmarshal([]byte(content), &env) == nil {
		for _, k := range []string{"result", "error"} {
			if s, ok := env[k].(string); ok {
				return s
			}
		}
	}
	return strings.TrimSpace(content)
}

// demoTrigger is the last user message's text without its "Name: "
// prefix (the assistant writes people's messages as "Name: text").
func demoTrigger(b Body) string {
	last := ""
	for _, m := range b.Messages {
		if m.Role == "user" {
			last = m.Content
		}
	}
	last = strings.TrimSpace(last)
	if i := strings.Index(last, ": "); i > 0 && !strings.ContainsAny(last[:i], "\n") {
		last = strings.TrimSpace(last[i+2:])
	}
	return last
}

// demoMemberID finds name's id in the system messages' "<name> (<@id>)",
// case-insensitively; "" when none lists it.
func demoMemberID(b Body, name string) string {
	re := regexp.MustCompile(`(?i)(?:^|[^\p{L}\p{N}_])@?` + regexp.QuoteMeta(name) + `\s*\(<@!?(\d{1,20})>\)`)
	for _, m := range b.Messages {
		if m.Role != "system" {
			continue
		}
		if got := re.FindStringSubmatch(m.Content); got != nil {
			return got[1]
		}
	}
	return ""
}

func demoCall(b Body, name, args string) Plan {
	p := ToolCall("demo-call-"+name+"-"+strconv.Itoa(len(b.Messages)), name, args)
	p.Reasoning = []string{"The demo script calls " + name + "."}
	p.Usage = Usage{Prompt: 10 * len(b.Messages), Completion: 3}
	return p
}

func demoText(b Body, text string) Plan {
	words := strings.SplitAfter(demoPrefix+text, " ")
	return Plan{Content: words, Usage: Usage{Prompt: 10 * len(b.Messages), Completion: len(words)}}
}
