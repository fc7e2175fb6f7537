package llm_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
)

func TestCompleteTypesEveryFailureAndClassifiesIt(t *testing.T) {
	for _, tt := range []struct {
		name     string
		plans    []llmfake.Plan
		is       error // errors.Is target, when not an HTTPError
		status   int   // the HTTPError's status (0: none expected)
		mid      bool
		retry    time.Duration
		disp     llm.Disposition
		outcome  llm.Outcome
		requests int
	}{
		{name: "a mid-stream error event", plans: []llmfake.Plan{llmfake.MidStreamError()}, mid: true, disp: llm.Retry, outcome: llm.OutcomeDown, requests: 1},
		{name: "400 before the first chunk, then 400 again without streaming",
			plans:  []llmfake.Plan{llmfake.HTTPFailure(400, "invalid_request_error", "bad"), llmfake.HTTPFailure(400, "invalid_request_error", "bad")},
			status: 400, disp: llm.Stop, outcome: llm.OutcomeInternal, requests: 2},
		{name: "401", plans: []llmfake.Plan{llmfake.HTTPFailure(401, "invalid_authentication_error", "Invalid Authentication")}, status: 401, disp: llm.Failover, outcome: llm.OutcomeUnavailable, requests: 1},
		{name: "403", plans: []llmfake.Plan{llmfake.HTTPFailure(403, "exceeded_current_quota_error", "insufficient balance")}, status: 403, disp: llm.Stop, outcome: llm.OutcomeUnavailable, requests: 1},
		{name: "404 for the model", plans: []llmfake.Plan{llmfake.HTTPFailure(404, "resource_not_found_error", "Not found the model kimi-k2.5")}, status: 404, disp: llm.Failover, outcome: llm.OutcomeUnavailable, requests: 1},
		{name: "429 with Retry-After", plans: []llmfake.Plan{llmfake.RateLimited("7")}, status: 429, retry: 7 * time.Second, disp: llm.Failover, outcome: llm.OutcomeBusy, requests: 1},
		{name: "429 with Retry-After: 0 still counts as present", plans: []llmfake.Plan{llmfake.RateLimited("0")}, status: 429, retry: time.Second, disp: llm.Failover, outcome: llm.OutcomeBusy, requests: 1},
		{name: "429 without Retry-After", plans: []llmfake.Plan{llmfake.RateLimited("")}, status: 429, disp: llm.Retry, outcome: llm.OutcomeBusy, requests: 1},
		{name: "500", plans: []llmfake.Plan{llmfake.HTTPFailure(500, "server_error", "boom")}, status: 500, disp: llm.Retry, outcome: llm.OutcomeDown, requests: 1},
		{name: "503", plans: []llmfake.Plan{llmfake.HTTPFailure(503, "engine_overloaded_error", "overloaded")}, status: 503, disp: llm.Retry, outcome: llm.OutcomeDown, requests: 1},
		{name: "a stall after the headers", plans: []llmfake.Plan{llmfake.Stall(true)}, is: llm.ErrStall, disp: llm.Retry, outcome: llm.OutcomeDown, requests: 1},
		{name: "a stall before the headers", plans: []llmfake.Plan{llmfake.Stall(false)}, is: llm.ErrStall, disp: llm.Retry, outcome: llm.OutcomeDown, requests: 1},
		{name: "a dropped connection", plans: []llmfake.Plan{llmfake.Dropped()}, is: llm.ErrConnection, disp: llm.Retry, outcome: llm.OutcomeDown, requests: 1},
		{name: "a stream that ends without a finish reason", plans: []llmfake.Plan{{Content: []string{"x"}, Fail: llmfake.FailCut}}, is: llm.ErrConnection, disp: llm.Retry, outcome: llm.OutcomeDown, requests: 1},
		{name: "a context-length error is not retried without streaming", plans: []llmfake.Plan{llmfake.ContextLength()}, is: llm.ErrContextOverflow, status: 400, disp: llm.Stop, outcome: llm.OutcomeInternal, requests: 1},
		{name: "an OpenAI context-length error", plans: []llmfake.Plan{llmfake.HTTPFailure(400, "invalid_request_error", "This model's maximum context length is 128000 tokens.")}, is: llm.ErrContextOverflow, status: 400, disp: llm.Stop, outcome: llm.OutcomeInternal, requests: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var steps []llmfake.Step
			for _, p := range tt.plans {
				steps = append(steps, llmfake.Step{Plan: p})
			}
			s := fake(t, steps...)
			c := client(t, s)
			if tt.is == llm.ErrStall {
				// Only a stall case waits for the watchdog: a short one
				// elsewhere would turn a slow answer on a loaded machine
				// into a stall.
				c = client(t, s, func(o *llm.Options) { o.StallTimeout = 300 * time.Millisecond })
			}
			_, err := c.Complete(ctxTimeout(t), user("hi"), nil)
			if err == nil {
				t.Fatal("Complete succeeded")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tt.is)
			}
			var he *llm.HTTPError
			if tt.status != 0 || tt.mid {
				if !errors.As(err, &he) {
					t.Fatalf("err = %v (%T), want an *llm.HTTPError", err, err)
				}
				if he.Status != tt.status || he.MidStream != tt.mid || he.RetryAfter != tt.retry {
					t.Errorf("HTTPError = %+v, want status %d mid %v retry %v", he, tt.status, tt.mid, tt.retry)
				}
			} else if errors.As(err, &he) {
				t.Errorf("err = %v is an HTTPError", err)
			}
			if d, o := llm.Classify(err); d != tt.disp || o != tt.outcome {
				t.Errorf("Classify = %v, %v; want %v, %v", d, o, tt.disp, tt.outcome)
			}
			if n := len(s.Requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
		})
	}
}

