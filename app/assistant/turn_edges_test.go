package assistant

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/modules/hello"
)

// The turn's edges: what a turn records, answers and starts when it ends
// oddly, is not addressed to the assistant, or races Close.

// endingProvider answers every call with a billed response, but ends the
// turn (end) just before it returns: the response has arrived when the
// turn learns it is over.
type endingProvider struct {
	end func()
}

func (p endingProvider) Complete(context.Context, llm.Request, func(llm.Event)) (llm.Response, error) {
	p.end()
	return llm.Response{Content: "late answer", ServedModel: "billed-model", FinishReason: "stop",
		Usage: llm.Usage{PromptTokens: 321, CompletionTokens: 12, CachedTokens: 7}}, nil
}

func (endingProvider) Models(context.Context) ([]llm.Model, error) { return nil, nil }

// TestUsageRecordedWhenTheTurnEndsAsTheResponseArrives: a response that
// arrived is billed, so its usage is recorded even when a STOP or the
// deadline ended the turn while it came back (the original records every
// response at once, "so a later timeout still persists calls already
// billed").
func TestUsageRecordedWhenTheTurnEndsAsTheResponseArrives(t *testing.T) {
	cases := []struct {
		name   string
		end    func(r *turnRig)
		status string
	}{
		{name: "stop", end: func(r *turnRig) { r.a.Cancel(5, 11) }, status: StatusCancelled},
		{name: "deadline", end: func(r *turnRig) { r.clock.Advance(settings.DefaultTurnDeadline) }, status: StatusFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newTurnRig(t)
			a, err := NewAssistant(AssistantOptions{Store: r.conv, Tools: r.tools.h, Settings: r.st, Clock: r.clock,
				Provider: providerFunc(func() llm.Provider { return endingProvider{end: func() { c.end(r) }} })})
			if err != nil {
				t.Fatal(err)
			}
			r.a = a
			r.run(t, incoming(77, "hi"))
			row := r.lastTurn(t)
			if row.Status != c.status || row.Prompt != 321 || row.Iterations != 1 || row.Model != "billed-model" {
				t.Errorf("turn row %+v, want status %s with the billed response's usage", row, c.status)
			}
		})
	}
}

// TestUnpingedReplyContinuesOnlyAnAnswer: an unpinged reply
// (ContinuationOnly) continues a conversation when it replies to one of
// Kimi's answers that continues for its author; a reply to any other
// message (a module's post, a message Kimi never answered with, an
// owner-only root's answer by someone else) is dropped before admission:
// no model call, no row, nothing on the surface. A pinged reply to such a
// message still starts a conversation.
func TestUnpingedReplyContinuesOnlyAnAnswer(t *testing.T) {
	cases := []struct {
		name      string
		private   bool   // the first turn is an owner-only /ask
		replyTo   uint64 // 1001 is the first turn's delivered answer
		user      uint64
		pinged    bool
		answered  bool
		continued bool
	}{
		{name: "to an answer", replyTo: 1001, user: 5, answered: true, continued: true},
		{name: "to an answer, by another member", replyTo: 1001, user: 6, answered: true, continued: true},
		{name: "to a message Kimi did not answer with", replyTo: 5555, user: 5},
		{name: "to an owner-only answer, by another member", private: true, replyTo: 1001, user: 6},
		{name: "to an owner-only answer, by its owner", private: true, replyTo: 1001, user: 5, answered: true, continued: true},
		{name: "pinged, to a message Kimi did not answer with", replyTo: 5555, user: 5, pinged: true, answered: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newTurnRig(t, llmfake.Step{Repeat: true, Plan: llmfake.Text("ok")})
			first := incoming(77, "first")
			if c.private {
				first.Kind, first.Private = KindAsk, true
			}
			if got := r.run(t, first).Delivered(); len(got) != 1 {
				t.Fatalf("first turn delivered %q", got)
			}
			before := counts(t, r)
			reply := incoming(78, "and then?")
			reply.UserID, reply.ReplyToID, reply.ContinuationOnly = c.user, c.replyTo, !c.pinged
			s := r.run(t, reply)
			after := counts(t, r)
			if !c.answered {
				if ev := s.Events(); len(ev) != 0 || after != before || len(r.fake.Requests()) != 1 {
					t.Fatalf("dropped reply: events %q, rows %v → %v, %d model calls", ev, before, after, len(r.fake.Requests()))
				}
				return
			}
			if got := s.Delivered(); !slices.Equal(got, []string{"ok"}) {
				t.Fatalf("delivered %q; events %q", got, s.Events())
			}
			var root int64
			if err := r.st.Reader().QueryRow(`SELECT c.root_message_id FROM kimi_assistant_turns t
				JOIN kimi_assistant_conversations c ON c.id = t.conversation_id WHERE t.trigger_message_id = 78`).Scan(&root); err != nil {
				t.Fatal(err)
			}
			if got := root == 77; got != c.continued {
				t.Errorf("reply's root %d, continued %v, want %v", root, got, c.continued)
			}
		})
	}
}

