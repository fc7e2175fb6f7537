package admin

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kimiapp/kimi/app/llm/llmfake"
)

// TestBrowserAssistantJourney: the operator opens Assistant from the
// navigation, saves a provider pointing at a scripted model on loopback
// (the private-network switch on), picks the model from the provider's own
// list, and Test connection is green; against an endpoint answering 401 it
// names the step and the reason. The key never reaches the page.
func TestBrowserAssistantJourney(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	var fake *llmfake.Server
	withLLMFake(func(f *llmfake.Server) { fake = f })(t, h)
	tb := newTab(t)

	tb.do("sign in",
		chromedp.Navigate(h.ts.URL+"/login"),
		fill(`#login-username`, testUser),
		fill(`#login-password`, testPassword),
		click(`[data-testid=login-submit]`),
		visible(`[data-testid=overview-version]`),
	)
	tb.do("open Assistant",
		click(`[data-testid=nav-assistant]`),
		visible(`[data-testid=assistant-form]`),
	)
	tb.wantText(`[data-testid=assistant-state]`, "Not configured")
	tb.do("save a provider on loopback",
		chromedp.SetValue(chromedp.CSS(`#assistant-base-url`), h.vars["llm"]),
		fill(`#assistant-api-key`, llmTestKey),
		click(`#assistant-private`),
		click(`[data-testid=assistant-save]`),
		visible(`[data-testid=alert-success]`),
	)
	tb.wantText(`[data-testid=alert-success]`, "Provider settings saved")
	tb.do("choose the model from the provider's list and save",
		chromedp.SetValue(chromedp.CSS(`select#assistant-model`), "kimi-test"),
		click(`[data-testid=assistant-save]`),
		visible(`[data-testid=alert-success]`),
	)
	tb.wantText(`[data-testid=assistant-state]`, "Configured")
	tb.wantText(`[data-testid=assistant-model]`, "kimi-test")
	tb.do("test the connection",
		click(`[data-testid=assistant-test]`),
		visible(`[data-testid=card-assistant-test]`),
	)
	tb.wantText(`[data-testid=assistant-probe-summary-primary]`, "Passed: the endpoint listed its models and answered a completion.")
	tb.shootForReview("assistant")

	fake.SetAPIKey("a-key-kimi-does-not-have") // the endpoint now answers 401
	tb.do("test the connection against a 401",
		click(`[data-testid=assistant-test]`),
		visible(`[data-testid=card-assistant-test][data-ok=false]`),
	)
	tb.wantText(`[data-testid=assistant-probe-summary-primary]`,
		"Failed at the model list (GET /models): The selected model is unavailable to this bot right now. Please retry or contact the bot operator. (HTTP 401 invalid_authentication_error)")
	if strings.Contains(tb.html(`body`), llmTestKey) {
		t.Error("the page shows the key")
	}
	if strings.Contains(h.logs.String(), llmTestKey) {
		t.Error("the log holds the key")
	}
}