func TestCompleteRefusesAnOverlongStreamLine(t *testing.T) {
	s := fake(t, llmfake.Step{Plan: llmfake.Text(strings.Repeat("x", llm.MaxLineBytes+1))})
	_, err := client(t, s).Complete(ctxTimeout(t), user("hi"), nil)
	if !errors.Is(err, llm.ErrTooLarge) || !strings.Contains(err.Error(), "stream line is longer than") {
		t.Fatalf("err = %v, want ErrTooLarge naming the line", err)
	}
}

func TestCompleteRefusesAnOversizedNonStreamedBody(t *testing.T) {
	big := strings.Repeat("y", llm.MaxAnswerBytes)
	s := fake(t,
		llmfake.Step{Plan: llmfake.HTTPFailure(400, "invalid_request_error", "no streaming here")},
		llmfake.Step{Plan: llmfake.Text(big)},
	)
	_, err := client(t, s).Complete(ctxTimeout(t), user("hi"), nil)
	if !errors.Is(err, llm.ErrTooLarge) || !strings.Contains(err.Error(), "body passed") {
		t.Fatalf("err = %v, want ErrTooLarge naming the body", err)
	}
}

func TestCompleteRefusesARedirect(t *testing.T) {
	s := fake(t)
	s.SetSteps(llmfake.Step{Repeat: true, Plan: llmfake.Plan{Status: http.StatusTemporaryRedirect, Body: `{}`,
		Header: http.Header{"Location": {s.URL() + "/chat/completions"}}}})
	_, err := client(t, s).Complete(ctxTimeout(t), user("hi"), nil)
	var he *llm.HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusTemporaryRedirect {
		t.Fatalf("err = %v, want the 307 as an HTTPError", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests: the client followed the redirect", n)
	}
}

func TestCompleteEndsAtTheRequestTimeoutEvenWhileBytesFlow(t *testing.T) {
	// A stream of nothing but keep-alive comments, never ending: every
	// byte restarts the stall watchdog (1 s, well above the comments'
	// spacing), so only the whole-request timeout (2.5 s) ends it.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
			_ = rc.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}))
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Options{BaseURL: srv.URL + "/v1", Model: "m", Transport: transport(t),
		StallTimeout: time.Second, Timeout: 2500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(ctxTimeout(t), user("hi"), nil)
	if !errors.Is(err, llm.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout (ErrStall: the comments did not restart the watchdog)", err)
	}
	if d, o := llm.Classify(err); d != llm.Retry || o != llm.OutcomeDown {
		t.Errorf("Classify = %v, %v", d, o)
	}
}

