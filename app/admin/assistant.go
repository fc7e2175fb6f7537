package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/web/templates"
)

// AssistantProvider is what /assistant needs of the model provider's
// owner; *assistant.Service implements it.
type AssistantProvider interface {
	Status() assistant.Status
	Watch(ctx context.Context) <-chan struct{}
	Reload(ctx context.Context) error
	ReloadBehaviour(ctx context.Context) error
	Models(ctx context.Context) ([]llm.Model, error)
	TestConnection(ctx context.Context) assistant.Report
	LastTest() (assistant.Report, bool)
	Settings() (stored, effective settings.Assistant)
	Env() (settings.AssistantEnv, assistant.EnvSources)
	IsDemo() bool
}

var _ AssistantProvider = (*assistant.Service)(nil)

// Bounds of /assistant: the page's model list, and a Test connection
// (two steps per backend, a primary and a fallback).
const (
	assistantModelsTimeout = 5 * time.Second
	assistantTestTimeout   = 4*assistant.ProbeTimeout + 5*time.Second
)

// ActionAssistantTest is the audit action of a Test connection.
const ActionAssistantTest = "assistant.test"

const (
	flashAssistantSaved            = "asaved"
	flashAssistantBehaviourSaved   = "absaved"
	flashAssistantDMsNextReconnect = "abdms"
)

func init() {
	flashes[flashAssistantSaved] = templates.Flash{Kind: templates.FlashSuccess,
		Message: "Provider settings saved; the assistant uses them from now on. Test the connection to check them."}
	flashes[flashAssistantBehaviourSaved] = templates.Flash{Kind: templates.FlashSuccess,
		Message: "Behaviour settings saved."}
	flashes[flashAssistantDMsNextReconnect] = templates.Flash{Kind: templates.FlashSuccess,
		Message: "Behaviour settings saved. Direct messages reach Kimi from the next reconnect: press Reconnect now on the Discord page (saving does not reconnect)."}
}

// requireAssistant answers 503 on /assistant without a provider owner.
func (s *Server) requireAssistant(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.opts.Assistant == nil {
			return echo.NewHTTPError(http.StatusServiceUnavailable, "The assistant's model provider is not available on this server.")
		}
		return next(c)
	}
}

