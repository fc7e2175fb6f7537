// Package assistant owns the appliance's model provider: it builds the
// llm Clients and the Chain over them (the primary and the optional
// fallback; the failure policy holds without a fallback too) from the
// settings saved on /assistant and the environment's overrides, through
// the egress layer's guarded streaming transport, rebuilds it when the
// settings are
// saved (Reload), and keeps the status card's counters (Recorder). In demo
// mode the provider is the scripted demo model on loopback instead, and no
// setting reaches the network. Test connection (TestConnection) checks each
// backend with GET /models and a one-token completion.
package assistant

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/kimiapp/kimi/app/egress"
	"github.com/kimiapp/kimi/app/internal/signal"
	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/settings"
)

// DemoLabel is how the status card names the demo model.
const DemoLabel = "Demo model (scripted, no network)"

// Backend names.
const (
	BackendPrimary  = "primary"
	BackendFallback = "fallback"
	BackendDemo     = "demo"
)

// EnvSources name the environment variables the overrides came from
// (KIMI_LLM_API_KEY or KIMI_LLM_API_KEY_FILE, …), "" for a field the
// environment does not set.
type EnvSources struct {
	BaseURL, Model, APIKey string
}

// Demo is demo mode's scripted model: the loopback address of the
// in-process fake and the model it serves.
type Demo struct {
	BaseURL, Model string
}

// Options configure New.
type Options struct {
	// Store holds the settings (required).
	Store settings.Store
	// Env are the environment's overrides of the primary backend, Sources
	// the variables they came from.
	Env     settings.AssistantEnv
	Sources EnvSources
	// Demo, when set, is the provider instead of the settings.
	Demo *Demo
	// UserAgent is sent on every request ("Kimi/<version>").
	UserAgent string
	// Resolver and TLSConfig are the egress transport's (tests); nil: the
	// system's.
	Resolver  egress.Resolver
	TLSConfig *tls.Config
	Logger    *slog.Logger
	// Now is the clock of the counters and the chain's cooldowns (nil:
	// time.Now).
	Now func() time.Time
	// Sleep is the chain's wait before a retry (tests; nil: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// StallTimeout is every client's stall timeout (tests; 0:
	// llm.DefaultStallTimeout).
	StallTimeout time.Duration
}

// member is one built backend.
type member struct {
	name   string
	client *llm.Client
	tr     *http.Transport
}

// Service is the provider's owner. Safe for concurrent use.
type Service struct {
	o       Options
	log     *slog.Logger
	rec     *Recorder
	changed signal.Watchers

	mu        sync.RWMutex
	settings  settings.Assistant // effective: stored with the overrides
	stored    settings.Assistant
	members   []member
	provider  llm.Provider
	buildErr  error
	rebuiltAt time.Time
	models    []llm.Model // the primary's list, fetched once per build
	lastTest  *Report
	name      string // the behaviour's configured assistant name
}

// New returns the owner with no provider yet: Reload (the appliance's
// "assistant" part, at start) loads the settings and builds it.
func New(o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("assistant: new: no store")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Service{o: o, log: o.Logger}
	s.rec = NewRecorder(o.Now, s.changed.Notify)
	return s, nil
}

// Reload reads the settings and replaces the provider (at start, and
// after each save on /assistant). Missing settings are not an error: there
// is no provider and the status says "not configured". A turn already holding the old provider keeps
// it. Settings that cannot be built leave no provider and say why in the
// status; only a store failure is an error.
func (s *Service) Reload(ctx context.Context) error {
	if err := s.ReloadBehaviour(ctx); err != nil {
		return fmt.Errorf("assistant: reload: %w", err)
	}
	stored, err := settings.LoadAssistant(ctx, s.o.Store)
	if err != nil {
		return fmt.Errorf("assistant: reload: %w", err)
	}
	eff := s.o.Env.Apply(stored)
	members, buildErr := s.build(eff)
	// The configured provider is always a Chain, with or without a
	// fallback: the failure policy (the retry after 2 s, the cooldown)
	// holds for a primary alone too. The demo model is called as it is.
	var provider llm.Provider
	switch {
	case len(members) == 0:
	case s.o.Demo != nil:
		provider = members[0].client
	default:
		var fallback llm.Provider
		if len(members) > 1 {
			fallback = members[1].client
		}
		provider = llm.NewChain(members[0].client, fallback, llm.ChainOptions{Logger: s.log, Now: s.o.Now, Sleep: s.o.Sleep})
	}
	s.mu.Lock()
	old := s.members
	s.stored, s.settings, s.members, s.provider, s.buildErr, s.rebuiltAt = stored, eff, members, provider, buildErr, s.o.Now()
	s.models = nil
	s.mu.Unlock()
	for _, m := range old {
		m.tr.CloseIdleConnections()
	}
	if buildErr != nil {
		s.log.Warn("the model provider's settings cannot be used", "err", buildErr)
	}
	s.changed.Notify()
	return nil
}

