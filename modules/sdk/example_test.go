package sdk_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

func ExampleBuildCustomID() {
	id, _ := sdk.BuildCustomID("reference_kudos", "thank_back", "42")
	fmt.Println(id)
	parsed, ok := sdk.ParseCustomID(id)
	fmt.Println(parsed.Module, parsed.Key, parsed.Parts, ok)
	// Output:
	// m:reference_kudos:thank_back:42
	// reference_kudos thank_back [42] true
}

func ExampleRenderGuildSettings() {
	doc, _ := sdk.RenderGuildSettings(map[string]any{
		"digest_channel_id": uint64(777),
		"giver_min_tier":    "regular",
		"allow_thank_back":  true,
		"unset":             nil,
	})
	fmt.Print(doc)
	// Output:
	// ---
	// allow_thank_back: true
	// digest_channel_id: 777
	// giver_min_tier: "regular"
	// ---
}

func ExampleBackoff_Delay() {
	for attempt := 1; attempt <= 9; attempt += 2 {
		fmt.Println(attempt, sdk.DefaultBackoff().Delay(attempt))
	}
	custom := sdk.Backoff{Base: 10 * time.Second, Max: time.Minute, Multiplier: 3}
	fmt.Println(custom.Delay(3))
	// Output:
	// 1 30s
	// 3 2m0s
	// 5 8m0s
	// 7 32m0s
	// 9 1h0m0s
	// 1m0s
}

func ExampleSpec_Validate() {
	spec := sdk.Spec{
		Name:       "reference_kudos",
		Version:    "1.1.0",
		APIVersion: 2,
		Create:     func(sdk.LoadContext) (sdk.Module, error) { return nil, nil },
		Permissions: sdk.Permissions{
			DiscordActions:       []sdk.DiscordAction{sdk.ActionSendMessage},
			OverrideTargetPolicy: true,
		},
	}
	err := spec.Validate()
	fmt.Println(err)
	var mce *sdk.ModuleContractError
	fmt.Println(errors.As(errors.Unwrap(err), &mce))
	// Output:
	// Kimi module 'reference_kudos' has an invalid declaration: module 'reference_kudos' overrides the target policy without a targeted action
	// true
}
