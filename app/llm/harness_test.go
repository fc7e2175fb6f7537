package llm_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
)

// transport is a plain transport that takes no proxy from the
// environment (the appliance passes app/egress's).
func transport(t *testing.T) http.RoundTripper {
	t.Helper()
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// fake starts an llmfake server for the test.
func fake(t *testing.T, steps ...llmfake.Step) *llmfake.Server {
	t.Helper()
	s := llmfake.New(steps...)
	t.Cleanup(s.Close)
	return s
}

// client is a Client of s with opts applied over test defaults.
func client(t *testing.T, s *llmfake.Server, opts ...func(*llm.Options)) *llm.Client {
	t.Helper()
	o := llm.Options{BaseURL: s.URL(), Model: "fake-model", UserAgent: "Kimi/test", Transport: transport(t)}
	for _, f := range opts {
		f(&o)
	}
	c, err := llm.New(o)
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return c
}

// user is a one-message request.
func user(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

// events records what onEvent saw.
type events struct {
	mu  sync.Mutex
	got []llm.Event
}

func (e *events) add(ev llm.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, ev)
}

func (e *events) text(kind llm.EventKind) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b bytes.Buffer
	for _, ev := range e.got {
		if ev.Kind == kind {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

// logBuffer is a debug logger writing into a buffer.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func ctxTimeout(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func contextWithCancel(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(parent)
}
