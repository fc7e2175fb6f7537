package admin

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/discord"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/modules/kudos"
)

// The pickers: channel, role and member fields over the bot's directory,
// and the member search behind the member picker.

// pickerGuild puts testGuild (42) in the harness's fake — #rules outside a
// category, #general and #news in "Text", the stage channel Town hall (no
// text channel) in "Stages", the roles Moderators and Regulars, the members ada and one
// whose shown name holds markup — connects the bot, waits until it knows
// both members, and names them all in h.vars.
func pickerGuild(t *testing.T, h *harness) {
	t.Helper()
	g := h.fake.AddGuild(fakediscord.GuildSpec{ID: strconv.Itoa(testGuild), Name: "Picker guild"})
	h.vars["rules"] = h.fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "rules"}).ID
	text := h.fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "Text", Type: discordgo.ChannelTypeGuildCategory}).ID
	h.vars["general"] = h.fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "general", ParentID: text}).ID
	h.vars["news"] = h.fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "news", ParentID: text}).ID
	stages := h.fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "Stages", Type: discordgo.ChannelTypeGuildCategory}).ID
	h.vars["stage"] = h.fake.AddChannel(fakediscord.ChannelSpec{GuildID: g.ID, Name: "Town hall", ParentID: stages, Type: discordgo.ChannelTypeGuildStageVoice}).ID
	h.vars["mods"] = h.fake.AddRole(g.ID, discordgo.Role{Name: "Moderators", Position: 2}).ID
	h.vars["regs"] = h.fake.AddRole(g.ID, discordgo.Role{Name: "Regulars", Position: 1}).ID
	ada := h.fake.AddUser(discordgo.User{Username: "ada", GlobalName: "Ada Lovelace"})
	h.fake.AddMember(g.ID, ada.ID)
	evil := h.fake.AddUser(discordgo.User{Username: "adder", GlobalName: `Ad<b>der</b>"`})
	h.fake.AddMember(g.ID, evil.ID)
	h.vars["ada"], h.vars["evil"] = ada.ID, evil.ID
	startBot(withToken(""))(t, h)
	discordWait(t, "the bot in the picker guild with its channels and roles", func() bool {
		if h.bot.Status().State != discord.StateConnected {
			return false
		}
		_, ok := h.bot.Role(testGuild, parseUint(h.vars["regs"]))
		return ok && len(h.bot.Channels(testGuild)) == 4
	})
	for _, id := range []string{ada.ID, evil.ID} {
		// A miss starts the member's background fetch.
		discordWait(t, "member "+id+" known", func() bool { _, ok := h.bot.Member(testGuild, parseUint(id)); return ok })
	}
}

func parseUint(s string) uint64 { n, _ := strconv.ParseUint(s, 10, 64); return n }

// withPickerGuild is pickerGuild with a server setup that chooses #news,
// Moderators, ada and ids the bot cannot see.
func withPickerGuild(t *testing.T, h *harness) {
	t.Helper()
	pickerGuild(t, h)
	h.writeDocument(guildT, "---\nbot_active: true\nstaff_user_ids: ["+h.vars["ada"]+", 5550001]\nstaff_role_ids: ["+h.vars["mods"]+", 5550002]\n"+
		"allowed_channel_ids: ["+h.vars["news"]+", 5550003]\nproposal_channel_id: "+h.vars["stage"]+"\n---\n")
}