// assistantStatusView is the live region's model.
func (s *Server) assistantStatusView(c echo.Context) templates.AssistantStatusView {
	st := s.opts.Assistant.Status()
	v := templates.AssistantStatusView{CSRF: s.csrfToken(c), Configured: st.Configured, Demo: st.Demo, Problem: st.Problem}
	switch {
	case st.Demo:
		v.State, v.StateKind = assistant.DemoLabel, "success"
	case st.Configured:
		v.State, v.StateKind = "Configured", "success"
	default:
		v.State, v.StateKind = "Not configured", "neutral"
	}
	orDash := func(s string) string {
		if s == "" {
			return "—"
		}
		return s
	}
	last, lastAt := "—", "—"
	if st.HaveLast {
		last = "OK"
		if st.Last.Err != nil {
			last = st.Last.Outcome
		}
		last = st.Last.Backend + ": " + last
		lastAt = st.Last.At.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	v.Stats = []templates.Stat{
		{Label: "Model", Value: orDash(st.Model), TestID: "assistant-model"},
		{Label: "Fallback model", Value: orDash(st.Fallback), TestID: "assistant-fallback"},
		{Label: "Last call", Value: last, TestID: "assistant-last"},
		{Label: "Last call at", Value: lastAt, TestID: "assistant-last-at"},
		{Label: "Calls today (UTC)", Value: strconv.Itoa(st.CallsToday), TestID: "assistant-calls"},
		{Label: "Errors today (UTC)", Value: strconv.Itoa(st.ErrorsToday), TestID: "assistant-errors"},
	}
	if rep, ok := s.opts.Assistant.LastTest(); ok {
		v.Test = assistantTestView(rep)
	}
	return v
}

func assistantTestView(rep assistant.Report) *templates.AssistantTestView {
	out := &templates.AssistantTestView{OK: rep.OK(), At: rep.At.UTC().Format("2006-01-02 15:04:05 UTC")}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	for _, p := range rep.Probes {
		pv := templates.AssistantProbeView{Backend: p.Backend, Endpoint: p.BaseURL, OK: p.OK}
		if p.BaseURL == "" {
			pv.Endpoint = "—"
		}
		switch {
		case p.OK:
			pv.Summary = "Passed: the endpoint listed its models and answered a completion."
		default:
			pv.Summary = "Failed at the " + p.FailedStep + ": " + p.Reason
		}
		if p.FailedStep != assistant.StepConfiguration {
			status := "—"
			if p.Status != 0 {
				status = strconv.Itoa(p.Status)
			}
			pv.Rows = append(pv.Rows,
				templates.KeyValue{Key: "Reachable", Value: yes(p.Reachable)},
				templates.KeyValue{Key: "HTTP status (models)", Value: status},
				templates.KeyValue{Key: "Latency (models)", Value: p.ModelsLatency.Round(time.Millisecond).String()})
			if p.FailedStep != assistant.StepModels {
				listed := yes(p.Listed)
				if !p.Listed {
					listed = "no — " + p.Model + " is not among the " + strconv.Itoa(p.Models) + " models listed"
				}
				pv.Rows = append(pv.Rows,
					templates.KeyValue{Key: "Model listed", Value: listed},
					templates.KeyValue{Key: "Latency (completion)", Value: p.CompletionLatency.Round(time.Millisecond).String()})
			}
			if p.OK {
				pv.Rows = append(pv.Rows,
					templates.KeyValue{Key: "Tool call came back", Value: yes(p.ToolCall)},
					templates.KeyValue{Key: "reasoning_content appeared", Value: yes(p.Reasoning)},
					templates.KeyValue{Key: "Finish reason", Value: p.FinishReason})
			}
		}
		out.Probes = append(out.Probes, pv)
	}
	return out
}

// assistantFormView is the provider form from the stored settings, with
// the environment's locks and the provider's model list.
func (s *Server) assistantFormView(ctx context.Context) templates.AssistantFormView {
	stored, eff := s.opts.Assistant.Settings()
	_, src := s.opts.Assistant.Env()
	f := templates.AssistantFormView{
		BaseURL: eff.Primary.BaseURL, Model: eff.Primary.Model, MaxTokens: strconv.Itoa(stored.MaxTokens),
		Timeout: strconv.Itoa(int(stored.Timeout / time.Second)), Thinking: string(stored.Thinking),
		FallbackBaseURL: stored.Fallback.BaseURL, FallbackModel: stored.Fallback.Model,
		KeySet: stored.Primary.APIKey != "", FallbackKeySet: stored.Fallback.APIKey != "",
		AllowPrivateNetwork: stored.AllowPrivateNetwork, EnvBaseURL: src.BaseURL, EnvModel: src.Model, EnvAPIKey: src.APIKey,
		Demo: s.opts.Assistant.IsDemo(),
	}
	if stored.ContextWindow > 0 {
		f.ContextWindow = strconv.Itoa(stored.ContextWindow)
	}
	if stored.Temperature != nil {
		f.Temperature = strconv.FormatFloat(*stored.Temperature, 'f', -1, 64)
	}
	if f.Demo {
		f.ModelsNote = "Demo mode: the model list is not fetched."
		return f
	}
	ctx, cancel := context.WithTimeout(ctx, assistantModelsTimeout)
	defer cancel()
	models, err := s.opts.Assistant.Models(ctx)
	switch {
	case errors.Is(err, llm.ErrNotConfigured):
		f.ModelsNote = "Save the base URL and API key first: the model list then comes from the provider."
	case err != nil:
		f.ModelsNote = "The provider's model list could not be fetched (" + assistantReason(err) + "); type the model id."
	case len(models) == 0:
		f.ModelsNote = "The provider lists no models; type the model id."
	default:
		ids := make([]string, 0, len(models))
		for _, m := range models {
			label := m.ID
			if m.ContextWindow > 0 {
				label += " (" + strconv.Itoa(m.ContextWindow) + " tokens)"
			}
			f.Models = append(f.Models, templates.AssistantModelOption{ID: m.ID, Label: label, Selected: m.ID == f.Model})
			ids = append(ids, m.ID)
		}
		f.ModelUnlisted = f.Model != "" && !slices.Contains(ids, f.Model)
	}
	return f
}

// assistantReason is a model-list failure for the page, scrubbed.
func assistantReason(err error) string {
	return assistant.Describe(err)
}

// renderAssistant renders /assistant with status, after a mutate of the
// model (a refused form's input and errors).
func (s *Server) renderAssistant(c echo.Context, status int, mutate func(*templates.AssistantView)) error {
	behaviour, err := settings.LoadAssistantBehaviour(c.Request().Context(), s.opts.Store)
	if err != nil {
		return fmt.Errorf("admin: assistant page: %w", err)
	}
	retention, err := s.assistantRetentionView(c.Request().Context())
	if err != nil {
		return fmt.Errorf("admin: assistant page: %w", err)
	}
	limits, err := settings.LoadAssistantLimits(c.Request().Context(), s.opts.Store)
	if err != nil {
		return fmt.Errorf("admin: assistant page: %w", err)
	}
	v := templates.AssistantView{Live: "/assistant/events", Status: s.assistantStatusView(c),
		Form: s.assistantFormView(c.Request().Context()), Behaviour: form.AssistantBehaviourOf(behaviour), Retention: retention,
		Limits: form.AssistantLimitsOf(limits)}
	if mutate != nil {
		mutate(&v)
	}
	if err := render(c, status, templates.AssistantPage(s.chrome(c, "Assistant", "assistant"), v)); err != nil {
		return fmt.Errorf("admin: assistant page: %w", err)
	}
	return nil
}
