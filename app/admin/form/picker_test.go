package form

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/tasks"
	"github.com/kimiapp/kimi/modules/sdk"
)

// A picker posts its name once per chosen option and once more for its
// search box; the forms read them all back as ids, one per line.
func TestPickersParse(t *testing.T) {
	tests := []struct {
		name string
		form url.Values
		// want is the form's fields as parsed: staff roles, allowed
		// channels, proposal channel, destinations.
		roles, channels, proposal, dest string
	}{
		{name: "nothing chosen", form: url.Values{GuildStaffRoleIDs: {""}, GuildProposalChannelID: {"", ""}}},
		{name: "ids from a multi-select", form: url.Values{GuildStaffRoleIDs: {"11", "12", ""}, GuildAllowedChannelIDs: {"21", "22", ""}},
			roles: "11\n12", channels: "21\n22"},
		{name: "a pasted unknown id is kept beside the chosen", form: url.Values{GuildStaffRoleIDs: {"11", "99999"}},
			roles: "11\n99999"},
		{name: "a pasted list, an id chosen twice once", form: url.Values{GuildAllowedChannelIDs: {"21", "22, 21 23\n24"}},
			channels: "21\n22\n23\n24"},
		{name: "a typed name is kept for guildcfg to refuse", form: url.Values{GuildAllowedChannelIDs: {"21", "general"}},
			channels: "21\ngeneral"},
		{name: "a single picker's choice", form: url.Values{GuildProposalChannelID: {"31", ""}}, proposal: "31"},
		{name: "a single picker's pasted id wins over its select", form: url.Values{GuildProposalChannelID: {"31", " 77 "}}, proposal: "77"},
		{name: "a single picker's pasted id with nothing chosen", form: url.Values{GuildProposalChannelID: {"", "77"}}, proposal: "77"},
		{name: "destinations", form: url.Values{GuildTasksDestinations: {"41", "42", "43"}}, dest: "41\n42\n43"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := ParseGuildSetup(post(t, "/guilds/1/setup", tt.form))
			got := []string{f.StaffRoleIDs, f.AllowedChannelIDs, f.ProposalChannelID, f.TasksDestinations}
			want := []string{tt.roles, tt.channels, tt.proposal, tt.dest}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d = %q, want %q", i, got[i], want[i])
				}
			}
		})
	}
}

// The document keeps every picked id, a pasted unknown one included.
func TestGuildSetupDocumentOfPickedIDs(t *testing.T) {
	f := ParseGuildSetup(post(t, "/guilds/1/setup", url.Values{GuildStaffRoleIDs: {"11", "12", "99999"}, GuildProposalChannelID: {"31", ""}}))
	doc := f.Document("")
	for _, want := range []string{"staff_role_ids: [11, 12, 99999]\n", "proposal_channel_id: 31\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q:\n%s", want, doc)
		}
	}
}

// The task form: the guild and owner are single pickers, the destinations
// a list; a module's id and id_list fields read their pickers too.
func TestTaskAndModulePickersParse(t *testing.T) {
	r := post(t, "/tasks", url.Values{tasks.FieldGuild: {"42", ""}, tasks.FieldOwner: {"7", "8"},
		tasks.FieldDestinations: {"100", "101", "555"}, tasks.FieldLogChannel: {"300", ""},
		tasks.FieldMentionUsers: {"7", "9", "7 10"}, tasks.FieldMentionRoles: {"20", ""}})
	f, err := ParseTaskForm(r)
	if err != nil {
		t.Fatal(err)
	}
	if f.Guild != "42" || f.Owner != "8" || f.Destinations != "100\n101\n555" {
		t.Errorf("task form = guild %q, owner %q, destinations %q", f.Guild, f.Owner, f.Destinations)
	}
	if f.LogChannel != "300" || f.MentionUsers != "7\n9\n10" || f.MentionRoles != "20" {
		t.Errorf("task form = log channel %q, mention users %q, roles %q", f.LogChannel, f.MentionUsers, f.MentionRoles)
	}
	def, errs := f.Definition(nil)
	if !errs.OK() || len(def.Destinations) != 3 || def.Destinations[2] != 555 || def.OwnerID != 8 {
		t.Errorf("definition = %+v, %v", def, errs)
	}

	schema := sdk.GuildSettingsSchema{Fields: []sdk.GuildSettingField{
		{Name: "ch", Kind: sdk.GuildSettingID, Refers: sdk.RefChannel},
		{Name: "roles", Kind: sdk.GuildSettingIDList, Refers: sdk.RefRole},
	}}
	m := ParseGuildModuleSettings(post(t, "/guilds/1/modules/m", url.Values{
		ModuleSettingName("ch"): {"5", ""}, ModuleSettingName("roles"): {"6", "7", "8 6"}}), schema)
	if m.Values["ch"] != "5" || m.Values["roles"] != "6\n7\n8" {
		t.Errorf("module values = %q", m.Values)
	}
}

// The member search's query: at most MaxMemberSearchQuery bytes.
func TestMemberSearchValidate(t *testing.T) {
	for _, tt := range []struct {
		q    string
		want bool
	}{{"", true}, {"ad", true}, {strings.Repeat("a", MaxMemberSearchQuery), true}, {strings.Repeat("a", MaxMemberSearchQuery+1), false}} {
		r := httptest.NewRequest(http.MethodGet, "/guilds/1/members/search?q="+url.QueryEscape(tt.q), nil)
		f := ParseMemberSearch(r)
		if got := f.Validate().OK(); got != tt.want {
			t.Errorf("query of %d bytes: ok = %v, want %v", len(tt.q), got, tt.want)
		}
	}
}