// ReloadBehaviour re-reads the behaviour settings kept in memory (the
// assistant name; a turn reads the rest at its start): at start (Reload)
// and after each save of the behaviour form on /assistant.
func (s *Service) ReloadBehaviour(ctx context.Context) error {
	b, err := settings.LoadAssistantBehaviour(ctx, s.o.Store)
	if err != nil {
		return fmt.Errorf("assistant: reload behaviour: %w", err)
	}
	s.mu.Lock()
	s.name = b.Name
	s.mu.Unlock()
	return nil
}

// AssistantName is the configured assistant name ("" for the bot's own
// names only) as last loaded: the Discord side's text invocation reads it
// on every message, from memory.
func (s *Service) AssistantName() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.name
}

// build makes the clients: the demo model, or the primary (and fallback)
// when configured. Nothing configured is no member and no error.
func (s *Service) build(a settings.Assistant) ([]member, error) {
	if d := s.o.Demo; d != nil {
		m, err := s.client(BackendDemo, settings.Backend{BaseURL: d.BaseURL, Model: d.Model}, a, true)
		if err != nil {
			return nil, err
		}
		return []member{m}, nil
	}
	if !a.Configured() {
		return nil, nil
	}
	primary, err := s.client(BackendPrimary, a.Primary, a, a.AllowPrivateNetwork)
	if err != nil {
		return nil, fmt.Errorf("assistant: primary: %w", err)
	}
	out := []member{primary}
	if a.HasFallback() {
		fb, err := s.client(BackendFallback, a.Fallback, a, a.AllowPrivateNetwork)
		if err != nil {
			primary.tr.CloseIdleConnections()
			return nil, fmt.Errorf("assistant: fallback: %w", err)
		}
		out = append(out, fb)
	}
	return out, nil
}

func (s *Service) client(name string, b settings.Backend, a settings.Assistant, private bool) (member, error) {
	tr := egress.NewProviderTransport(egress.ProviderOptions{AllowPrivateNetwork: private, Resolver: s.o.Resolver,
		TLSConfig: s.o.TLSConfig, Logger: s.log})
	thinking := llm.ThinkingDefault
	switch a.Thinking {
	case settings.ThinkingOn:
		thinking = llm.ThinkingOn
	case settings.ThinkingOff:
		thinking = llm.ThinkingOff
	}
	c, err := llm.New(llm.Options{
		BaseURL: b.BaseURL, APIKey: b.APIKey, Model: b.Model, MaxTokens: a.MaxTokens, Temperature: a.Temperature,
		Thinking: thinking, Timeout: a.Timeout, StallTimeout: s.o.StallTimeout, UserAgent: s.o.UserAgent, Transport: tr,
		Logger: s.log.With("backend", name),
	})
	if err != nil {
		tr.CloseIdleConnections()
		return member{}, err
	}
	return member{name: name, client: c, tr: tr}, nil
}

// Provider is the current provider, or nil when none is configured. A
// caller keeps the one it got for a whole turn.
func (s *Service) Provider() llm.Provider {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.provider
}

// Recorder is the status card's counters: the assistant records each of
// its model calls there.
func (s *Service) Recorder() *Recorder { return s.rec }

