package kudos

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// Ports of tests/test_spec.py (5 tests): the declarations pass the host's
// preflight validators and create registers what the docs promise, so a
// broken declaration fails here instead of at the first start.

// 19. test_declarations_pass_host_preflight
func TestDeclarationsPassHostPreflight(t *testing.T) {
	s := Spec()
	if s.Name != Name || s.APIVersion != sdk.APIVersion {
		t.Errorf("name %q api %d", s.Name, s.APIVersion)
	}
	// Validate runs the host's declaration checks: name, settings,
	// permissions, services and the guild-settings schema.
	if err := s.Validate(); err != nil {
		t.Fatalf("spec: %v", err)
	}
	// The fake runtime migrates (the migration list is checked like the
	// host's) and Start subscribes through the fake bus, which refuses an
	// undeclared topic the way the host does.
	rt := sdktest.NewRuntime(t, s)
	rt.Start(context.Background())
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	if !slices.Contains(rt.Events.Subscriptions(), sdk.TopicMemberRemove) {
		t.Errorf("subscriptions %v lack the declared core topic %s", rt.Events.Subscriptions(), sdk.TopicMemberRemove)
	}
}

// 20. test_guild_validator_rejects_a_digest_for_staff_only_guilds
func TestGuildValidatorRejectsADigestForStaffOnlyGuilds(t *testing.T) {
	validate := Spec().GuildSettings.Validate
	tests := []struct {
		values map[string]any
		want   []string
	}{
		{map[string]any{FieldGiverMinTier: "staff", FieldDigestChannel: 1}, []string{ErrStaffOnlyDigest}},
		{map[string]any{FieldGiverMinTier: "staff", FieldDigestChannel: uint64(1)}, []string{ErrStaffOnlyDigest}},
		{map[string]any{FieldGiverMinTier: "regular", FieldDigestChannel: 1}, nil},
		{map[string]any{FieldGiverMinTier: "staff", FieldDigestChannel: nil}, nil},
	}
	for _, tt := range tests {
		if got := validate(tt.values); !slices.Equal(got, tt.want) {
			t.Errorf("validate(%v) = %q, want %q", tt.values, got, tt.want)
		}
	}
	// The host applies it: such a guild is invalid, and the module is off
	// there (invalid_policy disable_module).
	result := (*Spec().GuildSettings).Evaluate(map[string]any{FieldGiverMinTier: "staff", FieldDigestChannel: "900"})
	if result.Valid() {
		t.Error("a staff-only guild with a digest channel evaluated as valid")
	}
}

// 21. test_settings_definition_classifies_every_field
//
// In Go a field is exposed unless marked EnvironmentOnly or Secret, so
// classification is total by construction; what remains to check is that
// the definition covers exactly the settings the module reads and that
// every exposed number has a minimum.
func TestSettingsDefinitionClassifiesEveryField(t *testing.T) {
	def := Spec().Settings
	var names []string
	for _, f := range def.Fields {
		names = append(names, f.Name)
		if f.Exposed() && (f.Kind == sdk.SettingInt || f.Kind == sdk.SettingFloat) && !f.HasMin {
			t.Errorf("exposed numeric setting %q has no minimum", f.Name)
		}
	}
	want := []string{SettingDailyLimit, SettingBoardSize, SettingDigestInterval, SettingResultGuild}
	if !slices.Equal(names, want) {
		t.Errorf("settings = %v, want %v", names, want)
	}
	prepared, err := def.Prepare(Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := configFrom(prepared)
	if got != (config{dailyLimit: 5, boardSize: 10, digestInterval: 7 * 24 * time.Hour, resultGuild: 0}) {
		t.Errorf("defaults = %+v", got)
	}
}

// 22. test_create_registers_tools_and_labels
func TestCreateRegistersToolsAndLabels(t *testing.T) {
	prepared, err := Spec().Settings.Prepare(Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	lc, recorded := sdktest.NewLoadContext(Name, sdktest.LoadOptions{Settings: prepared})

	m, err := Spec().Create(lc)
	if err != nil {
		t.Fatal(err)
	}

	if _, ok := m.(*module); !ok {
		t.Errorf("create returned %T", m)
	}
	give, _ := recorded.Registry.Tool(ToolGive)
	if give.EffectiveMinTier() != sdk.TierMember || give.Searchable || give.AllowOutsideGuilds {
		t.Errorf("give_kudos = tier %v searchable %v outside guilds %v", give.EffectiveMinTier(), give.Searchable, give.AllowOutsideGuilds)
	}
	if board, _ := recorded.Registry.Tool(ToolLeaderboard); !board.Searchable || board.EffectiveMinTier() != sdk.TierMember || board.AllowOutsideGuilds {
		t.Errorf("kudos_leaderboard = tier %v searchable %v outside guilds %v, want a searchable member tool", board.EffectiveMinTier(), board.Searchable, board.AllowOutsideGuilds)
	}
	wantLabels := map[string]string{ToolGive: "Giving kudos", ToolLeaderboard: "Checking the kudos leaderboard"}
	if labels := recorded.Labels(); !maps.Equal(labels, wantLabels) {
		t.Errorf("labels = %v, want %v", labels, wantLabels)
	}
	required, _ := give.Parameters["required"].([]string)
	if !slices.Equal(slices.Sorted(slices.Values(required)), []string{"reason", "user"}) {
		t.Errorf("required = %v", give.Parameters["required"])
	}
	// Tools register only during create: the host seals the registry.
	recorded.Registry.Seal()
	if err := recorded.Registry.Register(sdk.Tool{Name: "late", Description: "d", Handler: m.(*module).toolGive}); err == nil {
		t.Error("registering after loading succeeded")
	}
}

// 23. test_settings_read_the_module_env_prefix
func TestSettingsReadTheModuleEnvPrefix(t *testing.T) {
	t.Setenv("REFERENCE_KUDOS_DAILY_LIMIT", "9")

	rt := sdktest.NewRuntime(t, Spec(), sdktest.WithEnv())

	if got := rt.Settings.Int(SettingDailyLimit); got != 9 {
		t.Errorf("daily_limit = %d, want 9", got)
	}
	if got := configFrom(rt.Settings).dailyLimit; got != 9 {
		t.Errorf("module config daily limit = %d, want 9", got)
	}
}
