package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/settings"
)

// llmTestKey is the provider key the /assistant tests save: long and
// distinctive, so a leak into a page, the log or the audit is found.
const (
	llmTestKey = "sk-canary-admin-llm-0123456789abcdef"
	llmEnvKey  = "sk-canary-env-llm-9876543210fedcba"
)

// withLLMFake starts an llmfake needing llmTestKey, listing kimi-test and
// answering every completion with a tool call, as {llm} (its base URL).
func withLLMFake(mutate ...func(*llmfake.Server)) func(t *testing.T, h *harness) {
	return func(t *testing.T, h *harness) {
		t.Helper()
		f := llmfake.New(llmfake.Step{Repeat: true, Plan: llmfake.Plan{Reasoning: []string{"hm"},
			Calls: []llmfake.Call{{ID: "c1", Name: "kimi_ping", Args: []string{"{}"}}}}})
		f.SetAPIKey(llmTestKey)
		f.SetModels(llmfake.ModelEntry{ID: "kimi-test", OwnedBy: "test", ContextLength: 262144})
		for _, m := range mutate {
			m(f)
		}
		t.Cleanup(f.Close)
		h.vars["llm"] = f.URL()
	}
}

// withSavedProvider is withLLMFake with the provider saved (model model)
// and the assistant reloaded.
func withSavedProvider(model string, mutate ...func(*llmfake.Server)) func(t *testing.T, h *harness) {
	return func(t *testing.T, h *harness) {
		t.Helper()
		withLLMFake(mutate...)(t, h)
		u := settings.AssistantUpdate{BaseURL: h.vars["llm"], APIKey: settings.KeyUpdate{Value: llmTestKey}, Model: model,
			MaxTokens: 128, Timeout: settings.DefaultAssistantTimeout, AllowPrivateNetwork: true}
		if _, err := settings.SaveAssistant(context.Background(), h.st, u, settings.Actor{Name: "setup"}); err != nil {
			t.Fatal(err)
		}
		if err := h.assistant.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// withAssistantEnv replaces the assistant with one whose model and key
// come from the environment.
func withAssistantEnv(t *testing.T) func(*Options) {
	return func(o *Options) {
		a, err := assistant.New(assistant.Options{Store: o.Store, Logger: o.Logger,
			Env:     settings.AssistantEnv{Model: "env-model", APIKey: llmEnvKey},
			Sources: assistant.EnvSources{Model: "KIMI_LLM_MODEL", APIKey: "KIMI_LLM_API_KEY_FILE"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		o.Assistant = a
	}
}

// providerForm is a valid provider form for {llm}.
func providerForm(extra ...string) url.Values {
	v := url.Values{form.AssistantBaseURL: {"{llm}"}, form.AssistantAPIKey: {llmTestKey}, form.AssistantModel: {"kimi-test"},
		form.AssistantMaxTokens: {"2048"}, form.AssistantTimeout: {"120"}, form.AssistantThinking: {"default"},
		form.AssistantPrivateNetwork: {"1"}}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return v
}

// noKeyAnywhere fails when a key is in the response, the log or the audit.
func noKeyAnywhere(t *testing.T, h *harness, res *response) {
	t.Helper()
	rows, err := h.st.Reader().Query(`SELECT detail FROM kimi_audit_log`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var audit strings.Builder
	for rows.Next() {
		var d string
		_ = rows.Scan(&d)
		audit.WriteString(d + "\n")
	}
	for _, k := range []string{llmTestKey, llmEnvKey} {
		switch {
		case strings.Contains(res.body, k):
			t.Errorf("the response shows a key")
		case strings.Contains(h.logs.String(), k):
			t.Errorf("the log holds a key")
		case strings.Contains(audit.String(), k):
			t.Errorf("the audit holds a key")
		}
	}
}

var assistantScenarios = []scenario{
	{name: "assistant: anonymous is sent to sign in", method: "GET", url: "/assistant",
		wantStatus: http.StatusSeeOther, wantLocation: "/login?next=%2Fassistant"},
	{name: "assistant: anonymous event stream is sent to sign in", method: "GET", url: "/assistant/events",
		wantStatus: http.StatusSeeOther},
	{name: "assistant: anonymous save is refused", method: "POST", url: "/assistant", form: providerForm(),
		wantStatus: http.StatusUnauthorized, wantNoAudit: true},
	{name: "assistant: the page unconfigured has Moonshot prefilled", method: "GET", url: "/assistant", signedIn: true,
		wantStatus: http.StatusOK,
		wantContains: []string{"Not configured", `value="https://api.moonshot.ai/v1"`, "No key saved.", `data-live="/assistant/events"`,
			`action="/assistant/test"`, `name="max_tokens"`, `value="4096"`, `value="600"`, "Save the base URL and API key first",
			`data-testid="nav-assistant"`, `aria-current="page"`},
		wantNotContains: []string{"soon"}},
	{name: "assistant: without the provider's owner the page answers 503", method: "GET", url: "/assistant", signedIn: true,
		opts: []func(*Options){func(o *Options) { o.Assistant = nil }}, wantStatus: http.StatusServiceUnavailable},

	{name: "assistant: a save stores the provider and rebuilds it", method: "POST", url: "/assistant", signedIn: true,
		setup: withLLMFake(), form: providerForm(form.AssistantTemperature, "0.6"),
		wantStatus: http.StatusSeeOther, wantLocation: "/assistant", wantAudit: []string{settings.AuditActionAssistant},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if h.assistant.Provider() == nil {
				t.Fatal("the provider was not rebuilt on save")
			}
			a, _ := h.assistant.Settings()
			if a.Primary.APIKey != llmTestKey || a.Primary.Model != "kimi-test" || a.MaxTokens != 2048 || *a.Temperature != 0.6 {
				t.Fatalf("stored %v", a)
			}
			page := c.get("/assistant")
			wantBody(t, page, "Provider settings saved", "Configured", "A key is saved.", `<option value="kimi-test" selected`,
				"kimi-test (262144 tokens)", `value="0.6"`)
			noKeyAnywhere(t, h, page)
			noKeyAnywhere(t, h, res)
		}},
	{name: "assistant: a save without CSRF changes nothing", method: "POST", url: "/assistant", signedIn: true, noCSRF: true,
		setup: withLLMFake(), form: providerForm(), wantStatus: http.StatusForbidden, wantNoAudit: true,
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			if a, _ := h.assistant.Settings(); a.Primary.APIKey != "" {
				t.Fatal("stored without CSRF")
			}
		}},
	{name: "assistant: invalid fields are refused one by one and the key is not echoed", method: "POST", url: "/assistant", signedIn: true,
		form: providerForm(form.AssistantBaseURL, "ftp://api.example/v1", form.AssistantMaxTokens, "lots", form.AssistantTemperature, "3",
			form.AssistantTimeout, "5", form.AssistantContextWindow, "12", form.AssistantFallbackModel, "llama3"),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{form.MsgAssistantNotSaved, `data-testid="error-base_url"`, "absolute http:// or https://",
			`data-testid="error-max_tokens"`, "whole number of tokens", `data-testid="error-temperature"`, "from 0 to 2",
			`data-testid="error-timeout_seconds"`, "from 10 to 3600 seconds", `data-testid="error-context_window"`,
			`data-testid="error-fallback_base_url"`, `value="ftp://api.example/v1"`, `value="lots"`},
		wantNotContains: []string{llmTestKey},
		check: func(t *testing.T, h *harness, _ *client, res *response) {
			if a, _ := h.assistant.Settings(); a.Primary.APIKey != "" {
				t.Fatal("a refused save stored the key")
			}
			noKeyAnywhere(t, h, res)
		}},
	{name: "assistant: a base URL with credentials is refused and not echoed", method: "POST", url: "/assistant", signedIn: true,
		form:       providerForm(form.AssistantBaseURL, "https://bob:hunter2pass@api.example/v1"),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains: []string{"must not contain a user name or password"}, wantNotContains: []string{"hunter2pass", llmTestKey}},
	{name: "assistant: a base URL with a query token is refused and the token not echoed", method: "POST", url: "/assistant", signedIn: true,
		form: providerForm(form.AssistantBaseURL, "https://api.example/v1?api_key=sk-query-canary-4242",
			form.AssistantFallbackBaseURL, "https://fb.example/v1#token=sk-fragment-canary-4242", form.AssistantFallbackModel, "m"),
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true,
		wantContains:    []string{"must not have a query or fragment", `value="https://api.example/v1"`, `value="https://fb.example/v1"`},
		wantNotContains: []string{"sk-query-canary-4242", "sk-fragment-canary-4242", llmTestKey}},
	{name: "assistant: environment values lock their fields and a save keeps them", method: "POST", url: "/assistant", signedIn: true,
		opts: []func(*Options){withAssistantEnv(nil)}, setup: withLLMFake(),
		form:       url.Values{form.AssistantBaseURL: {"{llm}"}, form.AssistantMaxTokens: {"1000"}, form.AssistantTimeout: {"60"}, form.AssistantPrivateNetwork: {"1"}},
		wantStatus: http.StatusSeeOther, wantAudit: []string{settings.AuditActionAssistant},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			stored, eff := h.assistant.Settings()
			if stored.Primary.APIKey != "" || stored.Primary.Model != "" || eff.Primary.Model != "env-model" || eff.Primary.APIKey != llmEnvKey {
				t.Fatalf("stored %v, effective %v", stored, eff)
			}
			page := c.get("/assistant")
			wantBody(t, page, `data-testid="assistant-env-KIMI_LLM_MODEL"`, `data-testid="assistant-env-KIMI_LLM_API_KEY_FILE"`,
				"This value comes from <code>KIMI_LLM_MODEL</code>", `value="env-model"`)
			for _, name := range []string{form.AssistantModel, form.AssistantAPIKey} {
				if !strings.Contains(page.body, `data-testid="field-`+name+`"`) || !disabledField(page.body, name) {
					t.Errorf("field %s is not disabled", name)
				}
			}
			noKeyAnywhere(t, h, page)
		}},

	{name: "assistant: test connection against a working endpoint passes", method: "POST", url: "/assistant/test", signedIn: true,
		setup: withSavedProvider("kimi-test"), wantStatus: http.StatusSeeOther, wantLocation: "/assistant#test",
		wantAudit: []string{ActionAssistantTest},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			page := c.get("/assistant")
			wantBody(t, page, `data-testid="card-assistant-test" data-ok="true"`, "Connection test passed", "Model listed",
				"Tool call came back", "reasoning_content appeared", `data-testid="assistant-calls">1<`)
			if d := lastAuditDetail(t, h, ActionAssistantTest); d != "primary passed (kimi-test)" {
				t.Fatalf("audit detail %q", d)
			}
			noKeyAnywhere(t, h, page)
		}},
	{name: "assistant: test connection against a 401 names the step and the reason", method: "POST", url: "/assistant/test", signedIn: true,
		setup:      withSavedProvider("kimi-test", func(f *llmfake.Server) { f.SetAPIKey("a-different-key") }),
		wantStatus: http.StatusSeeOther, wantAudit: []string{ActionAssistantTest},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			page := c.get("/assistant")
			wantBody(t, page, `data-ok="false"`, "Connection test failed",
				"Failed at the model list (GET /models): The selected model is unavailable to this bot right now.",
				"HTTP 401 invalid_authentication_error", `data-testid="assistant-errors">1<`)
			if d := lastAuditDetail(t, h, ActionAssistantTest); !strings.Contains(d, "primary failed at the model list") {
				t.Fatalf("audit detail %q", d)
			}
			noKeyAnywhere(t, h, page)
		}},
	{name: "assistant: test connection unconfigured says what to enter", method: "POST", url: "/assistant/test", signedIn: true,
		wantStatus: http.StatusSeeOther, wantAudit: []string{ActionAssistantTest},
		check: func(t *testing.T, _ *harness, c *client, _ *response) {
			wantBody(t, c.get("/assistant"), "Failed at the configuration: Enter a base URL, an API key and a model, and save.")
		}},
	{name: "assistant: test connection without CSRF runs nothing", method: "POST", url: "/assistant/test", signedIn: true, noCSRF: true,
		wantStatus: http.StatusForbidden, wantNoAudit: true},

	{name: "assistant: a model the provider does not list is flagged", method: "GET", url: "/assistant", signedIn: true,
		setup: withSavedProvider("kimi-retired"), wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="assistant-model-unlisted"`, "The model kimi-retired is not in the provider's model list",
			`<option value="kimi-test"`}},
	{name: "assistant: when the model list fails the model is typed", method: "GET", url: "/assistant", signedIn: true,
		setup: withSavedProvider("kimi-test", func(f *llmfake.Server) {
			p := llmfake.HTTPFailure(http.StatusInternalServerError, "server_error", "boom")
			f.SetModelsPlan(&p)
		}), wantStatus: http.StatusOK,
		wantContains:    []string{"The provider&#39;s model list could not be fetched", "HTTP 500", `<input id="assistant-model" name="model"`, `value="kimi-test"`},
		wantNotContains: []string{`<select id="assistant-model"`}},
}

// disabledField reports whether the input or select named name is disabled.
func disabledField(body, name string) bool {
	i := strings.Index(body, `name="`+name+`"`)
	if i < 0 {
		return false
	}
	end := strings.Index(body[i:], ">")
	start := strings.LastIndex(body[:i], "<")
	return end >= 0 && strings.Contains(body[start:i+end], " disabled")
}

// lastAuditDetail is the detail of the newest audit row of action.
func lastAuditDetail(t *testing.T, h *harness, action string) string {
	t.Helper()
	var d string
	if err := h.st.Reader().QueryRow(`SELECT detail FROM kimi_audit_log WHERE action = ? ORDER BY id DESC LIMIT 1`, action).Scan(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAssistantScenarios(t *testing.T) { runScenarios(t, assistantScenarios) }

// TestAssistantEvents: the status region arrives when the stream opens and
// again after a Test connection, with no polling.
func TestAssistantEvents(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	withSavedProvider("kimi-test")(t, h)
	c := h.newClient()
	c.login(testUser, testPassword)
	events, _ := openStream(t, c, "/assistant/events")
	if first := readEvent(t, events); !strings.Contains(first, `data-configured="true"`) || strings.Contains(first, "card-assistant-test") {
		t.Fatalf("first fragment: %.600s", first)
	}
	c.get("/assistant")
	res := c.post("/assistant/test", url.Values{})
	wantStatus(t, res, http.StatusSeeOther)
	for {
		ev := readEvent(t, events)
		if strings.Contains(ev, "Connection test passed") {
			if strings.Contains(ev, llmTestKey) {
				t.Fatal("the stream shows the key")
			}
			break
		}
	}
}
