package host

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
)

// TestEventCountersInHealthMetrics: the event bus's and the storage's
// counters are the module's health metrics (not only the status's), guild-
// filtered events are events_filtered and not queue drops, and a module
// that reports more metrics than the bound still shows every counter
// within sdk.MaxHealthMetrics.
func TestEventCountersInHealthMetrics(t *testing.T) {
	mod := &testModule{}
	mod.start = func(ctx context.Context, rt *sdk.Runtime) error {
		own := map[string]float64{}
		for i := range 40 {
			own[fmt.Sprintf("a_metric_%02d", i)] = float64(i)
		}
		rt.Health.Report(sdk.HealthHealthy, "", own)
		for _, pattern := range []string{"discord.message", "counted.*"} {
			if _, err := rt.Events.Subscribe(pattern, func(ctx context.Context, e sdk.Event) error {
				if e.Topic == "counted.bad" {
					return errors.New("bad event")
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	}
	h, _, _ := realRig(t, []sdk.Spec{spec("counted", mod, func(s *sdk.Spec) { s.Permissions.EventTopics = []string{"discord.message"} })})
	t.Cleanup(func() { h.Close(context.Background()) })
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.Module("counted"); st.State != StateRunning {
		t.Fatalf("counted = %s %q", st.State, st.Reason)
	}
	bus := mod.runtime().Events
	for _, topic := range []string{"counted.ok", "counted.ok", "counted.bad"} {
		if err := bus.Publish(topic, nil); err != nil {
			t.Fatal(err)
		}
	}
	// guild 99 is not active: the bus filters the event for the module
	if err := h.bus.PublishCore(sdk.TopicMessage, sdk.MessageEvent{Message: sdk.MessageSnapshot{Ref: sdk.MessageRef{GuildID: 99, ChannelID: 1, MessageID: 1}}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"events_published": 3, "events_handled": 2, "events_failed": 1, "events_timed_out": 0,
		"events_dropped": 0, "events_filtered": 1, "events_pending": 0, "storage_writes": 0,
	}
	var st ModuleStatus
	eventually(t, "the counters in the health metrics", func() bool {
		st, _ = h.Module("counted")
		for k, v := range want {
			if got, ok := st.Health.Metrics[k]; !ok || got != v {
				return false
			}
		}
		return true
	})
	if n := len(st.Health.Metrics); n > sdk.MaxHealthMetrics {
		t.Errorf("health metrics have %d keys, over the bound %d", n, sdk.MaxHealthMetrics)
	}
	if n := len(st.Metrics); n > sdk.MaxHealthMetrics {
		t.Errorf("status metrics have %d keys, over the bound %d", n, sdk.MaxHealthMetrics)
	}
	if _, ok := st.Health.Metrics["a_metric_00"]; !ok {
		t.Errorf("the module's own metrics are gone: %v", st.Health.Metrics)
	}
	if _, ok := st.Health.Metrics["storage_write_hold_max_ms"]; !ok {
		t.Errorf("no storage counters: %v", st.Health.Metrics)
	}
}
