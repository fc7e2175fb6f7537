package admin

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/proposals"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/kudos"
)

// demoRoleVars is demoVars with the demo guild's roles, by name.
func demoRoleVars(t *testing.T, h *harness) {
	t.Helper()
	demoVars(t, h)
	g, err := h.srv.opts.Demo.DemoGuild(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range g.Roles {
		h.vars[r.Name] = r.ID
	}
}

// demoBotKnowsRoles waits until the demo appliance's bot has the demo
// guild's roles in its state (it connects in the background).
func demoBotKnowsRoles(t *testing.T, h *harness) {
	t.Helper()
	demoRoleVars(t, h)
	bot, ok := h.srv.opts.Discord.(*discord.Bot)
	if !ok {
		t.Fatal("the harness has no bot")
	}
	gid, _ := strconv.ParseUint(demoGuildID(t, h), 10, 64)
	rid, _ := strconv.ParseUint(h.vars["moderators"], 10, 64)
	waitUntil(t, "the bot knows the demo guild's roles", func() bool {
		_, ok := bot.Role(gid, rid)
		return ok
	})
}

const mentionPost = "hi <@{bo}>, see <#{help}> and ask <@&{moderators}> or <@42>: **bold** _it_ `<b>code</b>` <script>x</script>"

// mentionScenarios: the demo chat shows a message's mentions as names and
// its markdown as Discord does, everything else escaped.
var mentionScenarios = []scenario{
	{name: "demo: mentions show as names (the demo guild's), markdown as Discord's", method: "POST", url: "/demo/messages",
		opts: demo, signedIn: true, setup: demoRoleVars, form: demoPost(mentionPost), wantStatus: http.StatusSeeOther,
		wantAudit: []string{ActionDemoMessagePost},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			if got := demoMessages(t, h, "general"); len(got) != 1 || got[0] != "ada: "+h.expand(mentionPost) {
				t.Fatalf("general = %q, want the text as posted", got)
			}
			page := c.get("/demo?channel=" + h.vars["general"])
			for _, want := range []string{
				`<span class="mention" title="` + h.vars["bo"] + `" data-testid="mention-user">@bo</span>`,
				`<span class="mention" title="` + h.vars["help"] + `" data-testid="mention-channel">#help</span>`,
				`<span class="mention" title="` + h.vars["moderators"] + `" data-testid="mention-role">@moderators</span>`,
				`<span class="mention mention-unknown" title="42" data-testid="mention-user">@unknown user 42</span>`,
				"<strong>bold</strong>", "<em>it</em>", `<code class="dt-code">&lt;b&gt;code&lt;/b&gt;</code>`,
				"&lt;script&gt;x&lt;/script&gt;",
			} {
				if !strings.Contains(page.body, want) {
					t.Errorf("the chat lacks %s", want)
				}
			}
			if strings.Contains(page.body, "<script>x") || strings.Contains(page.body, "&lt;@"+h.vars["bo"]) {
				t.Errorf("the chat shows raw text:\n%s", page.body)
			}
		}},
	{name: "demo: with the bot connected a role's chip has its colour", method: "POST", url: "/demo/messages",
		opts: []func(*Options){withDemoAppliance}, signedIn: true, setup: demoBotKnowsRoles, form: demoPost("ask <@&{moderators}> or <@{cy}>"),
		wantStatus: http.StatusSeeOther, wantAudit: []string{ActionDemoMessagePost},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			page := c.get("/demo?channel=" + h.vars["general"])
			for _, want := range []string{`fill="#3498db"></circle></svg>@moderators</span>`, `data-testid="mention-user">@cy</span>`} {
				if !strings.Contains(page.body, want) {
					t.Errorf("the chat lacks %s", want)
				}
			}
		}},
	{name: "tasks: the template and a preview show mentions as names", method: http.MethodPost, url: "/tasks/{task}/preview",
		form: url.Values{"channel": {""}}, signedIn: true, setup: mentionTask, wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains: []string{
			`<pre class="break" data-testid="task-content">ping <span class="mention" title="{staff}" data-testid="mention-user">@staffer</span> in ` +
				`<span class="mention" title="{general}" data-testid="mention-channel">#general</span>, ` +
				`<span class="mention mention-unknown" title="77" data-testid="mention-user">@unknown user 77</span> **as typed**</pre>`,
			`<pre class="break" data-testid="task-preview-chunk">ping <span class="mention" title="{staff}" data-testid="mention-user">@staffer</span>`,
		},
		wantNotContains: []string{"&lt;@{staff}&gt;"}},
	{name: "proposals: a summary's mentions show as names in the inbox and on the page", method: http.MethodGet, url: "/proposals",
		signedIn: true, setup: mentionProposal, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="proposal-open-{id}">Post the digest in <span class="mention" title="{general}" data-testid="mention-channel">#general</span> for ` +
			`<span class="mention" title="{staff}" data-testid="mention-user">@staffer</span></a>`},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			page := c.get("/proposals/" + h.vars["id"])
			want := h.expand(`data-testid="proposal-summary-text">Post the digest in <span class="mention" title="{general}" data-testid="mention-channel">#general</span>`)
			if !strings.Contains(page.body, want) {
				t.Fatalf("the proposal's page lacks %s", want)
			}
		}},
	{name: "audit: a reason's mentions show as names, the guild's the entry names", method: http.MethodGet, url: "/audit",
		signedIn: true, setup: mentionAudit, wantStatus: http.StatusOK,
		wantContains: []string{`(not now, ask <span class="mention" title="{staff}" data-testid="mention-user">@staffer</span> in ` +
			`<span class="mention" title="{general}" data-testid="mention-channel">#general</span> &lt;b&gt;)`},
		wantNotContains: []string{"&lt;@{staff}&gt;"}},
}

