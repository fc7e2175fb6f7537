package sdk

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type nopModule struct{}

func (nopModule) Migrations() []Migration               { return nil }
func (nopModule) Start(context.Context, *Runtime) error { return nil }
func (nopModule) Close(context.Context) error           { return nil }
func createNop(LoadContext) (Module, error)             { return nopModule{}, nil }

var _ Module = nopModule{}

func validSpec() Spec {
	return Spec{
		Name: "reference_kudos", Version: "1.1.0", APIVersion: 2, Create: createNop,
		Settings: &SettingsDefinition{Label: "Kudos", Fields: []SettingField{
			{Name: "daily_limit", Kind: SettingInt, Default: 5, Min: 1, HasMin: true},
		}},
		Permissions: Permissions{
			DiscordActions:   []DiscordAction{ActionSendMessage},
			EventTopics:      []string{TopicMemberRemove},
			ScheduledResults: []string{"published_tasks"},
		},
		GuildSettings: &GuildSettingsSchema{InvalidPolicy: DisableModule, Fields: []GuildSettingField{
			{Name: "digest_channel_id", Kind: GuildSettingID},
			{Name: "giver_min_tier", Kind: GuildSettingEnum, Choices: []string{"member", "regular", "staff"}, Default: "member"},
		}},
		Provides: []ServiceDeclaration{{Name: "kudos.board", Version: 1}},
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Spec)
		want   string
	}{
		{"valid", func(*Spec) {}, ""},
		{"no description", func(s *Spec) { s.Description = "" }, ""},
		{"description at the limit", func(s *Spec) { s.Description = strings.Repeat("é", MaxDescriptionLen) }, ""},
		{"description too long", func(s *Spec) { s.Description = strings.Repeat("a", MaxDescriptionLen+1) },
			"Kimi module 'reference_kudos' has an invalid declaration: module 'reference_kudos' has a description of 301 characters; the most is 300"},
		{"api version", func(s *Spec) { s.APIVersion = 1 }, "Kimi module 'reference_kudos' requires module API 1; core provides 2"},
		{"bad name", func(s *Spec) { s.Name = "Bad" }, "Kimi module 'Bad' has an invalid declaration: invalid module name 'Bad'"},
		{"reserved", func(s *Spec) { s.Name = "discord" }, "Kimi module 'discord' has an invalid declaration: module name 'discord' is reserved by core"},
		{"no create", func(s *Spec) { s.Create = nil }, "Kimi module 'reference_kudos' has an invalid declaration: module 'reference_kudos' has no create function"},
		{"settings", func(s *Spec) { s.Settings.Fields[0].Default = "x" }, "Kimi module 'reference_kudos' has an invalid declaration: module 'reference_kudos' setting 'daily_limit' has an invalid default: must be an integer"},
		{"permissions", func(s *Spec) { s.Permissions.DiscordActions = []DiscordAction{"nuke"} }, "Kimi module 'reference_kudos' has an invalid declaration: module 'reference_kudos' declares unknown Discord actions ['nuke']"},
		{"services", func(s *Spec) { s.Provides = append(s.Provides, s.Provides[0]) }, "Kimi module 'reference_kudos' has an invalid declaration: module 'reference_kudos' provides ('kudos.board', 1) twice"},
		{"guild settings", func(s *Spec) { s.GuildSettings.Fields[0].Kind = GuildSettingEnum }, "Kimi module 'reference_kudos' has an invalid declaration: module 'reference_kudos' enum setting 'digest_channel_id' needs choices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.mutate(&s)
			err := s.Validate()
			checkErr(t, err, tt.want)
			if err != nil && tt.name != "api version" && errors.Unwrap(err) == nil {
				t.Fatal("wrapped declaration error lost its cause")
			}
		})
	}
}

