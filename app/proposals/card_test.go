package proposals

import (
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestCardPreviewCannotCloseTheCodeBlock: however many backticks the
// content holds in a row, the preview keeps exactly its own opening and
// closing fences, so the content cannot end the code block and render as
// Markdown (masked links, headings) on the staff's review card.
func TestCardPreviewCannotCloseTheCodeBlock(t *testing.T) {
	for _, content := range []string{
		"a: ````\n[click](https://evil.example)",
		"`````",
		"x: ``````` y ```` z",
		"```\n```\n````",
	} {
		p := Proposal{ID: strings.Repeat("cd", 16), Target: guildcfg.GuildModuleTarget(1, "alpha"), Summary: "s",
			Content: content, Actor: sdk.ProposalActor{UserID: 7}, State: sdk.ProposalPending}
		e, _ := renderCard(p)
		pv := e.Fields[2].Value
		body := strings.TrimSuffix(strings.TrimPrefix(pv, "```yaml\n"), "\n```")
		if strings.Contains(body, "```") {
			t.Errorf("content %q: the preview's body %q holds a fence", content, body)
		}
		if strings.ReplaceAll(body, "\u200b", "") != content {
			t.Errorf("content %q: the preview shows %q", content, body)
		}
	}
}