// RecordTurnCall counts one of a turn's model calls on the status card:
// its backend (the Chain member that served it; for a failure, which
// names none, the demo or the primary when it is alone), its scrubbed
// outcome when it failed, and its latency.
func (s *Service) RecordTurnCall(resp llm.Response, err error, latency time.Duration) {
	c := Call{Err: err, Backend: resp.Backend, Latency: latency}
	if err != nil {
		_, o := llm.Classify(err)
		c.Outcome = llm.UserMessage(o)
	}
	if c.Backend == "" {
		s.mu.RLock()
		fallback := s.settings.HasFallback()
		s.mu.RUnlock()
		switch {
		case s.o.Demo != nil:
			c.Backend = BackendDemo
		case !fallback:
			c.Backend = BackendPrimary
		default:
			c.Backend = BackendPrimary + " or " + BackendFallback
		}
	}
	s.rec.Record(c)
}

// Watch signals after every change the status card shows (a rebuild, a
// recorded call), until ctx ends.
func (s *Service) Watch(ctx context.Context) <-chan struct{} { return s.changed.Watch(ctx) }

// Settings are the stored settings and the effective ones (with the
// environment's overrides).
func (s *Service) Settings() (stored, effective settings.Assistant) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.stored, s.settings
}

// Env is the environment's overrides and their variables.
func (s *Service) Env() (settings.AssistantEnv, EnvSources) { return s.o.Env, s.o.Sources }

// IsDemo reports demo mode.
func (s *Service) IsDemo() bool { return s.o.Demo != nil }

// Status is the status card.
type Status struct {
	Configured bool
	Demo       bool
	// Label names the provider: DemoLabel, or the model and its host.
	Label string
	// Model is the primary's model id; Fallback the fallback's ("" none).
	Model, Fallback string
	// Problem says why the stored settings cannot be used ("" when they can).
	Problem string
	Counts
}

// Status returns the status card.
func (s *Service) Status() Status {
	s.mu.RLock()
	st := Status{Configured: s.provider != nil, Demo: s.o.Demo != nil, Model: s.settings.Primary.Model}
	if s.settings.HasFallback() {
		st.Fallback = s.settings.Fallback.Model
	}
	if s.buildErr != nil {
		st.Problem = s.buildErr.Error()
	}
	s.mu.RUnlock()
	switch {
	case st.Demo:
		st.Label, st.Model, st.Fallback = DemoLabel, s.o.Demo.Model, ""
	case st.Configured:
		st.Label = st.Model
	}
	st.Counts = s.rec.Counts()
	return st
}

// Models is the primary endpoint's own model list (GET /models), fetched
// once per build. Before a model is chosen it asks with the saved base URL
// and key, so the list can offer one.
func (s *Service) Models(ctx context.Context) ([]llm.Model, error) {
	s.mu.RLock()
	cached, members, eff := s.models, s.members, s.settings
	s.mu.RUnlock()
	if cached != nil {
		return cached, nil
	}
	var c *llm.Client
	if len(members) > 0 {
		c = members[0].client
	} else {
		if eff.Primary.BaseURL == "" || (eff.Primary.APIKey == "" && !eff.AllowPrivateNetwork) || s.o.Demo != nil {
			return nil, llm.ErrNotConfigured
		}
		m, err := s.client(BackendPrimary, settings.Backend{BaseURL: eff.Primary.BaseURL, APIKey: eff.Primary.APIKey}, eff, eff.AllowPrivateNetwork)
		if err != nil {
			return nil, fmt.Errorf("assistant: models: %w", err)
		}
		defer m.tr.CloseIdleConnections()
		c = m.client
	}
	list, err := c.Models(ctx)
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []llm.Model{}
	}
	s.mu.Lock()
	if s.settings == eff {
		s.models = list
	}
	s.mu.Unlock()
	return list, nil
}

// LastTest is the last Test connection's report.
func (s *Service) LastTest() (Report, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.lastTest == nil {
		return Report{}, false
	}
	return *s.lastTest, true
}

// Close releases the transports' idle connections.
func (s *Service) Close() {
	s.mu.Lock()
	old := s.members
	s.members, s.provider = nil, nil
	s.mu.Unlock()
	for _, m := range old {
		m.tr.CloseIdleConnections()
	}
	s.changed.Close()
}
