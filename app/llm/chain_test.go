package llm_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
)

// clock is a controllable clock; its Sleep records the waits and moves
// the clock on instead of waiting.
type clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newClock() *clock { return &clock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *clock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

func steps(plans ...llmfake.Plan) []llmfake.Step {
	var out []llmfake.Step
	for _, p := range plans {
		out = append(out, llmfake.Step{Plan: p})
	}
	return out
}

var (
	ok500 = llmfake.HTTPFailure(500, "server_error", "boom")
	ok401 = llmfake.HTTPFailure(401, "invalid_authentication_error", "bad key")
	ok400 = llmfake.HTTPFailure(400, "invalid_request_error", "bad request")
)

func TestChainFollowsTheFailurePolicy(t *testing.T) {
	for _, tt := range []struct {
		name              string
		primary, fallback []llmfake.Plan
		noFallback        bool
		backend           string // "" for an error
		sleeps            int
		primaryN, fallN   int
		wantDisp          llm.Disposition
		stall             bool // the primary's stall watchdog is short (a case that stalls)
	}{
		{name: "a transient failure is retried once after 2 s", primary: []llmfake.Plan{ok500, llmfake.Text("ok")},
			backend: "primary", sleeps: 1, primaryN: 2},
		{name: "two transient failures move to the fallback", primary: []llmfake.Plan{ok500, llmfake.Stall(false)}, fallback: []llmfake.Plan{llmfake.Text("ok")},
			backend: "fallback", sleeps: 1, primaryN: 2, fallN: 1, stall: true},
		{name: "401 fails over at once", primary: []llmfake.Plan{ok401}, fallback: []llmfake.Plan{llmfake.Text("ok")},
			backend: "fallback", primaryN: 1, fallN: 1},
		{name: "404 fails over at once", primary: []llmfake.Plan{llmfake.HTTPFailure(404, "resource_not_found_error", "no model")}, fallback: []llmfake.Plan{llmfake.Text("ok")},
			backend: "fallback", primaryN: 1, fallN: 1},
		{name: "429 with Retry-After fails over at once", primary: []llmfake.Plan{llmfake.RateLimited("30")}, fallback: []llmfake.Plan{llmfake.Text("ok")},
			backend: "fallback", primaryN: 1, fallN: 1},
		{name: "429 without Retry-After is retried", primary: []llmfake.Plan{llmfake.RateLimited(""), llmfake.Text("ok")}, fallback: []llmfake.Plan{llmfake.Text("no")},
			backend: "primary", sleeps: 1, primaryN: 2},
		{name: "400 stops (after the client's own non-streamed retry)", primary: []llmfake.Plan{ok400, ok400}, fallback: []llmfake.Plan{llmfake.Text("no")},
			primaryN: 2, wantDisp: llm.Stop},
		{name: "403 stops", primary: []llmfake.Plan{llmfake.HTTPFailure(403, "permission_denied_error", "no")}, fallback: []llmfake.Plan{llmfake.Text("no")},
			primaryN: 1, wantDisp: llm.Stop},
		{name: "a context overflow stops", primary: []llmfake.Plan{llmfake.ContextLength()}, fallback: []llmfake.Plan{llmfake.Text("no")},
			primaryN: 1, wantDisp: llm.Stop},
		{name: "a failover without a fallback fails", primary: []llmfake.Plan{ok401}, noFallback: true,
			primaryN: 1, wantDisp: llm.Failover},
		{name: "the fallback is retried once too", primary: []llmfake.Plan{ok401}, fallback: []llmfake.Plan{ok500, llmfake.Text("ok")},
			backend: "fallback", sleeps: 1, primaryN: 1, fallN: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := fake(t, steps(tt.primary...)...)
			var fb llm.Provider
			f := fake(t, steps(tt.fallback...)...)
			if !tt.noFallback {
				fb = client(t, f)
			}
			clk := newClock()
			primary := client(t, p)
			if tt.stall {
				primary = client(t, p, func(o *llm.Options) { o.StallTimeout = 300 * time.Millisecond })
			}
			ch := llm.NewChain(primary, fb, llm.ChainOptions{Sleep: clk.Sleep, Now: clk.Now})
			resp, err := ch.Complete(ctxTimeout(t), user("hi"), nil)
			if tt.backend != "" {
				if err != nil || resp.Backend != tt.backend || resp.Content != "ok" {
					t.Fatalf("Complete = %q from %q, %v; want ok from %s", resp.Content, resp.Backend, err, tt.backend)
				}
			} else if d, _ := llm.Classify(err); err == nil || d != tt.wantDisp {
				t.Fatalf("err = %v (disposition %v), want a %v error", err, d, tt.wantDisp)
			}
			if got := clk.slept(); len(got) != tt.sleeps || (len(got) == 1 && got[0] != llm.RetryDelay) {
				t.Errorf("slept %v, want %d waits of %v", got, tt.sleeps, llm.RetryDelay)
			}
			if n, m := len(p.Requests()), len(f.Requests()); n != tt.primaryN || m != tt.fallN {
				t.Errorf("requests: primary %d fallback %d, want %d %d", n, m, tt.primaryN, tt.fallN)
			}
		})
	}
}

