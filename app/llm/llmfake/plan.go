package llmfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Call is one scripted tool call: its arguments are sent in Args's
// fragments (the first chunk carries the id, the type and the name).
type Call struct {
	ID, Name string
	Args     []string
}

// Failure is how a plan goes wrong after it began.
type Failure int

// The failures.
const (
	// FailNone: the plan completes.
	FailNone Failure = iota
	// FailMidStream: after the text, an {"error": …} event ends the stream.
	FailMidStream
	// FailStall: the headers and the first text delta, then silence until
	// the client gives up or the server closes.
	FailStall
	// FailStallBeforeHeaders: silence from the start, no headers.
	FailStallBeforeHeaders
	// FailDrop: after the text, the connection drops (no final chunk).
	FailDrop
	// FailCut: after the text, the stream ends cleanly, without a finish
	// reason or [DONE].
	FailCut
)

// Usage is the token accounting the final chunk reports.
type Usage struct {
	Prompt, Completion, Cached, Reasoning int
}

// Plan is one scripted answer. The zero Plan answers an empty "stop".
type Plan struct {
	// Reasoning are reasoning deltas, sent first, in ReasoningField
	// ("reasoning_content" when "", or "reasoning").
	Reasoning      []string
	ReasoningField string
	// Content are text deltas.
	Content []string
	// Calls are tool calls, after the text; Interleave sends the calls'
	// argument fragments in turn (index 0, 1, 0, 1, …).
	Calls      []Call
	Interleave bool
	// The continuation chunks' quirks: no index, index -1, id "", the
	// call's id and name sent again on each.
	MissingIndex, NegativeIndex, EmptyIDOnContinuation, RepeatIDAndName bool
	// NoSpace writes "data:" without the space; KeepAlive a ": keep-alive"
	// comment before each chunk.
	NoSpace, KeepAlive bool
	// FinishReason is the last chunk's ("" → "tool_calls" with calls, else
	// "stop").
	FinishReason string
	// Usage is reported in a final chunk with choices: [] (unless NoUsage).
	Usage   Usage
	NoUsage bool
	// NoDone leaves out the [DONE] marker.
	NoDone bool
	// Fail is the failure after the plan began.
	Fail Failure
	// Status, when not 0 or 200, is an error answer before any chunk:
	// RetryAfter is its header (Header more of them), ErrorType and ErrorMessage its OpenAI-shaped
	// body (Body, when set, is sent verbatim instead). ErrorType and
	// ErrorMessage are also FailMidStream's error event.
	Status                  int
	RetryAfter              string
	Header                  http.Header
	ErrorType, ErrorMessage string
	Body                    string
}

