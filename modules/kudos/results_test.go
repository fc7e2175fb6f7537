package kudos

import (
	"context"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/sdktest"
)

// 24. Port of tests/test_scheduled_results.py::
// test_result_subscriber_is_opt_in_and_repeated_id_is_counted_once: the
// opt-in subscriber uses only public ports and idempotent SQL.
func TestResultSubscriberIsOptInAndRepeatedIDIsCountedOnce(t *testing.T) {
	ctx := context.Background()
	h := started(t)
	if subs := h.ScheduledResults.Subscriptions(); len(subs) != 0 {
		t.Fatalf("default settings subscribed %v; the subscriber must be opt-in", subs)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Restart over the same database with the subscriber on and the host
	// capability advertised.
	rt := sdktest.NewRuntime(t, spec(h.clock.Now), append(fixtureOptions(),
		sdktest.WithStorage(h.Storage),
		sdktest.WithSettings(map[string]any{SettingResultGuild: guild}),
		sdktest.WithCapabilities(sdk.CapScheduledResults),
	)...)
	rt.Start(ctx)
	notification := sdk.ScheduledResult{
		NotificationID: "stable-id", Subscription: ResultSubscription, TaskID: "task", RunID: "run",
		Revision: 1, GuildID: guild, OwnerID: 2,
		PublishedAt: h.clock.Now(), ExpiresAt: h.clock.Now().Add(24 * time.Hour),
		Outcome: sdk.ResultCompleted,
	}
	if err := rt.ScheduledResults.Deliver(ctx, notification, sdktest.DeliverOptions{}); err != nil {
		t.Fatal(err)
	}
	// Model losing the host's acknowledgement after the module's
	// transaction committed: the same notification arrives again.
	rt.ScheduledResults.ForgetAcknowledgements()
	if err := rt.ScheduledResults.Deliver(ctx, notification, sdktest.DeliverOptions{}); err != nil {
		t.Fatal(err)
	}

	if got := rt.ScheduledResults.Attempts(); len(got) != 2 {
		t.Errorf("attempts = %v, want the handler invoked twice", got)
	}
	if _, ok := rt.Health.Current(); !ok {
		t.Error("no unkeyed health report")
	}
	if got := resultCount(t, rt); got != 1 {
		t.Errorf("published_task_results = %v, want 1", got)
	}
	rows, err := rt.Storage.Reader().QueryContext(ctx, `SELECT notification_id, expires_at FROM `+rt.Storage.Table("result_receipts"))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var receipts []struct {
		id      string
		expires float64
	}
	for rows.Next() {
		var r struct {
			id      string
			expires float64
		}
		if err := rows.Scan(&r.id, &r.expires); err != nil {
			t.Fatal(err)
		}
		receipts = append(receipts, r)
	}
	if len(receipts) != 1 || receipts[0].id != "stable-id" || receipts[0].expires != float64(notification.ExpiresAt.Unix()) {
		t.Errorf("receipts = %+v, want one (stable-id, %d)", receipts, notification.ExpiresAt.Unix())
	}

	// Two days later the first receipt has expired and is pruned: a new id
	// leaves the count at 1.
	h.clock.Advance(48 * time.Hour)
	next := notification
	next.NotificationID, next.ExpiresAt = "next-id", h.clock.Now().Add(24*time.Hour)
	if err := rt.ScheduledResults.Deliver(ctx, next, sdktest.DeliverOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := resultCount(t, rt); got != 1 {
		t.Errorf("published_task_results after expiry = %v, want 1", got)
	}
}

func resultCount(t *testing.T, rt *sdktest.Runtime) float64 {
	t.Helper()
	report, ok := rt.Health.Keyed(HealthKeyResults)
	if !ok {
		t.Fatalf("no %q health report", HealthKeyResults)
	}
	return report.Metrics["published_task_results"]
}

// Without the capability, opting in fails start with the SDK's message.
func TestResultSubscriberRequiresTheCapability(t *testing.T) {
	clock := sdktest.NewClock(t0)
	rt := sdktest.NewRuntime(t, spec(clock.Now), append(fixtureOptions(),
		sdktest.WithSettings(map[string]any{SettingResultGuild: guild}))...)

	err := rt.StartErr(context.Background())

	if err == nil || err.Error() != "the host does not provide required capability 'scheduled_results.v1'" {
		t.Errorf("start = %v", err)
	}
	if current, _ := rt.Health.Current(); current.State != sdk.HealthFailed {
		t.Errorf("health after a failed start = %+v", current)
	}
}
