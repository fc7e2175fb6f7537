package admin

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/modules/hello"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestModulesExplainThemselves: the list and a module's page show the
// spec's description; Restart is offered only for a running module; a
// module that stopped shows "not running" and none of the figures it
// reported while it ran (its health, metrics and goroutines).
func TestModulesExplainThemselves(t *testing.T) {
	p := &probe{}
	h := newHarness(t, withModules(p, false))
	requireRunning(t, h, probeName, hello.Name)
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	p.report(t, sdk.HealthHealthy, "all caught up")
	// The figures while it runs, so their absence below is the fix's.
	page := c.get("/modules/probe")
	wantStatus(t, page, http.StatusOK)
	wantBody(t, page, "all caught up", "queue depth", `data-testid="module-restart"`)
	if err := h.modHost.SetEnabled(context.Background(), probeName, false, "test"); err != nil {
		t.Fatal(err)
	}

	kudosSpec, helloSpec := kudos.Spec(), hello.Spec()
	if kudosSpec.Description == "" || helloSpec.Description == "" {
		t.Fatal("a bundled module has no description")
	}
	for _, tt := range []struct {
		name, url     string
		want, notWant []string
	}{
		{"the list", "/modules",
			[]string{`data-testid="module-desc-` + kudos.Name + `"`, escapeHTML(kudosSpec.Description),
				`data-testid="module-desc-hello"`, escapeHTML(helloSpec.Description),
				`data-testid="module-restart-hello"`, `data-testid="module-not-running-probe"`, `data-testid="module-not-running-` + kudos.Name + `"`},
			[]string{`data-testid="module-restart-probe"`, `data-testid="module-restart-` + kudos.Name + `"`,
				"all caught up", "queue depth", `data-testid="module-goroutines-probe"`}},
		{"a module that never ran", "/modules/" + kudos.Name,
			[]string{`data-testid="module-description"`, escapeHTML(kudosSpec.Description), `data-testid="module-health">not running</dd>`},
			[]string{`data-testid="module-restart"`, "no health reported"}},
		{"a module that stopped", "/modules/probe",
			[]string{`data-testid="module-health">not running</dd>`},
			[]string{`data-testid="module-restart"`, "queue depth", `data-testid="module-goroutines"`, `data-testid="module-description"`}},
		{"a running module", "/modules/hello",
			[]string{`data-testid="module-restart"`, escapeHTML(helloSpec.Description)},
			[]string{"not running"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			page := c.get(tt.url)
			wantStatus(t, page, http.StatusOK)
			wantBody(t, page, tt.want...)
			for _, s := range tt.notWant {
				if strings.Contains(page.body, s) {
					t.Errorf("%s shows %q", tt.url, s)
				}
			}
		})
	}
}

// escapeHTML is s as templ writes it in text.
func escapeHTML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}
