package assistant

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// TestUsageMeter: every response recorded counts under the model that
// served it (a response naming none under the turn's last model, as the
// turn row keeps it), each finished turn under its last model and its
// status; a turn no longer running counts nothing.
func TestUsageMeter(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		// run records on a fresh turn of c.
		run  func(t *testing.T, c *Conversations, turn TurnID)
		want []MeterModel
	}{
		{"nothing", func(*testing.T, *Conversations, TurnID) {}, []MeterModel{}},
		{"two responses, then done", func(t *testing.T, c *Conversations, turn TurnID) {
			must(t, c.RecordUsage(ctx, turn, Usage{Model: "kimi-k2", PromptTokens: 100, CompletionTokens: 10, CachedTokens: 80}))
			must(t, c.RecordUsage(ctx, turn, Usage{Model: "kimi-k2", PromptTokens: 150, CompletionTokens: 20}))
			must(t, c.FinishTurn(ctx, turn, Finish{Status: StatusDone}))
		}, []MeterModel{{Model: "kimi-k2", Calls: 2, PromptTokens: 250, CompletionTokens: 30, CachedTokens: 80,
			Turns: map[string]int64{StatusDone: 1}}}},
		{"a fallback served the last response, then failed", func(t *testing.T, c *Conversations, turn TurnID) {
			must(t, c.RecordUsage(ctx, turn, Usage{Model: "kimi-k2", PromptTokens: 5}))
			must(t, c.RecordUsage(ctx, turn, Usage{Model: "backup", CompletionTokens: 7}))
			must(t, c.FinishTurn(ctx, turn, Finish{Status: StatusFailed, ErrorKind: KindProvider}))
		}, []MeterModel{
			{Model: "backup", Calls: 1, CompletionTokens: 7, Turns: map[string]int64{StatusFailed: 1}},
			{Model: "kimi-k2", Calls: 1, PromptTokens: 5, Turns: map[string]int64{}}}},
		{"cancelled before any response", func(t *testing.T, c *Conversations, turn TurnID) {
			must(t, c.FinishTurn(ctx, turn, Finish{Status: StatusCancelled}))
		}, []MeterModel{{Model: "", Turns: map[string]int64{StatusCancelled: 1}}}},
		{"finished twice counts once", func(t *testing.T, c *Conversations, turn TurnID) {
			must(t, c.FinishTurn(ctx, turn, Finish{Status: StatusDone}))
			if err := c.FinishTurn(ctx, turn, Finish{Status: StatusDone}); err == nil {
				t.Error("a second FinishTurn succeeded")
			}
		}, []MeterModel{{Model: "", Turns: map[string]int64{StatusDone: 1}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := newConversations(t)
			rec := newRecorder(t, c)
			tt.run(t, c, rec.turn)
			if got := c.UsageMeter(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("UsageMeter() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestUsageMeterModelsBounded: past MeterModels models, responses count
// under MeterOtherModel.
func TestUsageMeterModelsBounded(t *testing.T) {
	var m Meter
	for i := range MeterModels + 5 {
		m.response(fmt.Sprintf("model-%02d", i), Usage{PromptTokens: 1})
	}
	got := m.Snapshot()
	if len(got) != MeterModels+1 {
		t.Fatalf("%d models, want %d", len(got), MeterModels+1)
	}
	for _, e := range got {
		if e.Model == MeterOtherModel && e.Calls != 5 {
			t.Errorf("%s: %d calls, want 5", MeterOtherModel, e.Calls)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
