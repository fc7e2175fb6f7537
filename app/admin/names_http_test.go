package admin

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/kudos"
)

// The pages that showed Discord ids name them: the harness's real bot over
// its fakediscord knows guild 42 ("Proposals guild"), #general, #rules in
// the Info category and the member staffer; guild 77, user 9001 and channel
// 100 are ids it does not know.

// unknownGuild is a configured guild the bot is not in.
const unknownGuild = 77

// namesFixture connects the bot in testGuild with a channel in a category,
// a guild document of a guild the bot is not in and {rules}, {staff},
// {general}.
func namesFixture(t *testing.T, h *harness) {
	t.Helper()
	proposalGuild(t, h)
	g := strconv.Itoa(testGuild)
	cat := h.fake.AddChannel(fakediscord.ChannelSpec{GuildID: g, Name: "Info", Type: discordgo.ChannelTypeGuildCategory})
	rules := h.fake.AddChannel(fakediscord.ChannelSpec{GuildID: g, Name: "rules", ParentID: cat.ID})
	h.vars["rules"] = rules.ID
	id, _ := strconv.ParseUint(rules.ID, 10, 64)
	discordWait(t, "the bot sees #rules", func() bool { c, ok := h.bot.Channel(id); return ok && c.Category == "Info" })
	// A member the bot has not seen is fetched in the background on the
	// first lookup, and known from then on.
	staff, _ := strconv.ParseUint(h.vars["staff"], 10, 64)
	discordWait(t, "the bot knows staffer", func() bool { _, ok := h.bot.Member(testGuild, staff); return ok })
	h.writeDocument(guildcfg.GuildTarget(unknownGuild), "---\nbot_active: false\n---\n")
}