func TestChainTurnStaysOnTheBackendThatServedLast(t *testing.T) {
	p := fake(t, llmfake.Step{Plan: ok401}, llmfake.Step{Plan: llmfake.Text("primary"), Repeat: true})
	f := fake(t, llmfake.Step{Plan: llmfake.Text("fallback"), Repeat: true})
	clk := newClock()
	ch := llm.NewChain(client(t, p), client(t, f), llm.ChainOptions{Sleep: clk.Sleep, Now: clk.Now})

	turn := ch.Turn()
	for i := range 3 {
		resp, err := turn.Complete(ctxTimeout(t), user("hi"), nil)
		if err != nil || resp.Backend != "fallback" {
			t.Fatalf("call %d of the turn: %q from %q, %v; want the fallback", i, resp.Content, resp.Backend, err)
		}
	}
	if n := len(p.Requests()); n != 1 {
		t.Errorf("the primary got %d requests in the turn, want 1 (then sticky to the fallback)", n)
	}
	resp, err := ch.Turn().Complete(ctxTimeout(t), user("hi"), nil)
	if err != nil || resp.Backend != "primary" {
		t.Errorf("a new turn: %q from %q, %v; want the primary again", resp.Content, resp.Backend, err)
	}
}

func TestChainCoolsABackendDownAfterRepeatedFailures(t *testing.T) {
	p := fake(t, llmfake.Step{Plan: ok500, Repeat: true})
	f := fake(t, llmfake.Step{Plan: llmfake.Text("ok"), Repeat: true})
	clk := newClock()
	var log logBuffer
	ch := llm.NewChain(client(t, p), client(t, f), llm.ChainOptions{Sleep: clk.Sleep, Now: clk.Now, Cooldown: time.Minute, FailuresBeforeCooldown: 3, Logger: log.logger()})

	for range 2 { // 2 + 1 failed attempts on the primary start its cooldown
		if _, err := ch.Complete(ctxTimeout(t), user("hi"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.Requests()); n != 3 {
		t.Fatalf("primary requests %d, want 3 (two, then one that starts the cooldown)", n)
	}
	resp, err := ch.Complete(ctxTimeout(t), user("hi"), nil)
	if err != nil || resp.Backend != "fallback" || len(p.Requests()) != 3 {
		t.Fatalf("during the cooldown: %q, %v, primary requests %d; want the fallback alone", resp.Backend, err, len(p.Requests()))
	}
	clk.advance(time.Minute)
	if _, err := ch.Complete(ctxTimeout(t), user("hi"), nil); err != nil {
		t.Fatal(err)
	}
	if n := len(p.Requests()); n != 5 {
		t.Errorf("after the cooldown the primary got %d requests in total, want 5: it is tried (and retried) again", n)
	}
}

func TestChainFailsWithErrCoolingDownWhenEveryBackendIsCooling(t *testing.T) {
	p := fake(t, llmfake.Step{Plan: ok500, Repeat: true})
	clk := newClock()
	ch := llm.NewChain(client(t, p), nil, llm.ChainOptions{Sleep: clk.Sleep, Now: clk.Now, FailuresBeforeCooldown: 2})
	if _, err := ch.Complete(ctxTimeout(t), user("hi"), nil); err == nil {
		t.Fatal("a failing primary succeeded")
	}
	_, err := ch.Complete(ctxTimeout(t), user("hi"), nil)
	if !errors.Is(err, llm.ErrCoolingDown) {
		t.Fatalf("err = %v, want ErrCoolingDown", err)
	}
	if d, o := llm.Classify(err); d != llm.Stop || o != llm.OutcomeDown {
		t.Errorf("Classify = %v %v", d, o)
	}
	if n := len(p.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (none while cooling down)", n)
	}
}

func TestChainTellsTheCallerToDiscardAFailedAttemptsStream(t *testing.T) {
	p := fake(t, steps(llmfake.Dropped(), llmfake.Text("fresh"))...)
	clk := newClock()
	ch := llm.NewChain(client(t, p), nil, llm.ChainOptions{Sleep: clk.Sleep, Now: clk.Now})
	var ev events
	resp, err := ch.Complete(ctxTimeout(t), user("hi"), ev.add)
	if err != nil || resp.Content != "fresh" {
		t.Fatalf("Complete = %q, %v", resp.Content, err)
	}
	var kinds []llm.EventKind
	for _, e := range ev.got {
		kinds = append(kinds, e.Kind)
	}
	want := []llm.EventKind{llm.EventText, llm.EventReset, llm.EventText}
	if mustJSON(t, kinds) != mustJSON(t, want) {
		t.Errorf("event kinds = %v, want %v", kinds, want)
	}
}

func TestChainWithoutAPrimaryIsNotConfigured(t *testing.T) {
	ch := llm.NewChain(nil, nil, llm.ChainOptions{})
	if _, err := ch.Complete(ctxTimeout(t), user("hi"), nil); !errors.Is(err, llm.ErrNotConfigured) {
		t.Errorf("Complete: %v", err)
	}
	if _, err := ch.Models(ctxTimeout(t)); !errors.Is(err, llm.ErrNotConfigured) {
		t.Errorf("Models: %v", err)
	}
}

func TestChainModelsFallsBackWhenThePrimaryIsDown(t *testing.T) {
	p := fake(t)
	p.SetModelsPlan(&ok401)
	f := fake(t)
	f.SetModels(llmfake.ModelEntry{ID: "backup"})
	ch := llm.NewChain(client(t, p), client(t, f), llm.ChainOptions{})
	ms, err := ch.Models(ctxTimeout(t))
	if err != nil || len(ms) != 1 || ms[0].ID != "backup" {
		t.Fatalf("Models = %v, %v", ms, err)
	}
}