// counts is the number of conversations, turns and messages stored.
func counts(t *testing.T, r *turnRig) [3]int {
	t.Helper()
	var n [3]int
	for i, table := range []string{"kimi_assistant_conversations", "kimi_assistant_turns", "kimi_assistant_messages"} {
		if err := r.st.Reader().QueryRow(`SELECT count(*) FROM ` + table).Scan(&n[i]); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// TestTurnCallsCountOnTheStatusCard: with the appliance's wiring (the
// Service is the provider and counts the calls), every model call of a
// turn is on /assistant's status card — the calls and errors today and
// the last call — as Test connection's are; a call the turn's STOP
// cut short is no provider error.
func TestTurnCallsCountOnTheStatusCard(t *testing.T) {
	busy := "The model provider is busy right now. Please try again shortly."
	cases := []struct {
		name        string
		steps       []llmfake.Step
		stop        bool
		calls, errs int
		lastOK      bool
		lastOutcome string
	}{
		{name: "an answer", steps: []llmfake.Step{{Plan: llmfake.Text("hi")}}, calls: 1, lastOK: true},
		{name: "a tool round", steps: []llmfake.Step{{Match: llmfake.Match{Role: "user"}, Plan: llmfake.ToolCall("h1", hello.ToolGreet, `{}`)},
			{Match: llmfake.Match{ToolResultFor: "h1"}, Plan: llmfake.Text("done")}}, calls: 2, lastOK: true},
		{name: "the provider busy", steps: []llmfake.Step{{Repeat: true, Plan: llmfake.RateLimited("")}}, calls: 1, errs: 1, lastOutcome: busy},
		{name: "stopped mid-call", steps: []llmfake.Step{{Repeat: true, Plan: llmfake.Stall(false)}}, stop: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newTurnRig(t, c.steps...)
			save(t, r.st, r.fake.URL(), "fake-model", true)
			svc, _ := newService(t, Options{Store: r.st, Now: r.clock.Now, Sleep: func(context.Context, time.Duration) error { return nil }})
			a, err := NewAssistant(AssistantOptions{Store: r.conv, Provider: svc, Calls: svc, Tools: r.tools.h, Settings: r.st, Clock: r.clock})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close(context.Background()) })
			r.a = a
			s := newSurface()
			a.Handle(context.Background(), incoming(77, "hi"), s)
			if c.stop {
				r.waitRequests(t, 1)
				a.Cancel(5, 11)
			}
			a.wg.Wait()
			st := svc.Status()
			if st.CallsToday != c.calls || st.ErrorsToday != c.errs {
				t.Fatalf("status card: %d calls, %d errors; want %d, %d (events %q)", st.CallsToday, st.ErrorsToday, c.calls, c.errs, s.Events())
			}
			if c.calls == 0 {
				if st.HaveLast {
					t.Errorf("last call %+v, want none", st.Last)
				}
				return
			}
			if !st.HaveLast || (st.Last.Err == nil) != c.lastOK || st.Last.Outcome != c.lastOutcome || st.Last.Backend != BackendPrimary || !st.Last.At.Equal(rigStart) {
				t.Errorf("last call %+v", st.Last)
			}
		})
	}
}

// TestReady: the assistant is ready while a provider is configured and
// it is not closed (Handle drops a trigger otherwise, and /ask asks first).
func TestReady(t *testing.T) {
	r := newTurnRig(t)
	client, err := llm.New(llm.Options{BaseURL: r.fake.URL(), Model: "m", Transport: http.DefaultTransport})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		provider llm.Provider
		close    bool
		want     bool
	}{
		{name: "a provider", provider: client, want: true},
		{name: "no provider", want: false},
		{name: "closed", provider: client, close: true, want: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewAssistant(AssistantOptions{Store: r.conv, Tools: r.tools.h, Settings: r.st, Clock: r.clock,
				Provider: providerFunc(func() llm.Provider { return c.provider })})
			if err != nil {
				t.Fatal(err)
			}
			if c.close {
				a.Close(context.Background())
			}
			if got := a.Ready(); got != c.want {
				t.Errorf("Ready = %v, want %v", got, c.want)
			}
		})
	}
}

