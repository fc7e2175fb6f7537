package assistant

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
)

const testKey = "sk-canary-assistant-0123456789"

var who = settings.Actor{Name: "admin", IP: "192.0.2.1"}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// fake is an llmfake server needing testKey, answering every completion
// with a tool call of the probe's tool and some reasoning.
func fake(t *testing.T, model string) *llmfake.Server {
	t.Helper()
	f := llmfake.New(llmfake.Step{Repeat: true, Plan: llmfake.Plan{Reasoning: []string{"thinking"},
		Calls: []llmfake.Call{{ID: "c1", Name: "kimi_ping", Args: []string{"{", "}"}}}}})
	f.SetAPIKey(testKey)
	f.SetModels(llmfake.ModelEntry{ID: model, OwnedBy: "test"})
	t.Cleanup(f.Close)
	return f
}

// save stores a provider at baseURL for model, private network allowed
// (llmfake listens on loopback) unless private is false.
func save(t *testing.T, st *store.Store, baseURL, model string, private bool) {
	t.Helper()
	u := settings.AssistantUpdate{BaseURL: baseURL, APIKey: settings.KeyUpdate{Value: testKey}, Model: model,
		MaxTokens: 64, Timeout: time.Minute, AllowPrivateNetwork: private}
	if _, err := settings.SaveAssistant(context.Background(), st, u, who); err != nil {
		t.Fatal(err)
	}
}

// logBuffer collects every log line, at debug level.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newService(t *testing.T, o Options) (*Service, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, logs
}

// TestServiceNotConfigured: without a key or model there is no provider,
// no error, and Test connection names what to do.
func TestServiceNotConfigured(t *testing.T) {
	s, _ := newService(t, Options{Store: openStore(t)})
	if s.Provider() != nil {
		t.Fatal("a provider without settings")
	}
	st := s.Status()
	if st.Configured || st.Label != "" {
		t.Fatalf("status %+v", st)
	}
	rep := s.TestConnection(context.Background())
	if rep.OK() || rep.Probes[0].FailedStep != StepConfiguration || !strings.Contains(rep.Probes[0].Reason, "Enter a base URL") {
		t.Fatalf("report %+v", rep)
	}
}

// TestServiceRebuildsOnReload: a save followed by Reload replaces the
// provider: the next completion goes to the new endpoint with the new
// model, and watchers are signalled.
func TestServiceRebuildsOnReload(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	a, b := fake(t, "model-a"), fake(t, "model-b")
	save(t, st, a.URL(), "model-a", true)
	s, _ := newService(t, Options{Store: st})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := s.Watch(wctx)
	first := s.Provider()
	if first == nil {
		t.Fatal("no provider")
	}
	if _, err := first.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil); err != nil {
		t.Fatal(err)
	}
	save(t, st, b.URL(), "model-b", true)
	if err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("Reload did not signal the watchers")
	}
	if _, err := s.Provider().Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(a.Requests()); n != 1 {
		t.Fatalf("endpoint a got %d requests, want 1", n)
	}
	reqs := b.Requests()
	if len(reqs) != 1 || reqs[0].Body.Model != "model-b" || *reqs[0].Body.MaxTokens != 64 {
		t.Fatalf("endpoint b got %+v", reqs)
	}
	if got := s.Status().Model; got != "model-b" {
		t.Fatalf("status model %q", got)
	}
}

// TestServiceChainsTheFallback: with a fallback the provider is a Chain:
// a primary answering 401 fails over to the fallback at once.
func TestServiceChainsTheFallback(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	primary, fallback := fake(t, "p"), fake(t, "f")
	primary.SetAPIKey("another-key") // our key gets 401
	u := settings.AssistantUpdate{BaseURL: primary.URL(), APIKey: settings.KeyUpdate{Value: testKey}, Model: "p",
		MaxTokens: 64, Timeout: time.Minute, AllowPrivateNetwork: true,
		FallbackBaseURL: fallback.URL(), FallbackAPIKey: settings.KeyUpdate{Value: testKey}, FallbackModel: "f"}
	if _, err := settings.SaveAssistant(ctx, st, u, who); err != nil {
		t.Fatal(err)
	}
	s, _ := newService(t, Options{Store: st})
	if _, ok := s.Provider().(*llm.Chain); !ok {
		t.Fatalf("provider %T, want *llm.Chain", s.Provider())
	}
	resp, err := s.Provider().Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Backend != "fallback" || len(fallback.Requests()) != 1 {
		t.Fatalf("served by %q; fallback requests %d", resp.Backend, len(fallback.Requests()))
	}
}

