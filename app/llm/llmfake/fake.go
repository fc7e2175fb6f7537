// Package llmfake is a scripted OpenAI-compatible model server for tests
// and for demo mode: POST /v1/chat/completions (streamed, or one JSON
// answer when the request says stream: false) and GET /v1/models, on
// net/http/httptest, with no dependency.
//
// A script is a list of Steps. Each request is answered by the first step
// not yet used whose Match matches it (a Repeat step is never used up); an
// unmatched request gets a 400 naming what it got, so a test fails loudly.
// Every request is recorded (Requests). The Kimi-strict mode (SetKimiStrict)
// answers 400 as Moonshot's thinking models do when an earlier assistant
// tool-call message lacks its reasoning_content.
package llmfake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
)

// Match selects the requests a step answers; every set field must hold.
type Match struct {
	// Role is the last message's role ("" any).
	Role string
	// Contains is a substring of the last message's content ("" any).
	Contains string
	// ToolResultFor: the last message is a tool result for this call id.
	ToolResultFor string
	// Tools must all be offered (by name).
	Tools []string
	// Model is the requested model ("" any).
	Model string
	// Func, when set, must also accept the request.
	Func func(Recorded) bool
}

// Step is one scripted answer.
type Step struct {
	Match Match
	Plan  Plan
	// Reply, when set, computes the plan from the request instead of Plan.
	Reply func(Recorded) Plan
	// Repeat: the step answers any number of requests.
	Repeat bool
}

// Recorded is one request the server received.
type Recorded struct {
	Method, Path string
	Header       http.Header
	// Raw is the body as sent.
	Raw []byte
	// Body is the body decoded; Fields holds every top-level field.
	Body   Body
	Fields map[string]json.RawMessage
}

// Body is a chat completions request as the fake reads it.
type Body struct {
	Model         string    `json:"model"`
	Messages      []Message `json:"messages"`
	Tools         []Tool    `json:"tools"`
	Stream        bool      `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens   *int     `json:"max_tokens"`
	Temperature *float64 `json:"temperature"`
	Thinking    *struct {
		Type string `json:"type"`
	} `json:"thinking"`
}

// Message is one request message. Content is the text of a string content
// ("" for null or parts); RawContent is as sent.
type Message struct {
	Role             string          `json:"role"`
	RawContent       json.RawMessage `json:"content"`
	Content          string          `json:"-"`
	Name             string          `json:"name"`
	ToolCallID       string          `json:"tool_call_id"`
	ReasoningContent *string         `json:"reasoning_content"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Tool is one offered tool.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// ToolNames are the offered tools' names.
func (b Body) ToolNames() []string {
	out := make([]string, 0, len(b.Tools))
	for _, t := range b.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// Last is the last message (zero when there is none).
func (b Body) Last() Message {
	if len(b.Messages) == 0 {
		return Message{}
	}
	return b.Messages[len(b.Messages)-1]
}

// ModelEntry is one model GET /v1/models lists.
type ModelEntry struct {
	ID, OwnedBy string
	// ContextLength is sent as Moonshot's context_length when not 0.
	ContextLength int
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	ts   *httptest.Server
	done chan struct{}

	mu         sync.Mutex
	steps      []Step
	used       []bool
	reqs       []Recorded
	models     []ModelEntry
	modelsPlan *Plan
	key        string
	strict     bool
	closed     bool

	watch watchers // woken by every request recorded
}

// New starts a fake serving steps.
func New(steps ...Step) *Server {
	s := &Server{done: make(chan struct{}), models: []ModelEntry{{ID: "fake-model", OwnedBy: "llmfake", ContextLength: 131072}}}
	s.SetSteps(steps...)
	s.ts = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the API root, with /v1 (Options.BaseURL).
func (s *Server) URL() string { return s.ts.URL + "/v1" }

// Close stops the server, ending stalled answers first.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	s.ts.CloseClientConnections()
	s.ts.Close()
	s.watch.close()
}

// Watch returns a channel that receives a value after every request the
// fake records (Requests), coalesced when they come faster than the
// receiver reads; nothing is polled. It is closed when ctx is done or the
// fake is closed.
func (s *Server) Watch(ctx context.Context) <-chan struct{} { return s.watch.watch(ctx) }

// SetSteps replaces the script (every step unused again).
func (s *Server) SetSteps(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = slices.Clone(steps)
	s.used = make([]bool, len(steps))
}

// SetModels replaces the list GET /v1/models serves.
func (s *Server) SetModels(models ...ModelEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = slices.Clone(models)
	s.modelsPlan = nil
}

// SetModelsPlan makes GET /v1/models answer with p's failure (nil: the list).
func (s *Server) SetModelsPlan(p *Plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsPlan = p
}

// SetAPIKey makes every request need "Authorization: Bearer key" (a 401
// invalid_authentication_error otherwise); "" accepts any or none.
func (s *Server) SetAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// SetKimiStrict turns the Kimi-strict mode on or off.
func (s *Server) SetKimiStrict(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.strict = on
}

// Requests returns every request so far, in order.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "llmfake: could not read the request body")
		return
	}
	rec := Recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	decodeErr := rec.decode()
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	key, strict := s.key, s.strict
	s.mu.Unlock()
	s.watch.notify()

	if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		writeError(w, http.StatusUnauthorized, "invalid_authentication_error", "Invalid Authentication")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		s.serveModels(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		if decodeErr != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "llmfake: the body is not a chat completions request: "+decodeErr.Error())
			return
		}
		if strict {
			if msg := strictProblem(rec.Body); msg != "" {
				writeError(w, http.StatusBadRequest, "invalid_request_error", msg)
				return
			}
		}
		plan, ok := s.pick(rec)
		if !ok {
			writeError(w, http.StatusBadRequest, "llmfake_unmatched", "llmfake: no step matches "+describe(rec))
			return
		}
		plan.serve(w, r, rec.Body, s.done)
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", fmt.Sprintf("llmfake: no route %s %s", r.Method, r.URL.Path))
	}
}