// TestUnnamedToolCallIsCorrected: a tool call whose name never arrived (a
// quirky server's stream) is a model mistake like an unknown tool: it is
// answered "Unknown tool: …" under a placeholder name (a request cannot
// carry a nameless call) and the turn goes on; it ended the turn with the
// internal-error message.
func TestUnnamedToolCallIsCorrected(t *testing.T) {
	r := newTurnRig(t,
		llmfake.Step{Match: llmfake.Match{Role: "user"}, Plan: llmfake.Plan{Calls: []llmfake.Call{
			{ID: "c1", Name: "", Args: []string{"{}"}}, {ID: "c2", Name: hello.ToolGreet, Args: []string{"{}"}}}}},
		llmfake.Step{Match: llmfake.Match{ToolResultFor: "c2"}, Plan: llmfake.Text("fine")})
	s := r.run(t, incoming(77, "hi"))
	if got := s.Delivered(); !slices.Equal(got, []string{"fine"}) {
		t.Fatalf("delivered %q; events %q", got, s.Events())
	}
	reqs := r.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[1].Body.Messages
	asst, res1, res2 := msgs[len(msgs)-3], msgs[len(msgs)-2], msgs[len(msgs)-1]
	if len(asst.ToolCalls) != 2 || asst.ToolCalls[0].Function.Name != UnnamedTool || asst.ToolCalls[1].Function.Name != hello.ToolGreet {
		t.Errorf("assistant message replayed as %+v", asst)
	}
	if res1.ToolCallID != "c1" || res1.Content != "Unknown tool: "+UnnamedTool || res2.ToolCallID != "c2" || !strings.Contains(res2.Content, "Hello, Ada!") {
		t.Errorf("tool results %+v, %+v", res1, res2)
	}
	if row := r.lastTurn(t); row.Status != StatusDone || row.Iterations != 2 {
		t.Errorf("turn row %+v", row)
	}
}

// pausingSource blocks its first Provider call (Handle's readiness check)
// until release is closed, after signalling entered.
type pausingSource struct {
	p                llm.Provider
	once             sync.Once
	entered, release chan struct{}
}

func (s *pausingSource) Provider() llm.Provider {
	s.once.Do(func() { close(s.entered); <-s.release })
	return s.p
}

// TestNoTurnStartsOnceClosed: a trigger that passed the readiness check
// as Close began starts no turn after Close returned (Close promises the
// running turns have ended; a turn started after its Wait touched a
// closing bot and store, and a WaitGroup reused during its Wait may
// panic).
func TestNoTurnStartsOnceClosed(t *testing.T) {
	for _, c := range []struct {
		name string
		user uint64
		busy bool // the caller is at its limit: the busy reply's path
	}{{name: "a turn", user: 5}, {name: "a busy reply", user: 5, busy: true}} {
		t.Run(c.name, func(t *testing.T) {
			r := newTurnRig(t, llmfake.Step{Repeat: true, Plan: llmfake.Text("hi")})
			client, err := llm.New(llm.Options{BaseURL: r.fake.URL(), Model: "m", Transport: http.DefaultTransport})
			if err != nil {
				t.Fatal(err)
			}
			src := &pausingSource{p: client, entered: make(chan struct{}), release: make(chan struct{})}
			a, err := NewAssistant(AssistantOptions{Store: r.conv, Provider: src, Tools: r.tools.h, Settings: r.st, Clock: r.clock,
				MaxTurnsPerUser: 1})
			if err != nil {
				t.Fatal(err)
			}
			if c.busy {
				a.admit.acquire(c.user) // the caller's one turn is "running"
			}
			s := newSurface()
			handled := make(chan struct{})
			go func() { defer close(handled); a.Handle(context.Background(), incoming(77, "hi"), s) }()
			<-src.entered
			if err := a.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			close(src.release)
			<-handled
			a.wg.Wait()
			if ev := s.Events(); len(ev) != 0 {
				t.Errorf("after Close returned the trigger got %q", ev)
			}
			if n := counts(t, r); n != [3]int{} {
				t.Errorf("rows %v after Close", n)
			}
		})
	}
}
