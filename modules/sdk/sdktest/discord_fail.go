package sdktest

import (
	"errors"
	"fmt"

	"github.com/kimiapp/kimi/modules/sdk"
)

// ActionError is a Discord action that failed as the host fails it when
// Discord refused or failed the request: Message is the host's safe text
// for the action ("sending the message failed", "channel 5 is not in an
// active guild"), Err the cause FailNext was given, reachable with
// errors.Is and errors.As.
type ActionError struct {
	Message string
	Err     error
}

var _ error = (*ActionError)(nil)

// Error returns the host's message.
func (e *ActionError) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *ActionError) Unwrap() error { return e.Err }

// FailNext makes the next declared call of action fail as the host's does
// when Discord answers with cause: one of the SDK's Discord causes
// (&sdk.RateLimitError{RetryAfter: 2 * time.Second},
// &sdk.MissingPermissionError{Permission: "SEND_MESSAGES"},
// sdk.ErrUnknownChannel, sdk.ErrUnknownMessage,
// &sdk.UncertainDeliveryError{Status: 502}) or any error. Calls queue:
// each FailNext fails one more call. The failed call is recorded (it
// reached Discord) and nothing else happens (no message id is taken, no
// message forgotten). The answer is the host's for that action:
//
//   - SendMessage, EditMessage, DeleteMessage, FetchMessages, FetchPins,
//     FetchRoles, FetchInvites, Ban, Kick and Timeout return an
//     *ActionError with the action's failure message ("sending the message
//     failed", "editing the message failed", "deleting the message
//     failed", "fetching the message history failed", "fetching the pinned
//     messages failed", "fetching the roles failed", "fetching the invites
//     failed", "banning the member failed", "kicking the member failed",
//     "timing the member out failed"); sdk.ErrUnknownChannel on an action
//     with a channel is "channel C is not in an active guild", as the host
//     finds the channel gone before it acts;
//   - DeleteMessage with sdk.ErrUnknownMessage succeeds (the host takes a
//     message already gone as deleted);
//   - CanViewChannel returns false with "the member U of guild G could not
//     be fetched" (ErrUnknownChannel: the channel message);
//   - FetchMessage, FetchMember and FetchChannel return nil, and SendDM
//     false, with no error: the host answers every failure of theirs so;
//   - FetchPublicThreads fails only with sdk.ErrUnknownChannel (the parent
//     channel); the host answers another failure with the threads it has.
func (f *FakeDiscordActions) FailNext(action sdk.DiscordAction, cause error) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.failures == nil {
		f.failures = map[sdk.DiscordAction][]error{}
	}
	f.failures[action] = append(f.failures[action], cause)
}

// failure pops action's next injected cause (nil: none). f.Mu is held.
func (f *FakeDiscordActions) failure(action sdk.DiscordAction) error {
	q := f.failures[action]
	if len(q) == 0 {
		return nil
	}
	f.failures[action] = q[1:]
	return q[0]
}

// failedMessages are the host's failure messages per action.
var failedMessages = map[sdk.DiscordAction]string{
	sdk.ActionSendMessage:   "sending the message failed",
	sdk.ActionEditMessage:   "editing the message failed",
	sdk.ActionDeleteMessage: "deleting the message failed",
	sdk.ActionFetchMessages: "fetching the message history failed",
	sdk.ActionFetchPins:     "fetching the pinned messages failed",
	sdk.ActionFetchRoles:    "fetching the roles failed",
	sdk.ActionFetchInvites:  "fetching the invites failed",
	sdk.ActionBan:           "banning the member failed",
	sdk.ActionKick:          "kicking the member failed",
	sdk.ActionTimeout:       "timing the member out failed",
}

// failed is the host's error for action failing with cause in channelID
// (0: the action has none).
func failed(action sdk.DiscordAction, cause error, channelID uint64) *ActionError {
	if channelID != 0 && errors.Is(cause, sdk.ErrUnknownChannel) {
		return &ActionError{Message: fmt.Sprintf("channel %d is not in an active guild", channelID), Err: cause}
	}
	return &ActionError{Message: failedMessages[action], Err: cause}
}

// fail returns err (the declaration check's) or, when FailNext queued a
// cause for action, the host's error for it. f.Mu is held.
func (f *FakeDiscordActions) fail(action sdk.DiscordAction, channelID uint64, err error) error {
	if err != nil {
		return err
	}
	if cause := f.failure(action); cause != nil {
		return failed(action, cause, channelID)
	}
	return nil
}
