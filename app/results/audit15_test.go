package results

import (
	"context"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestQuarantineEndIsSignalled (audit, issue 15): /results shows a
// quarantined module's subscriptions with a "quarantined" badge, read from
// the service after each change it signals (Watch). When the stuck
// handler returns, the quarantine ends; /results must hear of it even
// when no row of the module waited with DetailQuarantined (nothing to
// requeue), or the badge (and the live region) stays "quarantined" until
// some unrelated change.
func TestQuarantineEndIsSignalled(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.HandlerTimeout = 20 * time.Millisecond
		o.CancelGrace = 20 * time.Millisecond
		o.BlockedRetry = 24 * time.Hour
	})
	b, _ := e.bind(e.svc, "kudos")
	release := make(chan struct{})
	returned := make(chan struct{})
	h := &recorder{fn: func(ctx context.Context, r sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
		defer close(returned)
		<-release // ignores ctx
		return nil
	}}
	e.subscribe(b, guildA, h)
	e.enqueue(e.pub("run-1", guildA))
	waitFor(t, "run-1 blocked as stuck", func() bool {
		r := e.rows("run_id = 'run-1'")
		return len(r) == 1 && r[0].Status == StatusBlocked && r[0].Detail == DetailIgnoredCancel
	})
	k := SubKey{Module: "kudos", Name: "digest", GuildID: guildA}
	if sub, err := e.svc.Subscription(e.ctx, k); err != nil || !sub.Quarantined {
		t.Fatalf("during the quarantine: %+v, %v", sub, err)
	}
	settled(t, e.svc)

	changed := watchOnce(t, e.svc)
	close(release)
	<-returned
	waitFor(t, "the quarantine ends", func() bool { return !e.svc.isQuarantined("kudos") })
	waitSignal(t, changed, "the end of the quarantine")
	if sub, err := e.svc.Subscription(e.ctx, k); err != nil || sub.Quarantined {
		t.Fatalf("after the quarantine: %+v, %v", sub, err)
	}
}
