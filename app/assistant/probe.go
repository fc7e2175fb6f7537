package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/kimiapp/kimi/app/egress"
	"github.com/kimiapp/kimi/app/llm"
)

// ProbeTimeout bounds each step of Test connection.
const ProbeTimeout = 20 * time.Second

// The steps of Test connection.
const (
	StepConfiguration = "configuration"
	StepModels        = "model list (GET /models)"
	StepCompletion    = "one-token completion"
)

// probeTool is the one trivial tool the completion offers, to see whether
// the endpoint accepts tools and streams a call back.
var probeTool = llm.Tool{
	Name:        "kimi_ping",
	Description: "Answers pong. Call it when asked to check that tool calls work.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{}}`),
}

// Probe is one backend's Test connection result. Nothing in it holds a key.
type Probe struct {
	Backend, BaseURL, Model string
	OK                      bool
	// FailedStep and Reason say where and why it failed: the original's
	// scrubbed message with the HTTP status, or the egress refusal.
	FailedStep, Reason string
	// Reachable: the endpoint answered HTTP at all.
	Reachable bool
	// Status is the HTTP status of GET /models (200 when it listed).
	Status int
	// ModelsLatency and CompletionLatency time each step.
	ModelsLatency, CompletionLatency time.Duration
	// Listed: the model is in the endpoint's list; Models counts the list.
	Listed bool
	Models int
	// ToolCall: the completion came back with a tool call; Reasoning: with
	// reasoning_content.
	ToolCall, Reasoning bool
	FinishReason        string
}

// Report is a Test connection: one Probe per backend.
type Report struct {
	At     time.Time
	Probes []Probe
}

// OK reports whether every backend passed (and there was one).
func (r Report) OK() bool {
	return len(r.Probes) > 0 && !slices.ContainsFunc(r.Probes, func(p Probe) bool { return !p.OK })
}

// TestConnection checks each backend: GET /models, then a one-token
// completion offering probeTool. Every completion (or failed step) is
// recorded in the status card's counters, and the report is kept as the
// last test (LastTest).
func (s *Service) TestConnection(ctx context.Context) Report {
	rep := s.testConnection(ctx)
	s.mu.Lock()
	s.lastTest = &rep
	s.mu.Unlock()
	s.changed.Notify()
	return rep
}

func (s *Service) testConnection(ctx context.Context) Report {
	s.mu.RLock()
	members := slices.Clone(s.members)
	eff := s.settings
	buildErr := s.buildErr
	s.mu.RUnlock()
	rep := Report{At: s.o.Now()}
	if len(members) == 0 {
		reason := "Enter a base URL, an API key and a model, and save."
		if buildErr != nil {
			reason = "The saved settings cannot be used: " + buildErr.Error()
		} else if eff.Primary.Model == "" && (eff.Primary.APIKey != "" || eff.AllowPrivateNetwork) {
			reason = "Choose a model and save."
		}
		rep.Probes = []Probe{{Backend: BackendPrimary, BaseURL: eff.Primary.BaseURL, FailedStep: StepConfiguration, Reason: reason}}
		return rep
	}
	for _, m := range members {
		rep.Probes = append(rep.Probes, s.probe(ctx, m))
	}
	return rep
}

func (s *Service) probe(ctx context.Context, m member) Probe {
	p := Probe{Backend: m.name, BaseURL: m.client.BaseURL(), Model: m.client.Model()}
	mctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	start := s.o.Now()
	models, err := m.client.Models(mctx)
	cancel()
	p.ModelsLatency = s.o.Now().Sub(start)
	if err != nil {
		p.FailedStep, p.Reason = StepModels, Describe(err)
		p.Status, p.Reachable = statusOf(err)
		s.rec.Record(Call{Err: err, Outcome: p.Reason, Backend: m.name, Latency: p.ModelsLatency})
		return p
	}
	p.Reachable, p.Status, p.Models = true, 200, len(models)
	p.Listed = slices.ContainsFunc(models, func(x llm.Model) bool { return x.ID == p.Model })

	cctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	start = s.o.Now()
	resp, err := m.client.Complete(cctx, llm.Request{
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: "Connection test: reply with OK."}},
		Tools:     []llm.Tool{probeTool},
		MaxTokens: 1,
	}, nil)
	p.CompletionLatency = s.o.Now().Sub(start)
	if err != nil {
		p.FailedStep, p.Reason = StepCompletion, Describe(err)
		s.rec.Record(Call{Err: err, Outcome: p.Reason, Backend: m.name, Latency: p.CompletionLatency})
		return p
	}
	p.OK, p.ToolCall, p.Reasoning, p.FinishReason = true, len(resp.ToolCalls) > 0, resp.Reasoning != "", resp.FinishReason
	s.rec.Record(Call{Backend: m.name, Latency: p.CompletionLatency})
	return p
}

// statusOf is an error's HTTP status and whether the endpoint answered.
func statusOf(err error) (int, bool) {
	var he *llm.HTTPError
	if errors.As(err, &he) {
		return he.Status, true
	}
	return 0, false
}

// errorType accepts an OpenAI error type worth showing (a short token).
var errorType = regexp.MustCompile(`\A[a-z][a-z0-9_.]{0,63}\z`)

// Describe is the operator's reason for a failure: the egress refusal as
// it is (it names what to change), or the original's scrubbed message with
// the HTTP status and error type. Never the provider's raw text.
func Describe(err error) string {
	var refused *egress.AddressRefusedError
	if errors.As(err, &refused) {
		return refused.Error()
	}
	_, outcome := llm.Classify(err)
	msg := llm.UserMessage(outcome)
	var he *llm.HTTPError
	switch {
	case errors.As(err, &he) && he.MidStream:
		msg += " (an error event in the stream)"
	case errors.As(err, &he):
		detail := fmt.Sprintf("HTTP %d", he.Status)
		if errorType.MatchString(he.Type) {
			detail += " " + he.Type
		}
		msg += " (" + detail + ")"
	case errors.Is(err, llm.ErrStall):
		msg += " (no answer within the stall timeout)"
	case errors.Is(err, llm.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		msg += " (timed out)"
	case errors.Is(err, llm.ErrConnection):
		msg += " (could not connect)"
	}
	return msg
}
