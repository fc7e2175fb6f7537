package kudos

import (
	"context"
	"errors"

	"github.com/kimiapp/kimi/modules/sdk"
)

// subscribeResults opts into published scheduled-task results in one
// guild (setting result_guild_id; 0 leaves it off). A module must
// subscribe on every start: subscriptions survive downtime, but only a
// registered handler receives them.
func (m *module) subscribeResults(ctx context.Context, rt *sdk.Runtime) error {
	if m.cfg.resultGuild == 0 {
		return nil
	}
	if err := rt.Capabilities.Require(sdk.CapScheduledResults); err != nil {
		return err
	}
	if rt.ScheduledResults == nil {
		// The reference's exact message, capitalized as operators know it.
		return errors.New("Host did not supply scheduled results")
	}
	return rt.ScheduledResults.Subscribe(ctx, ResultSubscription, m.cfg.resultGuild, m.onPublishedTask)
}

// onPublishedTask counts published task results. Delivery is at least
// once — a retry after a lost acknowledgement brings the same notification
// again — so the notification id is recorded idempotently and the count
// comes from the table, not from a counter that a retry would inflate.
// Returning nil acknowledges; an error asks for a retry with the same id.
func (m *module) onPublishedTask(ctx context.Context, result sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
	rt, ledger, err := m.started()
	if err != nil {
		return err
	}
	count, err := ledger.recordResult(ctx, result.NotificationID, result.ExpiresAt, m.clock())
	if err != nil {
		return err
	}
	rt.Health.ReportKey(HealthKeyResults, sdk.HealthHealthy, "", map[string]float64{"published_task_results": float64(count)})
	return nil
}
