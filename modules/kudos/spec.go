package kudos

import (
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Spec is the module's declaration, which modules/all registers. The host
// reads it in two phases: preflight validates the declarations below
// before any module code runs, then loading calls Create with the prepared
// settings — the moment to register LLM tools.
//
// Declaring less than you use fails at runtime (UndeclaredDiscordActionError,
// EventTopicError); declaring more shows up as noise in the operator's
// manifest. Keep the two in step.
func Spec() sdk.Spec { return spec(nil) }

// spec builds the Spec with a time source; tests inject a manual clock to
// drive the daily limit and the digest window. nil is the host's clock
// (sdk.Runtime.Now), read from Start on.
func spec(clock func() time.Time) sdk.Spec {
	return sdk.Spec{
		Name:        Name,
		Version:     Version,
		Description: "Members thank each other with /kudos give (or by asking the assistant); a weekly digest posts the most thanked members to a channel.",
		// A literal, not sdk.APIVersion: rebuilding this source against a
		// future SDK must fail preflight instead of silently claiming
		// compatibility.
		APIVersion:    2,
		Create:        func(lc sdk.LoadContext) (sdk.Module, error) { return create(lc, clock) },
		Settings:      settingsDefinition(),
		GuildSettings: guildSettingsSchema(),
		Permissions: sdk.Permissions{
			// The digest posts to a channel; nothing else touches Discord.
			DiscordActions: []sdk.DiscordAction{sdk.ActionSendMessage},
			// Core topics we subscribe to. Our own reference_kudos.*
			// namespace is implicit and must not be listed.
			EventTopics:      []string{sdk.TopicMemberRemove},
			ScheduledResults: []string{ResultSubscription},
		},
		// Sibling modules can depend on us and get "kudos.board"@1. A
		// module that declares a service and never provides it is marked
		// degraded.
		Provides: []sdk.ServiceDeclaration{{Name: ServiceName, Version: ServiceVersion}},
		// The names the module registers and owns: no other selected
		// module may declare them, and registering any other fails.
		Tools:    []string{ToolGive, ToolLeaderboard},
		Commands: []string{CommandGroup},
	}
}

// create builds the module and registers its LLM tools. It is pure wiring:
// no ports exist yet, and the tool registry is sealed once loading ends.
func create(lc sdk.LoadContext, clock func() time.Time) (sdk.Module, error) {
	m := &module{cfg: configFrom(lc.Settings()), clock: clock}
	for _, tool := range m.tools() {
		if err := lc.Tools().Register(tool); err != nil {
			return nil, err
		}
	}
	// Gerund phrases shown while a tool runs ("Kimi is giving kudos…").
	lc.RegisterToolLabels(map[string]string{
		ToolGive:        "Giving kudos",
		ToolLeaderboard: "Checking the kudos leaderboard",
	})
	return m, nil
}