func (p Plan) finish() string {
	switch {
	case p.FinishReason != "":
		return p.FinishReason
	case len(p.Calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// serve answers one request with the plan.
func (p Plan) serve(w http.ResponseWriter, r *http.Request, body Body, done <-chan struct{}) {
	if p.Fail == FailStallBeforeHeaders {
		wait(r, done)
		return
	}
	if p.Status != 0 && p.Status != http.StatusOK {
		for k, vs := range p.Header {
			w.Header()[k] = vs
		}
		if p.RetryAfter != "" {
			w.Header().Set("Retry-After", p.RetryAfter)
		}
		if p.Body != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(p.Status)
			_, _ = w.Write([]byte(p.Body))
			return
		}
		writeError(w, p.Status, p.ErrorType, p.ErrorMessage)
		return
	}
	if !body.Stream {
		p.serveWhole(w, r, body, done)
		return
	}
	p.serveStream(w, r, body, done)
}

func wait(r *http.Request, done <-chan struct{}) {
	select {
	case <-r.Context().Done():
	case <-done:
	}
}

func (p Plan) model(b Body) string {
	if b.Model != "" {
		return b.Model
	}
	return "fake-model"
}

func (p Plan) usage() map[string]any {
	u := p.Usage
	if u == (Usage{}) {
		u = Usage{Prompt: 10, Completion: 5}
	}
	out := map[string]any{
		"prompt_tokens": u.Prompt, "completion_tokens": u.Completion, "total_tokens": u.Prompt + u.Completion,
	}
	if u.Cached != 0 {
		out["prompt_tokens_details"] = map[string]int{"cached_tokens": u.Cached}
	}
	if u.Reasoning != 0 {
		out["completion_tokens_details"] = map[string]int{"reasoning_tokens": u.Reasoning}
	}
	return out
}

func (p Plan) serveWhole(w http.ResponseWriter, r *http.Request, b Body, done <-chan struct{}) {
	switch p.Fail {
	case FailStall:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		flush(w)
		wait(r, done)
		return
	case FailDrop:
		panic(http.ErrAbortHandler)
	case FailMidStream:
		writeError(w, http.StatusOK, "server_error", "llmfake: the model failed mid-answer")
		return
	}
	msg := map[string]any{"role": "assistant", "content": strings.Join(p.Content, "")}
	if len(p.Reasoning) > 0 {
		msg[p.reasoningField()] = strings.Join(p.Reasoning, "")
	}
	var calls []map[string]any
	for _, c := range p.Calls {
		calls = append(calls, map[string]any{"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": strings.Join(c.Args, "")}})
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	out := map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "model": p.model(b),
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": p.finish()}},
	}
	if !p.NoUsage {
		out["usage"] = p.usage()
	}
	writeJSON(w, http.StatusOK, out)
}

func (p Plan) reasoningField() string {
	if p.ReasoningField != "" {
		return p.ReasoningField
	}
	return "reasoning_content"
}

func flush(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }

// streamWriter writes the SSE events of one answer.
type streamWriter struct {
	w     http.ResponseWriter
	p     Plan
	model string
}

func (s streamWriter) raw(line string) {
	if s.p.KeepAlive {
		_, _ = fmt.Fprint(s.w, ": keep-alive\n\n")
	}
	sep := "data: "
	if s.p.NoSpace {
		sep = "data:"
	}
	_, _ = fmt.Fprintf(s.w, "%s%s\n\n", sep, line)
	flush(s.w)
}

func (s streamWriter) chunk(choices []any, usage map[string]any) {
	c := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": s.model, "choices": choices}
	if usage != nil {
		c["usage"] = usage
	}
	b, _ := json.Marshal(c)
	s.raw(string(b))
}

func (s streamWriter) delta(d map[string]any) {
	s.chunk([]any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}}, nil)
}

func (p Plan) serveStream(w http.ResponseWriter, r *http.Request, b Body, done <-chan struct{}) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush(w)
	s := streamWriter{w: w, p: p, model: p.model(b)}
	s.delta(map[string]any{"role": "assistant", "content": ""})
	for _, t := range p.Reasoning {
		s.delta(map[string]any{p.reasoningField(): t})
	}
	for i, t := range p.Content {
		s.delta(map[string]any{"content": t})
		if i == 0 && p.Fail == FailStall {
			wait(r, done)
			return
		}
	}
	switch p.Fail {
	case FailStall:
		wait(r, done)
		return
	case FailDrop:
		panic(http.ErrAbortHandler)
	case FailCut:
		return
	case FailMidStream:
		typ, msg := p.ErrorType, p.ErrorMessage
		if typ == "" {
			typ = "server_error"
		}
		if msg == "" {
			msg = "llmfake: the model failed mid-stream"
		}
		b, _ := json.Marshal(map[string]any{"error": map[string]string{"type": typ, "message": msg}})
		s.raw(string(b))
		return
	}
	p.streamCalls(s)
	s.chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": p.finish()}}, nil)
	if !p.NoUsage {
		s.chunk([]any{}, p.usage())
	}
	if !p.NoDone {
		s.raw("[DONE]")
	}
}

// streamCalls writes the calls: each one's header chunk (index, id, type,
// name, empty arguments), then its argument fragments, in turn when
// Interleave is set.
func (p Plan) streamCalls(s streamWriter) {
	frag := func(i int, text string) {
		tc := map[string]any{"function": map[string]any{"arguments": text}}
		switch {
		case p.MissingIndex:
		case p.NegativeIndex:
			tc["index"] = -1
		default:
			tc["index"] = i
		}
		if p.EmptyIDOnContinuation {
			tc["id"] = ""
		}
		if p.RepeatIDAndName {
			tc["id"] = p.Calls[i].ID
			tc["function"].(map[string]any)["name"] = p.Calls[i].Name
		}
		s.delta(map[string]any{"tool_calls": []any{tc}})
	}
	header := func(i int, c Call) {
		s.delta(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""},
		}}})
	}
	if !p.Interleave {
		for i, c := range p.Calls {
			header(i, c)
			for _, a := range c.Args {
				frag(i, a)
			}
		}
		return
	}
	longest := 0
	for i, c := range p.Calls {
		header(i, c)
		longest = max(longest, len(c.Args))
	}
	for k := range longest {
		for i, c := range p.Calls {
			if k < len(c.Args) {
				frag(i, c.Args[k])
			}
		}
	}
}
