package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"slices"
)

// Complete sends req to {base}/chat/completions as a stream and returns the
// reassembled answer. A 400 before the first chunk gets one non-streaming
// retry of the same request (some servers refuse stream_options); a
// context overflow does not.
func (c *Client) Complete(ctx context.Context, req Request, onEvent func(Event)) (Response, error) {
	body, err := c.encode(req, true)
	if err != nil {
		return Response{}, err
	}
	resp, err := c.complete(ctx, body, true, onEvent)
	var he *HTTPError
	if err != nil && errors.As(err, &he) && he.Status == http.StatusBadRequest && !he.MidStream && !errors.Is(err, ErrContextOverflow) {
		c.log.Debug("model provider refused the stream; retrying without streaming", "status", he.Status)
		if body, err2 := c.encode(req, false); err2 == nil {
			return c.complete(ctx, body, false, onEvent)
		}
	}
	return resp, err
}

func (c *Client) complete(ctx context.Context, body []byte, stream bool, onEvent func(Event)) (Response, error) {
	a := c.begin(ctx, stream)
	defer a.end()
	resp, err := c.send(a, http.MethodPost, "/chat/completions", body, stream)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	firstByte := c.now().Sub(a.start)
	if resp.StatusCode != http.StatusOK {
		return Response{}, c.failure(a, "chat completions", resp)
	}
	m := newMerger(MaxAnswerBytes, onEvent)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "text/event-stream" {
		err = c.readStream(a, resp.Body, m)
	} else {
		err = c.readWhole(a, resp.Body, m)
	}
	if err != nil {
		return Response{}, err
	}
	r := m.result()
	r.FirstByte, r.Latency = firstByte, c.now().Sub(a.start)
	return r, nil
}

// errStreamCut: the stream ended without [DONE] and without a finish reason.
var errStreamCut = errors.New("the stream ended before the answer did")

// readStream decodes the SSE stream into m.
func (c *Client) readStream(a *attempt, body io.Reader, m *merger) error {
	sse := newSSEReader(watched{body, a}, MaxLineBytes)
	for {
		data, err := sse.next()
		if errors.Is(err, io.EOF) {
			if m.finish == "" {
				return &redactedError{msg: "llm: " + errStreamCut.Error(), err: errors.Join(ErrConnection, errStreamCut)}
			}
			return nil // a server that omits [DONE]
		}
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				return err
			}
			return transportError(a.ctx, err, c.rd)
		}
		if bytes.Equal(data, doneMarker) {
			return nil
		}
		if err := c.addChunk(data, m, true); err != nil {
			return err
		}
	}
}

// readWhole decodes a non-streamed answer into m.
func (c *Client) readWhole(a *attempt, body io.Reader, m *merger) error {
	b, err := readAll(a, body, MaxAnswerBytes, c.rd)
	if err != nil {
		return err
	}
	return c.addChunk(b, m, false)
}

func (c *Client) addChunk(data []byte, m *merger, stream bool) error {
	var ch wireChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return fmt.Errorf("%w: %s", ErrMalformed, jsonProblem(err))
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		c.log.Debug("model provider stream error", "body", c.rd.Field(string(data), maxLogged))
		he := &HTTPError{MidStream: stream}
		he.Type, he.Message = errorFields(data, c.rd)
		if !stream {
			he.Status = http.StatusOK
		}
		if isOverflow(0, he.Message) {
			return fmt.Errorf("%w: %w", ErrContextOverflow, he)
		}
		return he
	}
	return m.add(&ch)
}

// toolName is the names OpenAI-compatible providers accept.
var toolName = regexp.MustCompile(`\A[a-zA-Z0-9_-]{1,64}\z`)

// reservedFields are body fields Request.Extra may not set: they have their
// own Request fields or are the client's.
var reservedFields = []string{"model", "messages", "tools", "stream", "stream_options", "max_tokens", "temperature"}

