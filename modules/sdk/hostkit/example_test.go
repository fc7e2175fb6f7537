package hostkit_test

import (
	"errors"
	"fmt"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

func ExampleValidatePublishTopic() {
	err := hostkit.ValidatePublishTopic("reference_kudos", "discord.message")
	fmt.Println(err)
	var topicErr *sdk.EventTopicError
	fmt.Println(errors.Is(err, sdk.ErrContract), errors.As(err, &topicErr))
	// Output:
	// event namespace 'discord' is reserved by core
	// true true
}