// namesWithAudit adds audit rows by a Discord member of the guild, one by
// a user the bot does not know and one naming #rules.
func namesWithAudit(t *testing.T, h *harness) {
	t.Helper()
	namesFixture(t, h)
	ctx := context.Background()
	for _, e := range []store.AuditEntry{
		{Actor: "discord:" + h.vars["staff"], Action: "proposal.approve", Target: guildcfg.GuildModuleTarget(testGuild, kudos.Name).String()},
		{Actor: "discord:9001", Action: "proposal.reject", Target: guildcfg.GuildTarget(unknownGuild).String()},
		{Actor: testUser, Action: ActionDemoMessagePost, Target: h.vars["rules"]},
	} {
		if err := h.st.Audit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
}

// namesWithTask adds a task of testGuild owned by staffer posting to a
// channel the bot does not see, as {task}.
func namesWithTask(t *testing.T, h *harness) {
	t.Helper()
	namesFixture(t, h)
	def := taskDef("Named", "hi")
	def.OwnerID, _ = strconv.ParseUint(h.vars["staff"], 10, 64)
	seedTask(def)(t, h)
}

// namesWithProposal adds a proposal by staffer in #general as {id}.
func namesWithProposal(t *testing.T, h *harness) {
	t.Helper()
	namesFixture(t, h)
	h.propose(t, kudos.Name, "---\ndigest_channel_id: 123456789012345678\n---\n", "Named proposal")
}

// namesWithResults adds a kudos subscription of testGuild.
func namesWithResults(t *testing.T, h *harness) {
	t.Helper()
	namesFixture(t, h)
	h.addSubscription(t, resultKey)
}

const (
	guildNamed   = `title="Proposals guild · guild id 42"`
	staffNamed   = `title="staffer · member id {staff}"`
	generalNamed = `title="#general · channel id {general}"`
)

var nameScenarios = []scenario{
	{name: "names: /guilds names the bot's guild and marks the one it does not know", method: "GET", url: "/guilds", signedIn: true,
		setup: namesFixture, wantStatus: http.StatusOK,
		wantContains:    []string{guildNamed, `<span class="name-text">Proposals guild</span>`, `>unknown guild 77</span>`, `title="guild id 77"`},
		wantNotContains: []string{`<code class="break">42</code>`}},
	{name: "names: a guild's page is titled with its name, the id in the title", method: "GET", url: "/guilds/42", signedIn: true,
		setup: namesFixture, wantStatus: http.StatusOK,
		wantContains: []string{`<h1 data-testid="page-title" ` + guildNamed + ` data-id="42">`, "<title>Proposals guild"}},
	{name: "names: a guild's history names the guild", method: "GET", url: "/guilds/42/history", signedIn: true,
		setup: namesFixture, wantStatus: http.StatusOK,
		wantContains: []string{"Proposals guild · guild:42", "<title>Server setup history · Proposals guild"}, wantNotContains: []string{"Guild 42 ·"}},
	{name: "names: the history of a guild the bot is not in keeps its id", method: "GET", url: "/guilds/77/history", signedIn: true,
		setup: namesFixture, wantStatus: http.StatusOK, wantContains: []string{"Guild 77 · guild:77"}},
	{name: "names: a guild the bot is not in keeps its id as the title", method: "GET", url: "/guilds/77", signedIn: true,
		setup: namesFixture, wantStatus: http.StatusOK, wantContains: []string{`<h1 data-testid="page-title">Guild 77</h1>`}},
	{name: "names: /discord names its guilds", method: "GET", url: "/discord", signedIn: true,
		setup: namesFixture, wantStatus: http.StatusOK, wantContains: []string{guildNamed, `data-testid="discord-guild-42"`},
		wantNotContains: []string{`<code class="muted small">42</code>`}},
	{name: "names: a module's page names the guilds with its settings", method: "GET", url: "/modules/" + kudos.Name, signedIn: true,
		opts: mods, setup: namesFixture, wantStatus: http.StatusOK, wantContains: []string{guildNamed, `title="guild id 77"`}},
	{name: "names: the audit log names Discord actors and targets", method: "GET", url: "/audit", signedIn: true,
		setup: namesWithAudit, wantStatus: http.StatusOK,
		wantContains: []string{`title="staffer · user id {staff}"`, guildNamed, "· " + kudos.Name + " settings", `>unknown user 9001</span>`,
			`>unknown guild 77</span>`, `title="#rules in Info · channel id {rules}"`},
		wantNotContains: []string{">discord:{staff}<", ">guild:42:kudos<"}},
	{name: "names: /tasks names the task's guild", method: "GET", url: "/tasks", signedIn: true,
		setup: namesWithTask, wantStatus: http.StatusOK, wantContains: []string{`data-testid="task-row-{task}"`, guildNamed}},
	{name: "names: a task's page names its guild, owner and destinations", method: "GET", url: "/tasks/{task}", signedIn: true,
		setup: namesWithTask, wantStatus: http.StatusOK,
		wantContains: []string{guildNamed, staffNamed, `>unknown channel 100</span>`, `title="channel id 100"`}},
	{name: "names: /results names the subscription's guild", method: "GET", url: "/results", signedIn: true,
		setup: namesWithResults, wantStatus: http.StatusOK, wantContains: []string{guildNamed},
		wantNotContains: []string{`<button type="button" class="name-copy"`}}, // not inside the row's link
	{name: "names: a subscription's page names its guild", method: "GET", url: "/results/kudos/digest/42", signedIn: true,
		setup: namesWithResults, wantStatus: http.StatusOK, wantContains: []string{guildNamed, `data-copy="42"`}},
	{name: "names: /proposals names the proposer and the target's guild", method: "GET", url: "/proposals", signedIn: true,
		setup: namesWithProposal, wantStatus: http.StatusOK, wantContains: []string{staffNamed, guildNamed},
		wantNotContains: []string{"<code>&lt;@{staff}&gt;</code>"}},
	{name: "names: a proposal's page names its proposer, channel and target", method: "GET", url: "/proposals/{id}", signedIn: true,
		setup: namesWithProposal, wantStatus: http.StatusOK,
		wantContains:    []string{staffNamed, generalNamed, "kudos settings in Proposals guild", `data-testid="proposal-event-created"`},
		wantNotContains: []string{"<code>&lt;@{staff}&gt;</code>", "<code>&lt;#{general}&gt;</code>", "settings in guild 42"}},
}

func TestNamePages(t *testing.T) { runScenarios(t, nameScenarios) }
