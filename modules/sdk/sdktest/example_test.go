package sdktest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// A module's test makes the fake fail a send as Discord would, and checks
// the module reads why.
func ExampleFakeDiscordActions_FailNext() {
	ctx := context.Background()
	d := sdktest.NewFakeDiscordActions("reference_kudos", []sdk.DiscordAction{sdk.ActionSendMessage})
	d.FailNext(sdk.ActionSendMessage, &sdk.RateLimitError{RetryAfter: 3 * time.Second})
	d.FailNext(sdk.ActionSendMessage, &sdk.MissingPermissionError{Permission: "SEND_MESSAGES"})

	for range 3 {
		_, err := d.SendMessage(ctx, 42, sdk.OutgoingMessage{Content: "thanks!"})
		var rl *sdk.RateLimitError
		var mp *sdk.MissingPermissionError
		switch {
		case err == nil:
			fmt.Println("sent")
		case errors.As(err, &rl):
			fmt.Printf("%s: retry in %s\n", err, rl.RetryAfter)
		case errors.As(err, &mp):
			fmt.Printf("%s: ask an admin for %s\n", err, mp.Permission)
		}
	}
	// Output:
	// sending the message failed: retry in 3s
	// sending the message failed: ask an admin for SEND_MESSAGES
	// sent
}
