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

// A module reads why a Discord action failed: errors.Is for the category,
// errors.As for the detail. The error's text stays the host's safe message.
func Example_discordFailures() {
	// What the host returns, for instance, when Discord answered a send
	// with 429s until Kimi gave up, or with 403 50013, or a 502.
	failures := []error{
		fmt.Errorf("sending the message failed: %w", &sdk.RateLimitError{RetryAfter: 2 * time.Second}),
		fmt.Errorf("sending the message failed: %w", &sdk.MissingPermissionError{Permission: "EMBED_LINKS"}),
		fmt.Errorf("channel 5 is not in an active guild: %w", sdk.ErrUnknownChannel),
		fmt.Errorf("sending the message failed: %w", &sdk.UncertainDeliveryError{Status: 502}),
	}
	for _, err := range failures {
		var rl *sdk.RateLimitError
		var mp *sdk.MissingPermissionError
		switch {
		case errors.As(err, &rl):
			fmt.Println("retry after", rl.RetryAfter)
		case errors.As(err, &mp):
			fmt.Println("tell staff: the bot needs", mp.Permission)
		case errors.Is(err, sdk.ErrUnknownChannel):
			fmt.Println("forget the channel")
		case errors.Is(err, sdk.ErrUncertainDelivery):
			fmt.Println("it may have been posted: do not re-send blindly")
		}
	}
	// Output:
	// retry after 2s
	// tell staff: the bot needs EMBED_LINKS
	// forget the channel
	// it may have been posted: do not re-send blindly
}
