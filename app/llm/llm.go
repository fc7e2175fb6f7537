// Package llm talks to a language model over the OpenAI-compatible Chat
// Completions protocol (Moonshot's Kimi by default; OpenAI, OpenRouter,
// DeepSeek, Groq and local servers such as Ollama, vLLM and llama.cpp).
//
// It is storage-free, like app/worldtree: it imports no other Kimi package
// (the caller passes app/egress's guarded streaming transport as
// Options.Transport), reads no environment variable, and holds no setting of its own — the caller builds
// a Client from the operator's settings and replaces it when they change.
//
// A Client always streams (stream: true, stream_options.include_usage) and
// reassembles the deltas into one Response by the original agent's rule;
// onEvent sees the text and reasoning as they arrive. A Chain puts a primary
// and an optional fallback behind the original's failure policy (Classify):
// one retry after 2 s on a transient failure, the fallback on 401/404 or a
// 429 with Retry-After, a stop on 400/403/422 and a context overflow, and a
// short cooldown per backend after repeated failures.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Provider is one way to reach a model: a Client, or a Chain of them.
type Provider interface {
	// Complete sends req and returns the reassembled answer. onEvent, when
	// not nil, is called on the caller's goroutine-free path (the reading
	// goroutine) for each text or reasoning delta, in order; it must not
	// block for long.
	Complete(ctx context.Context, req Request, onEvent func(Event)) (Response, error)
	// Models lists the models the endpoint serves (GET {base}/models).
	Models(ctx context.Context) ([]Model, error)
}

// Role is a message's author.
type Role string

// The roles of Chat Completions.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one message of a conversation.
type Message struct {
	Role    Role
	Content string
	// Name is the author's name (optional; user messages).
	Name string
	// ToolCalls are an assistant message's calls, replayed as they came.
	ToolCalls []ToolCall
	// ToolCallID is the call a tool message answers.
	ToolCallID string
	// ReasoningContent is an assistant message's reasoning, replayed on
	// later iterations: Kimi's thinking models answer 400 when an earlier
	// assistant tool-call message lacks it.
	ReasoningContent string
}

// ToolCall is one call a model asked for.
type ToolCall struct {
	// ID is the provider's id, or "call_<index>" when it sent none.
	ID   string
	Name string
	// Arguments is the JSON text of the arguments as the model sent it
	// (concatenated fragments), replayed verbatim.
	Arguments string
	// Args is Arguments parsed, or nil when ArgsErr is set.
	Args map[string]any
	// ArgsErr is why Arguments did not parse as a JSON object; the tool
	// loop answers the model with a corrective error instead of calling.
	ArgsErr error
}

// Tool is a function offered to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object.
	Parameters json.RawMessage
}

// Request is one completion request.
type Request struct {
	// Model is sent verbatim; empty means the Client's default model.
	Model    string
	Messages []Message
	Tools    []Tool
	// MaxTokens is always sent (0 means the Client's default); Moonshot's
	// own default is about 1,024 and reasoning shares it.
	MaxTokens int
	// Temperature, when nil, is not sent.
	Temperature *float64
	// Extra are further top-level body fields (e.g. Moonshot's thinking).
	Extra map[string]any
}

// EventKind says what an Event carries.
type EventKind int

// The kinds of streamed events.
const (
	// EventText is a fragment of the answer's text.
	EventText EventKind = iota + 1
	// EventReasoning is a fragment of the model's reasoning.
	EventReasoning
	// EventToolCall is the first fragment of a tool call (its name known).
	EventToolCall
	// EventReset: a Chain is retrying or failing over; what was streamed
	// so far is void, the next attempt's events follow.
	EventReset
)

// Event is one streamed fragment.
type Event struct {
	Kind EventKind
	// Text is the fragment (EventText, EventReasoning) or the tool's
	// name (EventToolCall).
	Text string
}

