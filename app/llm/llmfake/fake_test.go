package llmfake_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
)

func newClient(t *testing.T, s *llmfake.Server, key string) *llm.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := llm.New(llm.Options{BaseURL: s.URL(), APIKey: key, Model: "fake-model", Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ask(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

func TestAnUnmatchedRequestFailsLoudlyNamingWhatItGot(t *testing.T) {
	s := llmfake.New(llmfake.Step{Match: llmfake.Match{Contains: "weather"}, Plan: llmfake.Text("sunny")})
	defer s.Close()
	_, err := newClient(t, s, "").Complete(t.Context(), ask("what time is it"), nil)
	var he *llm.HTTPError
	if !errors.As(err, &he) || he.Status != 400 || he.Type != "llmfake_unmatched" ||
		!strings.Contains(he.Message, `content "what time is it"`) || !strings.Contains(he.Message, `last role "user"`) {
		t.Fatalf("err = %v, want a 400 naming the request", err)
	}
}

func TestStepsAreUsedOnceInOrderUnlessTheyRepeat(t *testing.T) {
	s := llmfake.New(
		llmfake.Step{Plan: llmfake.Text("first")},
		llmfake.Step{Plan: llmfake.Text("second"), Repeat: true},
	)
	defer s.Close()
	c := newClient(t, s, "")
	for _, want := range []string{"first", "second", "second"} {
		resp, err := c.Complete(t.Context(), ask("hi"), nil)
		if err != nil || resp.Content != want {
			t.Fatalf("got %q, %v; want %q", resp.Content, err, want)
		}
	}
	s.SetSteps(llmfake.Step{Plan: llmfake.Text("replaced")})
	if resp, err := c.Complete(t.Context(), ask("hi"), nil); err != nil || resp.Content != "replaced" {
		t.Fatalf("after SetSteps: %q, %v", resp.Content, err)
	}
	if n := len(s.Requests()); n != 4 {
		t.Errorf("%d requests recorded, want 4", n)
	}
}

func TestMatchSelectsByToolResultAndToolsOffered(t *testing.T) {
	s := llmfake.New(
		llmfake.Step{Match: llmfake.Match{Tools: []string{"absent"}}, Plan: llmfake.Text("wrong")},
		llmfake.Step{Match: llmfake.Match{ToolResultFor: "call_9", Tools: []string{"t"}}, Plan: llmfake.Text("right")},
	)
	defer s.Close()
	req := llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "go"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_9", Name: "t"}}},
			{Role: llm.RoleTool, ToolCallID: "call_9", Content: "done"},
		},
		Tools: []llm.Tool{{Name: "t"}},
	}
	resp, err := newClient(t, s, "").Complete(t.Context(), req, nil)
	if err != nil || resp.Content != "right" {
		t.Fatalf("got %q, %v", resp.Content, err)
	}
}

func TestAnAPIKeyIsRequiredWhenSet(t *testing.T) {
	s := llmfake.New(llmfake.Step{Plan: llmfake.Text("ok"), Repeat: true})
	defer s.Close()
	s.SetAPIKey("sk-right")
	_, err := newClient(t, s, "sk-wrong").Models(t.Context())
	var he *llm.HTTPError
	if !errors.As(err, &he) || he.Status != 401 {
		t.Fatalf("wrong key: %v, want a 401", err)
	}
	if _, err := newClient(t, s, "sk-right").Complete(t.Context(), ask("hi"), nil); err != nil {
		t.Fatalf("right key: %v", err)
	}
}

func TestDemoAnswersAnyMessageWithAScriptedReply(t *testing.T) {
	s := llmfake.New(llmfake.Demo()...)
	defer s.Close()
	c := newClient(t, s, "")
	for _, msg := range []string{"hello", "what can you do?", ""} {
		resp, err := c.Complete(t.Context(), ask(msg), nil)
		if err != nil {
			t.Fatalf("%q: %v", msg, err)
		}
		if !strings.HasPrefix(resp.Content, "(demo model) ") || !strings.Contains(resp.Content, msg) || !resp.Usage.Present {
			t.Errorf("%q: reply %q", msg, resp.Content)
		}
	}
}

func TestCloseEndsAStalledAnswer(t *testing.T) {
	s := llmfake.New(llmfake.Step{Plan: llmfake.Stall(true)})
	arrived := make(chan struct{})
	s.SetSteps(llmfake.Step{Match: llmfake.Match{Func: func(llmfake.Recorded) bool { close(arrived); return true }}, Plan: llmfake.Stall(true)})
	done := make(chan error, 1)
	c := newClient(t, s, "")
	go func() {
		_, err := c.Complete(t.Context(), ask("hi"), nil)
		done <- err
	}()
	<-arrived
	s.Close()
	if err := <-done; !errors.Is(err, llm.ErrConnection) {
		t.Fatalf("err = %v, want the connection closed under the client", err)
	}
}

// TestWatchWakesOnEveryRecordedRequest: a watcher is woken once a request
// is recorded — before it is answered, so a stalled request is seen — and
// its channel closes with the fake.
func TestWatchWakesOnEveryRecordedRequest(t *testing.T) {
	s := llmfake.New(llmfake.Step{Plan: llmfake.Stall(false)})
	ch := s.Watch(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := newClient(t, s, "").Complete(t.Context(), ask("are you there"), nil)
		done <- err
	}()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("no wake-up after a request within 30 s")
	}
	if got := s.Requests(); len(got) != 1 {
		t.Fatalf("%d requests recorded once woken, want 1", len(got))
	}
	s.Close()
	<-done // the stalled answer ends with the fake
	for range ch {
	}
}

// TestWatchWakesForEachLaterRequestAndEndsWithItsContext: a watcher that
// has been woken and read the requests is woken again by the next one, and
// its channel closes when its context ends.
func TestWatchWakesForEachLaterRequestAndEndsWithItsContext(t *testing.T) {
	s := llmfake.New(llmfake.Step{Plan: llmfake.Text("ok"), Repeat: true})
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	ch := s.Watch(ctx)
	c := newClient(t, s, "")
	for want := 1; want <= 3; want++ {
		if _, err := c.Complete(t.Context(), ask("hi"), nil); err != nil {
			t.Fatal(err)
		}
		select {
		case _, open := <-ch:
			if !open {
				t.Fatalf("the channel closed before request %d", want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no wake-up for request %d within 30 s", want)
		}
		if got := len(s.Requests()); got != want {
			t.Fatalf("%d requests recorded once woken, want %d", got, want)
		}
	}
	cancel()
	select {
	case _, open := <-ch:
		if open {
			t.Fatal("a wake-up with no request after the last one was read")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the channel stayed open after its context ended")
	}
}