// mentionAudit writes a rejection's audit row in testGuild whose reason
// mentions the staffer and #general (the bot connected and knowing them).
func mentionAudit(t *testing.T, h *harness) {
	t.Helper()
	proposalGuild(t, h)
	staff, _ := strconv.ParseUint(h.vars["staff"], 10, 64)
	waitUntil(t, "the bot knows the staffer", func() bool { _, ok := h.bot.Member(testGuild, staff); return ok })
	if err := h.st.Audit(context.Background(), store.AuditEntry{At: time.Now(), Actor: "discord:" + h.vars["staff"], Action: proposals.ActionReject,
		Target: "proposal:p1", Detail: h.expand("guild:42:kudos p1: revision a -> b (not now, ask <@{staff}> in <#{general}> <b>)")}); err != nil {
		t.Fatal(err)
	}
}

// mentionProposal proposes kudos settings in testGuild with a summary
// that mentions #general and the staffer, as {id}.
func mentionProposal(t *testing.T, h *harness) {
	t.Helper()
	proposalGuild(t, h)
	staff, _ := strconv.ParseUint(h.vars["staff"], 10, 64)
	waitUntil(t, "the bot knows the staffer", func() bool { _, ok := h.bot.Member(testGuild, staff); return ok })
	h.propose(t, kudos.Name, "---\ndigest_channel_id: 123456789012345678\n---\n", h.expand("Post the digest in <#{general}> for <@{staff}>"))
}

// mentionTask connects the bot to testGuild (42, proposalGuild's) and
// seeds a task there whose template mentions its staffer, #general and an
// unknown user, as {task}.
func mentionTask(t *testing.T, h *harness) {
	t.Helper()
	proposalGuild(t, h)
	staff, _ := strconv.ParseUint(h.vars["staff"], 10, 64)
	waitUntil(t, "the bot knows the staffer", func() bool { _, ok := h.bot.Member(testGuild, staff); return ok })
	seedTask(taskDef("Standup", h.expand("ping <@{staff}> in <#{general}>, <@77> **as typed**")))(t, h)
}

// TestMentionPages runs the mention scenario table.
func TestMentionPages(t *testing.T) { runScenarios(t, mentionScenarios) }

// TestGuildMentions: the bot's directory names the demo guild's members,
// channels and roles (with its colour); a guild of 0 names only channels;
// the demo guild's lists name what the directory does not know.
func TestGuildMentions(t *testing.T) {
	h := newHarness(t, withDemoAppliance)
	demoBotKnowsRoles(t, h)
	gid, _ := strconv.ParseUint(demoGuildID(t, h), 10, 64)
	id := func(name string) uint64 { n, _ := strconv.ParseUint(h.vars[name], 10, 64); return n }
	g, err := h.srv.opts.Demo.DemoGuild(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bot := h.srv.mentions(gid)
	waitUntil(t, "the bot knows ada", func() bool { _, ok := bot.MentionUser(id("ada")); return ok })
	tests := []struct {
		name     string
		kind     string
		id       uint64
		guild    uint64
		fallback bool
		want     string
		color    int
		ok       bool
	}{
		{"member", "user", id("ada"), gid, false, "ada", 0, true},
		{"channel", "channel", id("help"), gid, false, "help", 0, true},
		{"channel without a guild", "channel", id("help"), 0, false, "help", 0, true},
		{"role", "role", id("moderators"), gid, false, "moderators", 0x3498db, true},
		{"member without a guild", "user", id("ada"), 0, false, "", 0, false},
		{"role without a guild", "role", id("moderators"), 0, false, "", 0, false},
		{"member without a guild, the demo's lists", "user", id("ada"), 0, true, "ada", 0, true},
		{"role without a guild, the demo's lists (no colour)", "role", id("regulars"), 0, true, "regulars", 0, true},
		{"unknown", "user", 42, gid, true, "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := h.srv.mentions(tt.guild)
			if tt.fallback {
				m = fallbackMentions{first: m, then: newDemoMentions(g)}
			}
			var (
				name  string
				color int
				ok    bool
			)
			switch tt.kind {
			case "user":
				name, ok = m.MentionUser(tt.id)
			case "channel":
				name, ok = m.MentionChannel(tt.id)
			case "role":
				name, color, ok = m.MentionRole(tt.id)
			}
			if name != tt.want || color != tt.color || ok != tt.ok {
				t.Fatalf("= %q %#x %v, want %q %#x %v", name, color, ok, tt.want, tt.color, tt.ok)
			}
		})
	}
}

// TestMentionsWithoutBot: no bot, no names (the renderer shows ids).
func TestMentionsWithoutBot(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Discord = nil })
	if m := h.srv.mentions(1); m != nil {
		t.Fatalf("mentions = %#v, want nil", m)
	}
	if m := h.srv.mentionsIn("1"); m != nil {
		t.Fatalf("mentionsIn = %#v, want nil", m)
	}
}