// TestServiceEnvironmentOverrides: the environment's base URL, model and
// key replace the stored ones in the provider.
func TestServiceEnvironmentOverrides(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	stored, env := fake(t, "stored"), fake(t, "env-model")
	save(t, st, stored.URL(), "stored", true)
	s, _ := newService(t, Options{Store: st, Env: settings.AssistantEnv{BaseURL: env.URL(), Model: "env-model"}})
	if _, err := s.Provider().Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if len(stored.Requests()) != 0 || len(env.Requests()) != 1 || env.Requests()[0].Body.Model != "env-model" {
		t.Fatalf("stored got %d, env got %+v", len(stored.Requests()), env.Requests())
	}
	if storedSet, eff := s.Settings(); storedSet.Primary.Model != "stored" || eff.Primary.Model != "env-model" {
		t.Fatalf("settings %v / %v", storedSet, eff)
	}
}

// TestTestConnection: a passing test reports the list, the tool call and
// the reasoning and is counted; failures name the step and the scrubbed
// reason, never the key, in the report or the log.
func TestTestConnection(t *testing.T) {
	ctx := context.Background()
	t.Run("passes", func(t *testing.T) {
		st := openStore(t)
		f := fake(t, "kimi-test")
		save(t, st, f.URL(), "kimi-test", true)
		s, _ := newService(t, Options{Store: st})
		rep := s.TestConnection(ctx)
		p := rep.Probes[0]
		if !rep.OK() || !p.Reachable || p.Status != 200 || !p.Listed || !p.ToolCall || !p.Reasoning || p.Backend != BackendPrimary {
			t.Fatalf("probe %+v", p)
		}
		reqs := f.Requests()
		last := reqs[len(reqs)-1]
		if *last.Body.MaxTokens != 1 || len(last.Body.Tools) != 1 || last.Body.Tools[0].Function.Name != "kimi_ping" {
			t.Fatalf("the completion was %s", last.Raw)
		}
		if c := s.Status(); c.CallsToday != 1 || c.ErrorsToday != 0 || !c.HaveLast || c.Last.Err != nil {
			t.Fatalf("counts %+v", c.Counts)
		}
		if got, ok := s.LastTest(); !ok || !got.OK() {
			t.Fatal("the report was not kept")
		}
	})
	t.Run("model not listed", func(t *testing.T) {
		st := openStore(t)
		f := fake(t, "other")
		save(t, st, f.URL(), "kimi-test", true)
		s, _ := newService(t, Options{Store: st})
		if p := s.TestConnection(ctx).Probes[0]; !p.OK || p.Listed || p.Models != 1 {
			t.Fatalf("probe %+v", p)
		}
	})
	failures := []struct {
		name     string
		setup    func(f *llmfake.Server)
		private  bool
		step     string
		want     []string
		reached  bool
		status   int
		requests int
	}{
		{name: "401 at the model list", setup: func(f *llmfake.Server) { f.SetAPIKey("other") }, private: true, step: StepModels,
			want: []string{"The selected model is unavailable to this bot right now.", "HTTP 401 invalid_authentication_error"}, reached: true, status: 401, requests: 1},
		{name: "503 at the completion", setup: func(f *llmfake.Server) {
			f.SetSteps(llmfake.Step{Repeat: true, Plan: llmfake.HTTPFailure(503, "engine_overloaded_error", "the key "+testKey+" is busy")})
		}, private: true, step: StepCompletion, want: []string{"The model provider is temporarily unavailable.", "HTTP 503"}, reached: true, status: 200, requests: 2},
		{name: "loopback without the private-network switch", private: false, step: StepModels,
			want: []string{"loopback address; allow a private-network endpoint"}, requests: 0},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			f := fake(t, "kimi-test")
			if tc.setup != nil {
				tc.setup(f)
			}
			save(t, st, f.URL(), "kimi-test", tc.private)
			s, logs := newService(t, Options{Store: st})
			rep := s.TestConnection(ctx)
			p := rep.Probes[0]
			if rep.OK() || p.FailedStep != tc.step || p.Reachable != tc.reached || p.Status != tc.status {
				t.Fatalf("probe %+v", p)
			}
			for _, w := range tc.want {
				if !strings.Contains(p.Reason, w) {
					t.Errorf("reason %q lacks %q", p.Reason, w)
				}
			}
			if strings.Contains(p.Reason, testKey) || strings.Contains(logs.String(), testKey) {
				t.Fatalf("the key leaked: reason %q; log:\n%s", p.Reason, logs)
			}
			if n := len(f.Requests()); n != tc.requests {
				t.Fatalf("the endpoint got %d requests, want %d", n, tc.requests)
			}
			if c := s.Status(); c.ErrorsToday != 1 || c.Last.Outcome != p.Reason {
				t.Fatalf("counts %+v", c.Counts)
			}
		})
	}
}

// TestServiceDemo: demo mode's provider is the scripted model on loopback,
// whatever is stored; its Test connection passes.
func TestServiceDemo(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	save(t, st, "https://api.moonshot.ai/v1", "kimi-real", false)
	demo := llmfake.New(llmfake.Demo()...)
	demo.SetModels(llmfake.ModelEntry{ID: "kimi-demo", OwnedBy: "kimi"})
	t.Cleanup(demo.Close)
	s, _ := newService(t, Options{Store: st, Demo: &Demo{BaseURL: demo.URL(), Model: "kimi-demo"}})
	st2 := s.Status()
	if !st2.Demo || !st2.Configured || st2.Label != DemoLabel || st2.Model != "kimi-demo" {
		t.Fatalf("status %+v", st2)
	}
	rep := s.TestConnection(ctx)
	if !rep.OK() || rep.Probes[0].Backend != BackendDemo || !rep.Probes[0].Listed {
		t.Fatalf("report %+v", rep)
	}
	resp, err := s.Provider().Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}}, nil)
	if err != nil || !strings.Contains(resp.Content, "demo model") {
		t.Fatalf("%q, %v", resp.Content, err)
	}
}

