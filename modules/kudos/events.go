package kudos

import (
	"context"

	"github.com/kimiapp/kimi/modules/sdk"
)

// onMemberRemove drops a departed member's kudos: data minimization, and
// their ids mean nothing to the guild any more.
func (m *module) onMemberRemove(ctx context.Context, e sdk.Event) error {
	payload, ok := e.Payload.(sdk.MemberRemoveEvent)
	if !ok {
		return nil
	}
	rt, ledger, err := m.started()
	if err != nil {
		return err
	}
	removed, err := ledger.forgetMember(ctx, payload.GuildID, payload.UserID)
	if err != nil {
		return err
	}
	if removed > 0 {
		rt.Logger.Info("forgot kudos of a departed member", "rows", removed, "guild", payload.GuildID)
	}
	return nil
}
