package form

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/modules/sdk"
)

// FuzzGuildSetupIDs: whatever is typed into the server-setup form's id
// textareas and channel field, the document GuildSetup.Document renders
// always parses as YAML with only the form's keys — a value can never
// break the syntax or smuggle in a key — and guildcfg either accepts it
// with exactly the typed ids or refuses it naming only the fields typed
// into, never the document as a whole. The same for the generated module
// form's id list.
func FuzzGuildSetupIDs(f *testing.F) {
	for _, seed := range [][2]string{
		{"111\n222", "555"}, {"+5", ""}, {"-5\r\n6", "7"}, {"18446744073709551616", "0"}, {"1]\nbot_active: [", "&a"},
		{"\xff\xfe", "!tag"}, {"'1'", "\"2\""}, {"1,2 3\t4", " 9 "}, {"#x", "*a"}, {"\u2028\x7f\u0085", "{}"},
	} {
		f.Add(seed[0], seed[1])
	}
	schema := sdk.GuildSettingsSchema{Fields: []sdk.GuildSettingField{{Name: "role_ids", Kind: sdk.GuildSettingIDList}}}
	f.Fuzz(func(t *testing.T, ids, channel string) {
		setup := GuildSetup{BotActive: true, StaffRoleIDs: ids, ProposalChannelID: strings.TrimSpace(channel)}
		text := setup.Document("body\n")
		fm, err := guildcfg.ParseFrontmatter(text)
		if err != nil {
			t.Fatalf("the form rendered a document that does not parse: %v\n%s", err, text)
		}
		for _, k := range fm.Keys {
			if !slices.Contains([]string{GuildBotActive, GuildStaffRoleIDs, GuildProposalChannelID}, k) {
				t.Fatalf("input added key %q:\n%s", k, text)
			}
		}
		if fm.Body != "body\n" {
			t.Fatalf("body changed to %q", fm.Body)
		}
		cfg, err := guildcfg.ParseGuildDocument(text)
		if err != nil {
			var verr *guildcfg.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("refusal is not a ValidationError: %v", err)
			}
			for _, field := range verr.FieldNames() {
				if field != GuildStaffRoleIDs && field != GuildProposalChannelID {
					t.Fatalf("refusal names field %q for input %q/%q: %v", field, ids, channel, verr.Problems)
				}
			}
			return
		}
		want := SplitIDs(ids)
		if len(cfg.StaffRoleIDs) != len(want) {
			t.Fatalf("typed %q, stored %v", want, cfg.StaffRoleIDs)
		}
		for i, id := range cfg.StaffRoleIDs {
			if strconv.FormatUint(id, 10) != strings.TrimLeft(want[i], "0") {
				t.Fatalf("entry %d: typed %q, stored %d", i, want[i], id)
			}
		}

		mod := GuildModuleSettings{Schema: schema, Values: map[string]string{"role_ids": ids}}
		mtext := mod.Document()
		if _, problems := guildcfg.EvaluateModuleDocument(schema, mtext, true); len(problems) > 0 {
			t.Fatalf("ids the server setup accepts are refused by the module form: %v\n%s", problems, mtext)
		}
	})
}

// FuzzGuildSetupAssistant: whatever is typed into the assistant's tier and
// tool fields, the rendered document parses with only the form's keys, and
// guildcfg either stores exactly the typed names or refuses naming only
// assistant fields.
func FuzzGuildSetupAssistant(f *testing.F) {
	for _, seed := range [][2]string{
		{"give_kudos\nbrowse_tools", "owner"}, {"give kudos", "admin"}, {"a,b\r\nc", "staff"}, {"]\nbot_active: [", "\"x"},
		{"\xff", "\u2028"}, {"true\n1", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, tools, tier string) {
		setup := GuildSetup{BotActive: true, AssistantMinTier: strings.TrimSpace(tier), AssistantBlockedTools: tools, AssistantPinnedTools: tools}
		text := setup.Document("body\n")
		fm, err := guildcfg.ParseFrontmatter(text)
		if err != nil {
			t.Fatalf("the form rendered a document that does not parse: %v\n%s", err, text)
		}
		for _, k := range fm.Keys {
			if k != GuildBotActive && k != guildcfg.KeyAssistant {
				t.Fatalf("input added key %q:\n%s", k, text)
			}
		}
		cfg, err := guildcfg.ParseGuildDocument(text)
		if err != nil {
			var verr *guildcfg.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("refusal is not a ValidationError: %v", err)
			}
			for _, field := range verr.FieldNames() {
				if !strings.HasPrefix(field, guildcfg.KeyAssistant+".") {
					t.Fatalf("refusal names field %q: %v", field, verr.Problems)
				}
			}
			return
		}
		want := slices.Compact(slices.Sorted(slices.Values(SplitNames(tools))))
		if !slices.Equal(cfg.Assistant.BlockedTools, want) && !(len(want) == 0 && cfg.Assistant.BlockedTools == nil) {
			t.Fatalf("typed %q, stored %q", want, cfg.Assistant.BlockedTools)
		}
	})
}
