package e2e

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/discord/fakediscord"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestE2EModuleSeesWhyASendFailed: in the composed appliance, a module's
// SendMessage through the host's port over the real bot fails with the
// original's message over the SDK's typed cause for each way the fake
// Discord fails it, and a 5xx after the create is posted exactly once.
func TestE2EModuleSeesWhyASendFailed(t *testing.T) {
	m := newE2EModule()
	a, c := startE2EModule(t, m)
	a.waitConnected(c)
	rt := m.runtime()
	const route = "POST /channels/{channel}/messages"
	channel := e2eID(t, e2eChannel)
	for _, tc := range []struct {
		name    string
		fault   *fakediscord.Fault
		channel uint64
		msg     string
		check   func(error) bool
	}{
		{"rate limited past every attempt", &fakediscord.Fault{Route: route, Status: http.StatusTooManyRequests, RetryAfter: 5 * time.Millisecond, Times: 4},
			channel, "sending the message failed", func(err error) bool {
				var rl *sdk.RateLimitError
				return errors.Is(err, sdk.ErrRateLimited) && errors.As(err, &rl) && rl.RetryAfter == 5*time.Millisecond && !rl.Global
			}},
		{"missing permissions", &fakediscord.Fault{Route: route, Status: http.StatusForbidden, Code: fakediscord.CodeMissingPermissions},
			channel, "sending the message failed", func(err error) bool {
				var mp *sdk.MissingPermissionError
				return errors.Is(err, sdk.ErrMissingPermission) && errors.As(err, &mp) && mp.Permission == "SEND_MESSAGES"
			}},
		{"unknown channel", nil, 420000000000000099, "channel 420000000000000099 is not in an active guild", func(err error) bool {
			return errors.Is(err, sdk.ErrUnknownChannel)
		}},
		{"a 5xx after the create", &fakediscord.Fault{Route: route, Status: http.StatusInternalServerError, AfterHandling: true, Times: 3},
			channel, "sending the message failed", func(err error) bool {
				var u *sdk.UncertainDeliveryError
				return errors.Is(err, sdk.ErrUncertainDelivery) && errors.As(err, &u) && u.Status == 500
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, posts := len(a.Discord().Messages(e2eChannel)), len(a.Discord().RequestsTo(route))
			if tc.fault != nil {
				a.Discord().InjectFault(*tc.fault)
			}
			ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
			defer cancel()
			_, err := rt.Discord.SendMessage(ctx, tc.channel, sdk.OutgoingMessage{Content: "why"})
			if err == nil || err.Error() != tc.msg || !tc.check(err) {
				t.Fatalf("err = %v, want %q over its cause", err, tc.msg)
			}
			if tc.fault != nil && tc.fault.AfterHandling {
				if n := len(a.Discord().Messages(e2eChannel)) - before; n != 1 {
					t.Fatalf("%d messages created, want the one", n)
				}
				if n := len(a.Discord().RequestsTo(route)) - posts; n != 1 {
					t.Fatalf("%d posts, want one (never re-sent)", n)
				}
			}
		})
	}
}