func (rec *Recorded) decode() error {
	if len(rec.Raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(rec.Raw, &rec.Fields); err != nil {
		return err
	}
	if err := json.Unmarshal(rec.Raw, &rec.Body); err != nil {
		return err
	}
	for i := range rec.Body.Messages {
		m := &rec.Body.Messages[i]
		_ = json.Unmarshal(m.RawContent, &m.Content) // null or parts: ""
	}
	return nil
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	models, p := slices.Clone(s.models), s.modelsPlan
	s.mu.Unlock()
	if p != nil {
		p.serve(w, r, Body{}, s.done)
		return
	}
	data := make([]map[string]any, 0, len(models))
	for _, m := range models {
		e := map[string]any{"id": m.ID, "object": "model", "owned_by": m.OwnedBy}
		if m.ContextLength != 0 {
			e["context_length"] = m.ContextLength
		}
		data = append(data, e)
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// pick takes the first unused step matching rec.
func (s *Server) pick(rec Recorded) (Plan, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, st := range s.steps {
		if s.used[i] || !st.Match.matches(rec) {
			continue
		}
		if !st.Repeat {
			s.used[i] = true
		}
		if st.Reply != nil {
			return st.Reply(rec), true
		}
		return st.Plan, true
	}
	return Plan{}, false
}

func (m Match) matches(rec Recorded) bool {
	b := rec.Body
	last := b.Last()
	switch {
	case m.Role != "" && last.Role != m.Role,
		m.Contains != "" && !strings.Contains(last.Content, m.Contains),
		m.ToolResultFor != "" && (last.Role != "tool" || last.ToolCallID != m.ToolResultFor),
		m.Model != "" && b.Model != m.Model:
		return false
	}
	names := b.ToolNames()
	for _, t := range m.Tools {
		if !slices.Contains(names, t) {
			return false
		}
	}
	return m.Func == nil || m.Func(rec)
}

// describe names what a request carried, for the unmatched answer.
func describe(rec Recorded) string {
	last := rec.Body.Last()
	content := last.Content
	if len(content) > 200 {
		content = content[:200] + "…"
	}
	return fmt.Sprintf("the request: model %q, %d messages, last role %q content %q tool_call_id %q, tools %v, stream %v",
		rec.Body.Model, len(rec.Body.Messages), last.Role, content, last.ToolCallID, rec.Body.ToolNames(), rec.Body.Stream)
}

// strictProblem is Moonshot's 400 for a thinking request whose earlier
// assistant tool-call message lacks reasoning_content ("" when fine).
func strictProblem(b Body) string {
	if b.Thinking != nil && b.Thinking.Type == "disabled" {
		return ""
	}
	for i, m := range b.Messages {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 && (m.ReasoningContent == nil || *m.ReasoningContent == "") {
			return fmt.Sprintf("thinking is enabled but reasoning_content is missing in assistant tool call message at index %d", i)
		}
	}
	return ""
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"type": typ, "message": msg}})
}