// encode builds the request body, checking the request first.
func (c *Client) encode(req Request, stream bool) ([]byte, error) {
	model := req.Model
	if model == "" {
		model = c.model
	}
	if model == "" {
		return nil, fmt.Errorf("llm: complete: %w: no model", ErrNotConfigured)
	}
	if len(req.Messages) == 0 {
		return nil, errors.New("llm: complete: the request has no message")
	}
	body := map[string]any{}
	for k, v := range req.Extra {
		if slices.Contains(reservedFields, k) {
			return nil, fmt.Errorf("llm: complete: Extra must not set %q (it has its own field)", k)
		}
		body[k] = v
	}
	if _, set := body["thinking"]; !set && c.moonshot && c.thinking != ThinkingDefault {
		t := "enabled"
		if c.thinking == ThinkingOff {
			t = "disabled"
		}
		body["thinking"] = map[string]string{"type": t}
	}
	msgs, err := encodeMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	tools, err := encodeTools(req.Tools)
	if err != nil {
		return nil, err
	}
	maxTok := c.maxTok
	if req.MaxTokens != 0 {
		maxTok = req.MaxTokens
	}
	if maxTok < 0 || maxTok > maxMaxTokens {
		return nil, fmt.Errorf("llm: complete: max tokens %d is outside 1..%d", maxTok, maxMaxTokens)
	}
	temp := c.temp
	if req.Temperature != nil {
		temp = req.Temperature
	}
	if temp != nil && (*temp < 0 || *temp > 2) {
		return nil, fmt.Errorf("llm: complete: temperature %g is outside 0..2", *temp)
	}
	body["model"], body["messages"], body["max_tokens"], body["stream"] = model, msgs, maxTok, stream
	if stream {
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	if temp != nil {
		body["temperature"] = *temp
	}
	if len(tools) > 0 {
		body["tools"] = tools
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("llm: complete: encode the request: %w", err)
	}
	return b, nil
}

type (
	wireMessage struct {
		Role             Role          `json:"role"`
		Content          *string       `json:"content"`
		Name             string        `json:"name,omitempty"`
		ReasoningContent string        `json:"reasoning_content,omitempty"`
		ToolCalls        []wireCallOut `json:"tool_calls,omitempty"`
		ToolCallID       string        `json:"tool_call_id,omitempty"`
	}
	wireCallOut struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	wireTool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
)

// encodeMessages writes the conversation: assistant messages with their
// reasoning_content and tool_calls as they came (type function, arguments
// verbatim), tool messages as {role: tool, tool_call_id, content}.
func encodeMessages(in []Message) ([]wireMessage, error) {
	out := make([]wireMessage, 0, len(in))
	for i, m := range in {
		w := wireMessage{Role: m.Role, Name: m.Name}
		content := m.Content
		w.Content = &content
		switch m.Role {
		case RoleSystem, RoleUser:
		case RoleAssistant:
			w.ReasoningContent = m.ReasoningContent
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("llm: complete: message %d: tool call %d has no id or no name", i, j)
				}
				var o wireCallOut
				o.ID, o.Type, o.Function.Name, o.Function.Arguments = tc.ID, "function", tc.Name, tc.Arguments
				if o.Function.Arguments == "" {
					o.Function.Arguments = "{}"
				}
				w.ToolCalls = append(w.ToolCalls, o)
			}
			if len(w.ToolCalls) > 0 && content == "" {
				w.Content = nil // null: a tool-call message may have no text
			}
		case RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("llm: complete: message %d is a tool result without a tool call id", i)
			}
			w.ToolCallID, w.Name = m.ToolCallID, ""
		default:
			return nil, fmt.Errorf("llm: complete: message %d has an unknown role %q", i, m.Role)
		}
		out = append(out, w)
	}
	return out, nil
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func encodeTools(in []Tool) ([]wireTool, error) {
	out := make([]wireTool, 0, len(in))
	for _, t := range in {
		if !toolName.MatchString(t.Name) {
			return nil, fmt.Errorf("llm: complete: invalid tool name %q: use 1 to 64 letters, digits, '_' or '-'", t.Name)
		}
		var w wireTool
		w.Type, w.Function.Name, w.Function.Description, w.Function.Parameters = "function", t.Name, t.Description, t.Parameters
		if len(bytes.TrimSpace(t.Parameters)) == 0 {
			w.Function.Parameters = emptySchema
		} else {
			var obj map[string]any
			if err := json.Unmarshal(t.Parameters, &obj); err != nil || obj == nil {
				return nil, fmt.Errorf("llm: complete: tool %q: the parameters are not a JSON object schema", t.Name)
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// Models lists the endpoint's models (GET {base}/models). Moonshot's
// context_length (vLLM's max_model_len) becomes ContextWindow.
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	a := c.begin(ctx, true)
	defer a.end()
	resp, err := c.send(a, http.MethodGet, "/models", nil, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.failure(a, "models", resp)
	}
	b, err := readAll(a, resp.Body, MaxAnswerBytes, c.rd)
	if err != nil {
		return nil, err
	}
	type entry struct {
		ID            string `json:"id"`
		OwnedBy       string `json:"owned_by"`
		ContextLength int    `json:"context_length"`
		ContextWindow int    `json:"context_window"`
		MaxModelLen   int    `json:"max_model_len"`
	}
	var list struct {
		Data []entry `json:"data"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		err = json.Unmarshal(b, &list.Data)
	} else {
		err = json.Unmarshal(b, &list)
	}
	if err != nil {
		return nil, fmt.Errorf("llm: models: %w: %s", ErrMalformed, jsonProblem(err))
	}
	out := make([]Model, 0, len(list.Data))
	for _, e := range list.Data {
		if e.ID == "" {
			continue
		}
		m := Model{ID: e.ID, OwnedBy: e.OwnedBy, ContextWindow: e.ContextLength}
		if m.ContextWindow == 0 {
			m.ContextWindow = max(e.ContextWindow, e.MaxModelLen)
		}
		out = append(out, m)
	}
	return out, nil
}
