package assistant

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/internal/benchbase"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/hello"
)

// benchSurface signals the end of a turn (its final reaction) and
// records nothing else.
type benchSurface struct{ done chan struct{} }

func (s benchSurface) React(_ context.Context, e string) error {
	if e != ReactWorking {
		close(s.done)
	}
	return nil
}
func (benchSurface) Unreact(context.Context, string) error          { return nil }
func (benchSurface) Status(context.Context, string) (uint64, error) { return 1, nil }
func (benchSurface) ClearStatus(context.Context) error              { return nil }
func (benchSurface) Busy(context.Context, string) error             { return nil }
func (benchSurface) Deliver(context.Context, string, bool) (uint64, error) {
	return uint64(time.Now().UnixNano()), nil
}

// BenchmarkAssistantTurnCore is the assistant alone: one turn from Handle
// to the final reaction on a minimal in-process surface (app's
// BenchmarkAssistantTurn is a turn through the bot and the fake Discord),
// with a zero-latency fake model (over loopback HTTP) and one tool round
// (hello_member through the real host), on real SQLite, on the wall
// clock: turns/s, allocations per turn, p50/p99 Handle→final reaction,
// beside the raw SQLite commit rate of the same kind of store in the same
// run (a turn makes eight commits: open, begin, the status message, two
// usages, the tool call, the delivered map and the finish; the usage
// roll-up is written inside them). Turns run one after another, each by
// another member, so the limits' reads run and never refuse.
func BenchmarkAssistantTurnCore(b *testing.B) {
	r := newTurnRigTimeout(b, 300*time.Millisecond, llmfake.Step{Repeat: true, Reply: func(rec llmfake.Recorded) llmfake.Plan {
		if rec.Body.Last().Role == "tool" {
			return llmfake.Plan{Content: []string{"Done, ", "Ada."}, Usage: llmfake.Usage{Prompt: 100, Completion: 2}}
		}
		return llmfake.Plan{Calls: []llmfake.Call{{ID: "h1", Name: hello.ToolGreet, Args: []string{"{}"}}}, Usage: llmfake.Usage{Prompt: 90, Completion: 5}}
	}})
	a, err := NewAssistant(AssistantOptions{Store: NewConversations(r.st, nil), Provider: r.a.o.Provider, Tools: r.tools.h,
		Settings: r.st, Identity: r.a.o.Identity})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close(context.Background()) })
	// Each turn is another member's (the limits' path runs, none
	// refuses), in a guild whose budget the run cannot spend.
	if _, err := settings.SaveAssistantLimits(context.Background(), r.st, settings.AssistantLimitsUpdate{UserTurnsPer10Min: "10",
		UserDailyTokens: "100000", GuildDailyTokens: "1000000000", MonthlyTokens: "0"}, settings.Actor{Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	commits := benchbase.RawCommitRate(b, r.st, 300)
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		s := benchSurface{done: make(chan struct{})}
		t0 := time.Now()
		in := incoming(uint64(10_000+i), "hello")
		in.UserID = uint64(100 + i)
		a.Handle(context.Background(), in, s)
		<-s.done
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	a.wg.Wait()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(float64(len(lat)-1)*p)].Microseconds()) / 1000 }
	tps := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(tps, "turns/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(commits, "raw-commits/s")
	b.ReportMetric(tps/commits, "ratio")
}