func TestCompleteStopsWhenTheCallerCancels(t *testing.T) {
	ctx, cancel := contextWithCancel(t.Context())
	arrived := llmfake.Match{Func: func(llmfake.Recorded) bool { cancel(); return true }}
	s := fake(t, llmfake.Step{Match: arrived, Plan: llmfake.Stall(true)})
	_, err := client(t, s).Complete(ctx, user("hi"), nil)
	if d, _ := llm.Classify(err); err == nil || d != llm.Stop {
		t.Fatalf("err = %v, disposition %v; want a Stop", err, d)
	}
}

func TestKimiStrictModeNeedsReasoningContentReplayed(t *testing.T) {
	history := func(reasoning string) llm.Request {
		return llm.Request{Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "weather?"},
			{Role: llm.RoleAssistant, ReasoningContent: reasoning, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "weather", Arguments: `{"city":"Paris"}`}}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: "sunny"},
		}}
	}
	s := fake(t, llmfake.Step{Match: llmfake.Match{ToolResultFor: "call_1"}, Plan: llmfake.Text("It is sunny."), Repeat: true})
	s.SetKimiStrict(true)
	c := client(t, s)

	_, err := c.Complete(ctxTimeout(t), history(""), nil)
	var he *llm.HTTPError
	if !errors.As(err, &he) || he.Status != 400 || !strings.Contains(he.Message, "reasoning_content is missing in assistant tool call message at index 1") {
		t.Fatalf("without reasoning_content: err = %v, want Kimi's 400", err)
	}
	resp, err := c.Complete(ctxTimeout(t), history("I should call weather."), nil)
	if err != nil || resp.Content != "It is sunny." {
		t.Fatalf("with reasoning_content replayed: %q, %v", resp.Content, err)
	}
	last := s.Requests()[len(s.Requests())-1]
	if rc := last.Body.Messages[1].ReasoningContent; rc == nil || *rc != "I should call weather." {
		t.Errorf("replayed reasoning_content = %v", rc)
	}
}

func TestTheNonStreamedRetryWaitsForItsHeadersPastTheStallTimeout(t *testing.T) {
	// A non-streamed answer sends its headers only when the whole
	// completion is written: the stall watchdog, which is the stream's,
	// does not cut that wait (the request timeout bounds it).
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"stream_options is not supported"}}`))
			return
		}
		select { // generating the whole answer: longer than the stall timeout
		case <-time.After(600 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}`))
	}))
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Options{BaseURL: srv.URL + "/v1", Model: "m", Transport: transport(t), StallTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Complete(ctxTimeout(t), user("hi"), nil)
	if err != nil || resp.Content != "whole" {
		t.Fatalf("Complete = %q, %v; want the non-streamed answer", resp.Content, err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d requests, want 2 (the stream, then one without)", n)
	}
}

// refusedAddress stands for app/egress's AddressRefusedError.
type refusedAddress struct{}

func (refusedAddress) Error() string {
	return "egress: refused to connect to 127.0.0.1: loopback address"
}
func (refusedAddress) PolicyRefusal() bool { return true }

func TestClassifyFailsOverAnAddressRefusedOnPolicy(t *testing.T) {
	c := client(t, fake(t), func(o *llm.Options) {
		o.Transport = roundTripper(func(*http.Request) (*http.Response, error) { return nil, refusedAddress{} })
	})
	_, err := c.Complete(ctxTimeout(t), user("hi"), nil)
	if d, o := llm.Classify(err); d != llm.Failover || o != llm.OutcomeUnavailable {
		t.Fatalf("Classify(%v) = %v, %v; want Failover, OutcomeUnavailable (a setting to change, not a retry)", err, d, o)
	}
	if !errors.Is(err, llm.ErrConnection) {
		t.Errorf("err = %v, want it to stay an ErrConnection", err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
