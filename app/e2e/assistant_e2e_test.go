package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app"
)

// TestServeDemoAssistantUsesTheDemoModel: `kimi serve --demo` runs the
// scripted demo model in-process on loopback as the provider: /assistant
// shows "Demo model (scripted, no network)" without any key, and Test
// connection passes against it (model listed, a completion answered).
func TestServeDemoAssistantUsesTheDemoModel(t *testing.T) {
	a := startE2E(t, e2eOptions{})
	c := a.signIn()
	code, body := c.get("/assistant")
	if code != http.StatusOK {
		t.Fatalf("GET /assistant = %d", code)
	}
	for _, want := range []string{"Demo model (scripted, no network)", `data-testid="assistant-model">` + app.DemoModelID + "<",
		"Demo mode: the assistant uses the built-in scripted demo model"} {
		if !strings.Contains(body, want) {
			t.Fatalf("/assistant lacks %q:\n%.2000s", want, body)
		}
	}
	code, _, loc := c.post("/assistant/test", url.Values{})
	if code != http.StatusSeeOther || loc != "/assistant#test" {
		t.Fatalf("POST /assistant/test = %d to %q", code, loc)
	}
	_, body = c.get("/assistant")
	for _, want := range []string{`data-testid="card-assistant-test" data-ok="true"`, "Connection test passed",
		`data-testid="assistant-probe-demo" data-ok="true"`, `data-testid="assistant-calls">1<`} {
		if !strings.Contains(body, want) {
			t.Fatalf("after Test connection /assistant lacks %q:\n%.3000s", want, body)
		}
	}
}