// TestRecorderCountsPerUTCDay: the day's counts reset when the clock
// passes midnight UTC; the last call stays.
func TestRecorderCountsPerUTCDay(t *testing.T) {
	now := time.Date(2030, 1, 1, 23, 59, 0, 0, time.UTC)
	r := NewRecorder(func() time.Time { return now }, nil)
	r.Record(Call{Backend: "primary"})
	r.Record(Call{Backend: "primary", Err: llm.ErrStall, Outcome: "down"})
	if c := r.Counts(); c.CallsToday != 2 || c.ErrorsToday != 1 || c.Last.Outcome != "down" {
		t.Fatalf("counts %+v", c)
	}
	now = now.Add(2 * time.Minute)
	if c := r.Counts(); c.CallsToday != 0 || c.ErrorsToday != 0 || !c.HaveLast || c.Last.Outcome != "down" {
		t.Fatalf("after midnight: %+v", c)
	}
	r.Record(Call{Backend: "primary"})
	if c := r.Counts(); c.CallsToday != 1 || c.ErrorsToday != 0 {
		t.Fatalf("the next day: %+v", c)
	}
}

// TestServiceRetriesATransientFailureWithoutAFallback: the failure policy
// holds with a primary alone — a 500 is retried once after 2 s (on the
// test's clock), not handed to the caller.
func TestServiceRetriesATransientFailureWithoutAFallback(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	f := llmfake.New(llmfake.Step{Plan: llmfake.HTTPFailure(500, "server_error", "boom")}, llmfake.Step{Plan: llmfake.Text("ok")})
	t.Cleanup(f.Close)
	save(t, st, f.URL(), "fake-model", true)
	var mu sync.Mutex
	var slept []time.Duration
	s, _ := newService(t, Options{Store: st, Sleep: func(_ context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		slept = append(slept, d)
		return nil
	}})
	resp, err := s.Provider().Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
	if err != nil || resp.Content != "ok" {
		t.Fatalf("Complete = %q, %v; want the retry's answer", resp.Content, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(slept) != 1 || slept[0] != llm.RetryDelay || len(f.Requests()) != 2 {
		t.Fatalf("slept %v, %d requests; want one wait of %v and two requests", slept, len(f.Requests()), llm.RetryDelay)
	}
}

// TestServiceDoesNotRetryARefusedAddress: an endpoint the egress policy
// refuses (loopback with the private-network switch off) is a setting to
// change, not a transient failure: no 2 s retry, the fallback at once, and
// the "unavailable" outcome.
func TestServiceDoesNotRetryARefusedAddress(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	f := fake(t, "kimi-test")
	save(t, st, f.URL(), "kimi-test", false)
	var slept []time.Duration
	s, _ := newService(t, Options{Store: st, Sleep: func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		return nil
	}})
	_, err := s.Provider().Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, nil)
	if d, o := llm.Classify(err); d != llm.Failover || o != llm.OutcomeUnavailable || !strings.Contains(Describe(err), "allow a private-network endpoint") {
		t.Fatalf("err = %v: %v, %v; want a failover, unavailable, naming the switch", err, d, o)
	}
	if len(slept) != 0 || len(f.Requests()) != 0 {
		t.Fatalf("slept %v, %d requests; want no retry and no request", slept, len(f.Requests()))
	}
}

// TestServiceKeepsTheAssistantName: Reload loads the configured name; a
// later save is seen only after ReloadBehaviour (the Discord side reads
// it from memory), which does not rebuild the provider.
func TestServiceKeepsTheAssistantName(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	saveName := func(name string) {
		t.Helper()
		if _, err := settings.SaveAssistantBehaviour(ctx, st, settings.AssistantBehaviourUpdate{Name: name,
			TurnDeadline: settings.DefaultTurnDeadline, IterationCap: settings.DefaultIterationCap}, settings.Actor{Name: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	saveName("Ava")
	s, _ := newService(t, Options{Store: st})
	for _, step := range []struct {
		save   string
		reload bool
		want   string
	}{
		{"", false, "Ava"},
		{"Bo", false, "Ava"},
		{"", true, "Bo"},
		{" ", true, ""},
	} {
		if step.save != "" {
			saveName(step.save)
		}
		if step.reload {
			if err := s.ReloadBehaviour(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := s.AssistantName(); got != step.want {
			t.Fatalf("after %+v: AssistantName = %q, want %q", step, got, step.want)
		}
	}
}
