package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The wire shapes of a streamed chunk (and of a non-streamed answer, whose
// choices carry a message instead of a delta).
type (
	wireChunk struct {
		Model   string          `json:"model"`
		Choices []wireChoice    `json:"choices"`
		Usage   *wireUsage      `json:"usage"`
		Error   json.RawMessage `json:"error"`
	}
	wireChoice struct {
		Index        int        `json:"index"`
		Delta        *wireDelta `json:"delta"`
		Message      *wireDelta `json:"message"`
		FinishReason *string    `json:"finish_reason"`
		// Usage: Moonshot has sent the usage inside the last choice.
		Usage *wireUsage `json:"usage"`
	}
	wireDelta struct {
		Content          *string         `json:"content"`
		ReasoningContent *string         `json:"reasoning_content"`
		Reasoning        *string         `json:"reasoning"`
		ToolCalls        []wireDeltaCall `json:"tool_calls"`
	}
	wireDeltaCall struct {
		Index    *int   `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	wireUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
		// CachedTokens is Moonshot's top-level spelling.
		CachedTokens        int `json:"cached_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails *struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	}
)

// maxToolCalls bounds the distinct tool-call indexes one answer may use.
const maxToolCalls = 128

// ErrTooLarge: an answer (a line of the stream, a body, the accumulated
// text) passed the client's size limit.
var ErrTooLarge = errors.New("llm: the model's answer is too large")

// ErrMalformed: the provider's answer is not the protocol's shape.
var ErrMalformed = errors.New("llm: the model's answer is malformed")

// callAcc is one tool call being reassembled.
type callAcc struct {
	index          int
	id, name, args strings.Builder
	announced      bool
}

// merger reassembles deltas by the original agent's rule: tool calls keyed
// by index (missing or negative → 0); non-empty id, name and argument
// fragments concatenated (an id or name fragment equal to the whole id or
// name so far is a repeat, not a fragment: some servers resend them on each
// chunk); sorted by index at the end; a missing id → call_<index>; the
// arguments parsed once, at the end.
type merger struct {
	content, reasoning strings.Builder
	calls              map[int]*callAcc
	finish             string
	usage              Usage
	model              string
	size, limit        int
	onEvent            func(Event)
}

func newMerger(limit int, onEvent func(Event)) *merger {
	return &merger{limit: limit, onEvent: onEvent}
}

func (m *merger) emit(k EventKind, text string) {
	if m.onEvent != nil && text != "" {
		m.onEvent(Event{Kind: k, Text: text})
	}
}

// grow accounts n more accumulated bytes against the limit.
func (m *merger) grow(n int) error {
	m.size += n
	if m.size > m.limit {
		return fmt.Errorf("%w: the answer passed %d bytes", ErrTooLarge, m.limit)
	}
	return nil
}

// add merges one chunk.
func (m *merger) add(c *wireChunk) error {
	if c.Model != "" {
		m.model = c.Model
	}
	if c.Usage != nil {
		m.setUsage(c.Usage)
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // n = 1: only the first choice is ours
		}
		if ch.Usage != nil && c.Usage == nil {
			m.setUsage(ch.Usage)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			m.finish = *ch.FinishReason
		}
		d := ch.Delta
		if d == nil {
			d = ch.Message
		}
		if d == nil {
			continue
		}
		if err := m.addDelta(d); err != nil {
			return err
		}
	}
	return nil
}

func (m *merger) addDelta(d *wireDelta) error {
	if d.Content != nil && *d.Content != "" {
		if err := m.grow(len(*d.Content)); err != nil {
			return err
		}
		m.content.WriteString(*d.Content)
		m.emit(EventText, *d.Content)
	}
	r := d.ReasoningContent
	if r == nil || *r == "" {
		r = d.Reasoning
	}
	if r != nil && *r != "" {
		if err := m.grow(len(*r)); err != nil {
			return err
		}
		m.reasoning.WriteString(*r)
		m.emit(EventReasoning, *r)
	}
	for i := range d.ToolCalls {
		if err := m.addCall(&d.ToolCalls[i]); err != nil {
			return err
		}
	}
	return nil
}

func (m *merger) addCall(tc *wireDeltaCall) error {
	idx := 0
	if tc.Index != nil && *tc.Index > 0 {
		idx = *tc.Index
	}
	acc := m.calls[idx]
	if acc == nil {
		if len(m.calls) >= maxToolCalls {
			return fmt.Errorf("%w: more than %d tool calls", ErrTooLarge, maxToolCalls)
		}
		if m.calls == nil {
			m.calls = make(map[int]*callAcc)
		}
		acc = &callAcc{index: idx}
		m.calls[idx] = acc
	}
	args, err := argumentsText(tc.Function.Arguments)
	if err != nil {
		return err
	}
	if err := m.grow(len(tc.ID) + len(tc.Function.Name) + len(args)); err != nil {
		return err
	}
	if tc.ID != "" && tc.ID != acc.id.String() {
		acc.id.WriteString(tc.ID)
	}
	if n := tc.Function.Name; n != "" && n != acc.name.String() {
		acc.name.WriteString(n)
	}
	acc.args.WriteString(args)
	if !acc.announced && acc.name.Len() > 0 {
		acc.announced = true
		m.emit(EventToolCall, acc.name.String())
	}
	return nil
}

// argumentsText is a fragment of arguments: a JSON string (the protocol),
// or an object some servers send whole (taken as its JSON text).
func argumentsText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: a tool call's arguments are not a JSON string", ErrMalformed)
		}
		return s, nil
	}
	return string(raw), nil
}

func (m *merger) setUsage(u *wireUsage) {
	m.usage = Usage{
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      u.TotalTokens,
		CachedTokens:     u.CachedTokens,
		Present:          true,
	}
	if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens > 0 {
		m.usage.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		m.usage.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
}

// result is the reassembled answer, its tool calls sorted by index.
func (m *merger) result() Response {
	r := Response{
		Content:      m.content.String(),
		Reasoning:    m.reasoning.String(),
		FinishReason: m.finish,
		Usage:        m.usage,
		ServedModel:  m.model,
	}
	if r.FinishReason == "" {
		r.FinishReason = "stop"
	}
	idx := make([]int, 0, len(m.calls))
	for i := range m.calls {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		acc := m.calls[i]
		tc := ToolCall{ID: acc.id.String(), Name: acc.name.String(), Arguments: acc.args.String()}
		if tc.ID == "" {
			tc.ID = "call_" + strconv.Itoa(i)
		}
		tc.Args, tc.ArgsErr = parseArgs(tc.Arguments)
		r.ToolCalls = append(r.ToolCalls, tc)
	}
	return r
}

// parseArgs parses a call's arguments as a JSON object; empty means none.
func parseArgs(s string) (map[string]any, error) {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}, nil
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		return nil, fmt.Errorf("llm: the tool call's arguments are not a JSON object: %s", jsonProblem(err))
	}
	if args == nil {
		return nil, errors.New("llm: the tool call's arguments are not a JSON object: null")
	}
	return args, nil
}

// jsonProblem describes a decoding failure without quoting the input (a
// model's text or a server's echo of the key could be in it).
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at byte offset %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("a JSON value has the wrong type (want %s)", typ.Type)
	}
	return "invalid JSON"
}
