package events

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/modules/sdk"
)

// benchModules is how many subscribing modules BenchmarkEventBus feeds.
const benchModules = 8

// benchBatch is how many events are published before waiting for their
// delivery: below the lane's queue, so nothing is dropped and every event
// counted is one a handler ran.
const benchBatch = sdk.EventQueueSize / 2

// BenchmarkEventBus measures publish→handler deliveries per second across 8
// subscribing modules (each event reaches all 8: events/s counts handler
// invocations), next to a bare buffered-channel hop measured in the same
// run with the same shape (8 channels of the lane's size, sdk.EventWorkers
// consumers each, the same batches): bare-hops/s, and ratio = events/s ÷
// bare-hops/s. allocs/op are per published event.
func BenchmarkEventBus(b *testing.B) {
	bare := bareHops(b, 200_000)

	bus := New(Options{Logger: slog.New(slog.DiscardHandler)})
	defer bus.Close(time.Minute)
	ctx := context.Background()
	pub := bus.Module(ctx, "pub", sdk.Permissions{}, nil)
	var handled atomic.Int64
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var target atomic.Int64
	handler := func(context.Context, sdk.Event) error {
		if handled.Add(1) == target.Load() {
			mu.Lock()
			cond.Broadcast()
			mu.Unlock()
		}
		return nil
	}
	for i := range benchModules {
		m := bus.Module(ctx, fmt.Sprintf("m%d", i), sdk.Permissions{EventTopics: []string{"pub.*"}}, nil)
		if _, err := m.Subscribe("pub.tick", handler); err != nil {
			b.Fatal(err)
		}
	}
	payload := any(1)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for sent := 0; sent < b.N; {
		n := min(benchBatch, b.N-sent)
		target.Store(int64(sent+n) * benchModules)
		for range n {
			if err := pub.Publish("pub.tick", payload); err != nil {
				b.Fatal(err)
			}
		}
		sent += n
		mu.Lock()
		for handled.Load() < target.Load() {
			cond.Wait()
		}
		mu.Unlock()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	rate := float64(b.N*benchModules) / elapsed.Seconds()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(bare, "bare-hops/s")
	b.ReportMetric(rate/bare, "ratio")
	var dropped uint64
	bus.mu.Lock()
	for m := range bus.mods {
		dropped += m.Stats().Dropped
	}
	bus.mu.Unlock()
	if dropped != 0 {
		b.Fatalf("%d events dropped: the measure would count lost events", dropped)
	}
}

// bareHops is the rate of values through buffered channels in the bus's
// shape: a producer sends each value to benchModules channels of the lane's
// capacity, sdk.EventWorkers goroutines receive from each, in batches of
// benchBatch.
func bareHops(b *testing.B, events int) float64 {
	b.Helper()
	var handled atomic.Int64
	var target atomic.Int64
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	chans := make([]chan item, benchModules)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range chans {
		chans[i] = make(chan item, sdk.EventQueueSize)
		for range sdk.EventWorkers {
			wg.Add(1)
			go func(ch chan item) {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					case <-ch:
						if handled.Add(1) == target.Load() {
							mu.Lock()
							cond.Broadcast()
							mu.Unlock()
						}
					}
				}
			}(chans[i])
		}
	}
	defer func() { close(done); wg.Wait() }()
	it := item{ev: sdk.Event{Topic: "pub.tick", Payload: 1}}
	start := time.Now()
	for sent := 0; sent < events; {
		n := min(benchBatch, events-sent)
		target.Store(int64(sent+n) * benchModules)
		for range n {
			for _, ch := range chans {
				ch <- it
			}
		}
		sent += n
		mu.Lock()
		for handled.Load() < target.Load() {
			cond.Wait()
		}
		mu.Unlock()
	}
	return float64(events*benchModules) / time.Since(start).Seconds()
}