var pickerScenarios = []scenario{
	// The member search.
	{name: "member search signed out goes to login", method: http.MethodGet, url: "/guilds/42/members/search?q=ad",
		wantStatus: http.StatusSeeOther, wantLocation: "/login?next=%2Fguilds%2F42%2Fmembers%2Fsearch%3Fq%3Dad"},
	{name: "member search of a malformed guild", method: http.MethodGet, url: "/guilds/+42/members/search?q=ad", signedIn: true,
		wantStatus: http.StatusNotFound},
	{name: "member search of a guild the bot does not know", method: http.MethodGet, url: "/guilds/43/members/search?q=ad", signedIn: true,
		setup: pickerGuild, wantStatus: http.StatusNotFound},
	{name: "member search with a query too long", method: http.MethodGet, url: "/guilds/42/members/search?q=" + strings.Repeat("a", 101), signedIn: true,
		setup: pickerGuild, wantStatus: http.StatusBadRequest},
	{name: "member search finds by prefix, escaped", method: http.MethodGet, url: "/guilds/42/members/search?q=AD", signedIn: true,
		setup: pickerGuild, wantStatus: http.StatusOK,
		wantContains: []string{`<option value="{ada}">Ada Lovelace (@ada)</option>`,
			`<option value="{evil}">Ad&lt;b&gt;der&lt;/b&gt;&#34; (@adder)</option>`},
		wantNotContains: []string{"<b>"}},
	{name: "member search matches only a prefix", method: http.MethodGet, url: "/guilds/42/members/search?q=love", signedIn: true,
		setup: pickerGuild, wantStatus: http.StatusOK, wantNotContains: []string{"<option"}},

	// The server-setup form's pickers.
	{name: "guild page offers channels by category, roles and chosen members", method: http.MethodGet, url: "/guilds/42", signedIn: true,
		setup: withPickerGuild, wantStatus: http.StatusOK,
		wantContains: []string{
			`<select id="gs-channels-choose" name="allowed_channel_ids" data-testid="field-allowed_channel_ids" multiple`,
			// An id the bot cannot see is kept, chosen, and marked.
			`<option value="5550003" selected data-testid="picker-unknown">5550003 (not visible to the bot)</option>`,
			`data-testid="unknown-allowed_channel_ids">5550003: not visible to the bot</p>`,
			// Members by name, searched, never listed.
			`<option value="5550002" selected data-testid="picker-unknown">5550002 (not visible to the bot)</option>`,
			`data-search="/guilds/42/members/search"`, `<option value="{ada}" selected>Ada Lovelace (@ada)</option>`,
			`<option value="5550001" selected data-testid="picker-unknown">`,
		},
		check: func(t *testing.T, h *harness, _ *client, res *response) {
			t.Helper()
			body := squash(res.body)
			for _, want := range []string{
				// Allowed channels: every channel, grouped by category in
				// Discord's order; #news chosen.
				`<option value="{rules}">#rules</option><optgroup label="Text"><option value="{general}">#general</option><option value="{news}" selected>#news</option></optgroup><optgroup label="Stages"><option value="{stage}">#Town hall</option></optgroup>`,
				// The proposal channel takes text channels only: the
				// chosen stage is kept, marked.
				`<optgroup label="Text"><option value="{general}">#general</option><option value="{news}">#news</option></optgroup><option value="{stage}" selected data-testid="picker-unknown">#Town hall (not a text channel)</option></select>`,
				// Roles, highest first, @everyone last.
				`<option value="{mods}" selected>@Moderators</option><option value="{regs}">@Regulars</option><option value="42">@everyone</option>`,
			} {
				if want = h.expand(want); !strings.Contains(body, want) {
					t.Errorf("page lacks %s", want)
				}
			}
			// The proposal channel's select offers no voice channel
			// (only the kept one) and the member picker lists no member
			// that was not chosen.
			sel := between(res.body, `id="gs-proposal-channel-choose"`, `</select>`)
			if strings.Contains(sel, `<option value="`+h.vars["stage"]+`">`) || !strings.Contains(sel, `#general`) {
				t.Errorf("proposal channel select: %s", sel)
			}
			if strings.Contains(between(res.body, `id="gs-staff-users-choose"`, `</datalist>`), h.vars["evil"]) {
				t.Error("the member picker lists a member nobody chose")
			}
		}},

	// A module's channel field (kudos' digest channel refers to one).
	{name: "module settings offer text channels for a channel field", method: http.MethodGet, url: "/guilds/42", signedIn: true,
		setup: withPickerGuild, wantStatus: http.StatusOK,
		wantContains: []string{`<select id="ms-` + kudos.Name + `-digest_channel_id-choose" name="setting.digest_channel_id"`},
		check: func(t *testing.T, h *harness, _ *client, res *response) {
			t.Helper()
			sel := squash(between(res.body, `id="ms-`+kudos.Name+`-digest_channel_id-choose"`, `</select>`))
			want := h.expand(`<option value="">None</option><option value="{rules}">#rules</option><optgroup label="Text"><option value="{general}">#general</option>`)
			if !strings.Contains(sel, want) || strings.Contains(sel, h.vars["stage"]) {
				t.Errorf("digest channel select lacks %s or offers the stage: %s", want, sel)
			}
		}},

	// The task form: with one active guild it is chosen, its text
	// channels offered, its members searched.
	{name: "task form preselects the only guild", method: http.MethodGet, url: "/tasks/new", signedIn: true,
		setup: withPickerGuild, wantStatus: http.StatusOK,
		wantContains: []string{`<option value="42" selected>Picker guild</option>`,
			`data-search="/guilds/42/members/search"`, `id="task-destinations-choose"`},
		check: func(t *testing.T, h *harness, _ *client, res *response) {
			t.Helper()
			sel := squash(between(res.body, `id="task-destinations-choose"`, `</select>`))
			want := h.expand(`<option value="{rules}">#rules</option><optgroup label="Text"><option value="{general}">#general</option><option value="{news}">#news</option></optgroup>`)
			if !strings.Contains(sel, want) || strings.Contains(sel, h.vars["stage"]) {
				t.Errorf("destinations lack %s or offer the stage: %s", want, sel)
			}
		}},
	{name: "task form picks its log channel, mentioned members and roles", method: http.MethodGet, url: "/tasks/new", signedIn: true,
		setup: withPickerGuild, wantStatus: http.StatusOK,
		wantContains: []string{`id="task-log-channel-choose"`, `id="task-mention-roles-choose"`, `id="task-mention-users-choose"`,
			`data-search="/guilds/42/members/search"`},
		wantNotContains: []string{`Users it may mention (ids)`, `Roles it may mention (ids)`},
		check: func(t *testing.T, h *harness, _ *client, res *response) {
			t.Helper()
			logSel := squash(between(res.body, `id="task-log-channel-choose"`, `</select>`))
			if want := h.expand(`<option value="{general}">#general</option>`); !strings.Contains(logSel, want) || strings.Contains(logSel, h.vars["stage"]) {
				t.Errorf("log channel select lacks %s or offers the stage: %s", want, logSel)
			}
			if roles := between(res.body, `id="task-mention-roles-choose"`, `</select>`); !strings.Contains(roles, "multiple") || !strings.Contains(roles, "@everyone") {
				t.Errorf("mention roles select is no multi-select of the guild's roles: %s", roles)
			}
		}},
	{name: "a refused task keeps its log channel and mentions, an unknown one marked", method: http.MethodPost, url: "/tasks", signedIn: true,
		setup: withPickerGuild, form: taskForm(func(v url.Values) {
			v.Del(tasks.FieldName)
			v[tasks.FieldLogChannel] = []string{"{news}", ""}
			v[tasks.FieldMentionUsers] = []string{"{ada}", "5550007"}
		}),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{`<option value="{news}" selected>#news</option>`, `<option value="{ada}" selected>Ada Lovelace (@ada)</option>`,
			`<option value="5550007" selected data-testid="picker-unknown">5550007 (not visible to the bot)</option>`},
		check: wantTaskCount(0)},
	{name: "a refused task keeps its picked destinations, an unknown one marked", method: http.MethodPost, url: "/tasks", signedIn: true,
		setup: withPickerGuild, form: taskForm(func(v url.Values) {
			v.Del(tasks.FieldName)
			v[tasks.FieldDestinations] = []string{"{news}", "5550009"}
			v[tasks.FieldOwner] = []string{"{ada}", ""}
		}),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{`<option value="{news}" selected>#news</option>`,
			`<option value="5550009" selected data-testid="picker-unknown">5550009 (not visible to the bot)</option>`,
			`<option value="{ada}" selected>Ada Lovelace (@ada)</option>`},
		check: wantTaskCount(0)},
}

// squash drops the white space templ leaves between tags.
func squash(s string) string { return squashRE.ReplaceAllString(s, "><") }

var squashRE = regexp.MustCompile(`>\s+<`)

// between is s from the first from to the next to after it ("" without).
func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	in, _, _ := strings.Cut(rest, to)
	return in
}

func TestPickerScenarios(t *testing.T) { runScenarios(t, pickerScenarios) }