func TestValidatePermissions(t *testing.T) {
	tests := []struct {
		name string
		p    Permissions
		want string
	}{
		{"empty", Permissions{}, ""},
		{"all actions", Permissions{DiscordActions: AllDiscordActions()}, ""},
		{"unknown sorted", Permissions{DiscordActions: []DiscordAction{"zap", ActionBan, "abc", "zap"}}, "module 'mod' declares unknown Discord actions ['abc', 'zap']"},
		{"override without targeted", Permissions{DiscordActions: []DiscordAction{ActionSendMessage}, OverrideTargetPolicy: true}, "module 'mod' overrides the target policy without a targeted action"},
		{"override with kick", Permissions{DiscordActions: []DiscordAction{ActionKick}, OverrideTargetPolicy: true}, ""},
		{"own topic", Permissions{EventTopics: []string{"mod.*"}}, "module 'mod' need not declare its own topic 'mod.*'"},
		{"bad topic", Permissions{EventTopics: []string{"nope"}}, "invalid event topic 'nope'; expected '<namespace>.<name>'"},
		{"host rule", Permissions{HTTPHosts: []HostRule{{Host: "*.example.com"}}}, "invalid HTTP host '*.example.com'; wildcards are not supported"},
		{"results ok", Permissions{ScheduledResults: []string{"reports", "other_1"}}, ""},
		{"results dup", Permissions{ScheduledResults: []string{"reports", "reports"}}, "scheduled-result subscription names must be unique and valid"},
		{"results upper", Permissions{ScheduledResults: []string{"Upper Case"}}, "scheduled-result subscription names must be unique and valid"},
		{"results empty", Permissions{ScheduledResults: []string{""}}, "scheduled-result subscription names must be unique and valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkErr(t, validatePermissions("mod", tt.p), tt.want) })
	}
	var te *EventTopicError
	if err := validatePermissions("mod", Permissions{EventTopics: []string{"mod.x"}}); !errors.As(err, &te) {
		t.Fatalf("own-topic error is %T, want *EventTopicError", err)
	}
}

func TestPermissionHelpers(t *testing.T) {
	p := Permissions{DiscordActions: []DiscordAction{ActionBan}, ScheduledResults: []string{"r"}, OverrideTargetPolicy: true, RawDiscord: true, RawStorage: true}
	if !p.Allows(ActionBan) || p.Allows(ActionKick) {
		t.Error("Allows")
	}
	if !p.AllowsScheduledResult("r") || p.AllowsScheduledResult("x") {
		t.Error("AllowsScheduledResult")
	}
	if got := strings.Join(p.EscapeHatches(), ","); got != "override_target_policy,raw_bot,raw_storage" {
		t.Errorf("EscapeHatches = %s", got)
	}
	if len(AllDiscordActions()) != 16 {
		t.Fatalf("want 16 actions")
	}
	targeted := 0
	for _, a := range AllDiscordActions() {
		if !a.Valid() {
			t.Errorf("%s invalid", a)
		}
		if a.Targeted() {
			targeted++
		}
	}
	if targeted != 3 || DiscordAction("x").Valid() {
		t.Error("targeted actions")
	}
}

func TestRuntimeHelpers(t *testing.T) {
	var nilRT *Runtime
	if nilRT.GuildActive(1) {
		t.Error("nil runtime is active")
	}
	rt := &Runtime{IsGuildActive: func(g uint64) bool { return g == 1 }}
	if !rt.GuildActive(1) || rt.GuildActive(2) {
		t.Error("GuildActive")
	}
	want := "events,scheduler,storage,health,discord,interactions,http,services,trust"
	if got := strings.Join(rt.MissingPorts(), ","); got != want {
		t.Errorf("MissingPorts = %s", got)
	}
}

func TestCapabilities(t *testing.T) {
	c := NewCapabilities([]string{CapDiscordHistory, CapProposals, CapScheduledResults, CapProposals}, true, false)
	if !c.Has(CapScheduledResults) || c.Has(CapToolFiles) {
		t.Error("Has")
	}
	if err := c.Require(CapDiscordHistory); err != nil {
		t.Error(err)
	}
	if err := c.Require(CapToolFiles); err == nil || err.Error() != "the host does not provide required capability 'tools.files.v1'" {
		t.Errorf("Require: %v", err)
	}
	names := c.Names()
	if strings.Join(names, ",") != "discord.history.v1,proposals.v2,scheduled_results.v1" {
		t.Errorf("Names = %v", names)
	}
	names[0] = "mutated"
	if !c.Has(CapDiscordHistory) {
		t.Error("Names leaked internal slice")
	}
	if !c.MembersIntent() || c.MessageContentIntent() {
		t.Error("intents")
	}
	var zero Capabilities
	if zero.Has(CapProposals) {
		t.Error("zero capabilities")
	}
}

func TestSpecClone(t *testing.T) {
	s := validSpec()
	s.Dependencies = []string{"dep"}
	s.Permissions.HTTPHosts = []HostRule{{Host: "a.com", Schemes: []string{"https"}, Ports: []int{443}}}
	c := s.Clone()
	s.Dependencies[0] = "x"
	s.Permissions.DiscordActions[0] = ActionBan
	s.Permissions.HTTPHosts[0].Ports[0] = 1
	s.Settings.Fields[0].Name = "changed"
	s.GuildSettings.Fields[1].Choices[0] = "changed"
	s.Provides[0].Version = 9
	if c.Dependencies[0] != "dep" || c.Permissions.DiscordActions[0] != ActionSendMessage || c.Permissions.HTTPHosts[0].Ports[0] != 443 ||
		c.Settings.Fields[0].Name != "daily_limit" || c.GuildSettings.Fields[1].Choices[0] != "member" || c.Provides[0].Version != 1 {
		t.Fatalf("clone shares state: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// List defaults are slices too.
	s.GuildSettings.Fields = append(s.GuildSettings.Fields, GuildSettingField{Name: "mod_roles", Kind: GuildSettingIDList, Default: []uint64{7}})
	s.GuildSettings.Fields = append(s.GuildSettings.Fields, GuildSettingField{Name: "words", Kind: GuildSettingStrList, Default: []any{"a"}})
	c = s.Clone()
	s.GuildSettings.Fields[len(s.GuildSettings.Fields)-2].Default.([]uint64)[0] = 9
	s.GuildSettings.Fields[len(s.GuildSettings.Fields)-1].Default.([]any)[0] = "changed"
	if f, _ := c.GuildSettings.Field("mod_roles"); f.Default.([]uint64)[0] != 7 {
		t.Errorf("clone shares an id_list default: %v", f.Default)
	}
	if f, _ := c.GuildSettings.Field("words"); f.Default.([]any)[0] != "a" {
		t.Errorf("clone shares a str_list default: %v", f.Default)
	}
	bare := Spec{Name: "x"}.Clone()
	if bare.Settings != nil || bare.GuildSettings != nil {
		t.Fatal("nil definitions became non-nil")
	}
}

func TestComponentKinds(t *testing.T) {
	var c Component = ButtonSpec{Key: "a"}
	if c.ComponentKey() != "a" || c.componentKind() != ComponentButton {
		t.Error("button component")
	}
	c = SelectSpec{Key: "b"}
	if c.ComponentKey() != "b" || c.componentKind() != ComponentSelect {
		t.Error("select component")
	}
}
