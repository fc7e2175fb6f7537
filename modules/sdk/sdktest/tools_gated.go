package sdktest

import (
	"context"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit"
)

// ToolGate is what the host knows when it gates a tool call: whether the
// module runs, where it is active, who the owner is (hostkit.ToolGate; a
// module's tests name it here, never importing hostkit).
type ToolGate = hostkit.ToolGate

// ErrToolUnavailable is CallGated's refusal, the host's.
var ErrToolUnavailable = hostkit.ErrToolUnavailable

// CallGated is Call behind the host's gate: the call is refused with
// ErrToolUnavailable, and the handler not run, unless the tool is
// registered and the host would allow it (module running, visible in tc's
// guild, the caller's tier, owner-only), as hostkit.CheckToolCall decides.
func (r *RecordingToolRegistry) CallGated(ctx context.Context, name string, args any, tc sdk.ToolContext, gate ToolGate) (string, error) {
	tool, ok := r.Tool(name)
	if !ok {
		return "", ErrToolUnavailable
	}
	if err := hostkit.CheckToolCall(tool, tc, gate); err != nil {
		return "", err
	}
	return r.Call(ctx, name, args, tc)
}