// Usage is the token accounting a provider reported.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	// CachedTokens are prompt tokens served from the provider's cache.
	CachedTokens int
	// ReasoningTokens are completion tokens spent on reasoning.
	ReasoningTokens int
	// Present reports whether the provider sent usage at all.
	Present bool
}

// Response is a reassembled answer.
type Response struct {
	Content   string
	Reasoning string
	// ToolCalls are sorted by the stream's index.
	ToolCalls []ToolCall
	// FinishReason is the last one a chunk carried ("stop" when none did).
	FinishReason string
	Usage        Usage
	// ServedModel is the model the provider says served the request.
	ServedModel string
	// Backend names the Chain member that served it ("primary",
	// "fallback"); empty from a bare Client.
	Backend string
	// Latency is from the request to the last byte; FirstByte to the
	// response headers.
	Latency, FirstByte time.Duration
}

// Model is one entry of GET /models.
type Model struct {
	ID      string
	OwnedBy string
	// ContextWindow is the model's context length when the provider says
	// (Moonshot's context_length); 0 when unknown.
	ContextWindow int
}

// HTTPError is a provider's error answer.
type HTTPError struct {
	Status int
	// RetryAfter is the Retry-After header's wait (0 when absent).
	RetryAfter time.Duration
	// Type and Message are the OpenAI-shaped body's error.type and
	// error.message (scrubbed of the key), when it had one.
	Type, Message string
	// MidStream reports an {"error": …} event after the stream began.
	MidStream bool
}

func (e *HTTPError) Error() string {
	if e.MidStream {
		return fmt.Sprintf("llm: stream error: %s: %s", e.Type, e.Message)
	}
	if e.Message != "" {
		return fmt.Sprintf("llm: HTTP %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("llm: HTTP %d", e.Status)
}

var (
	// ErrStall: no byte arrived (response headers included) for the
	// stall timeout.
	ErrStall = errors.New("llm: the model's stream stalled")
	// ErrContextOverflow: the prompt and max_tokens exceed the model's
	// context window (the provider's invalid_request_error saying so).
	ErrContextOverflow = errors.New("llm: the conversation is longer than the model's context window")
	// ErrNotConfigured: no base URL or model is set.
	ErrNotConfigured = errors.New("llm: the model provider is not configured")
	// ErrCoolingDown: every backend of a Chain is in its cooldown.
	ErrCoolingDown = errors.New("llm: the model provider is cooling down after repeated failures")
)

// Disposition is what the failure policy does with an error.
type Disposition int

// The dispositions (the original agent's provider_failure_disposition).
const (
	// Retry the same backend once after 2 s (408, 425, 429 without
	// Retry-After, 5xx, connection errors, stalls), then the fallback.
	Retry Disposition = iota + 1
	// Failover to the fallback at once, without retrying (401, 404, a 429
	// with Retry-After).
	Failover
	// Stop: replaying elsewhere is useless or unsafe (400, 403, 422, a
	// context overflow, anything else).
	Stop
)

// Outcome is the user-facing category of a failure, which the caller maps
// to the original's scrubbed messages (UserMessage).
type Outcome int

// The outcomes.
const (
	OutcomeInternal    Outcome = iota + 1 // Sorry, I hit an internal error reaching the model.
	OutcomeUnavailable                    // The selected model is unavailable to this bot right now.
	OutcomeBusy                           // The model provider is busy right now.
	OutcomeDown                           // The model provider is temporarily unavailable.
)

// UserMessage is the original agent's scrubbed message for an outcome.
func UserMessage(o Outcome) string {
	switch o {
	case OutcomeUnavailable:
		return "The selected model is unavailable to this bot right now. Please retry or contact the bot operator."
	case OutcomeBusy:
		return "The model provider is busy right now. Please try again shortly."
	case OutcomeDown:
		return "The model provider is temporarily unavailable. Please try again shortly."
	default:
		return "Sorry, I hit an internal error reaching the model. Please try again."
	}
}
