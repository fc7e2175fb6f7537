package admin

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestNavigationSections: the shared layout links every section the issue
// names — Overview, Modules, Proposals, Results, Tasks, Discord, Audit,
// Settings — and each link opens a real page in that layout (the later
// sections say what they will hold), never a 404 or an error page.
func TestNavigationSections(t *testing.T) {
	h := newHarness(t, withModules(nil, false))
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	home := c.get("/")
	wantStatus(t, home, http.StatusOK)
	nav := regexp.MustCompile(`(?s)<nav.*?</nav>`).FindString(home.body)
	if nav == "" {
		t.Fatal("no <nav> in the layout")
	}
	sections := []struct{ label, href, want string }{
		{"Overview", "/", "Version"},
		{"Guilds", "/guilds", "Add a guild"},
		{"Modules", "/modules", "The modules compiled into this build"},
		{"Proposals", "/proposals", "Configuration changes waiting for your approval"},
		{"Results", "/results", "Scheduled results published"},
		{"Tasks", "/tasks", "Scheduled work and its runs"},
		{"Discord", "/discord", "connection to Discord"},
		{"Audit", "/audit", "Audit log"},
		{"Settings", "/settings", "Change password"},
	}
	for _, s := range sections {
		t.Run(s.label, func(t *testing.T) {
			if !strings.Contains(nav, `href="`+s.href+`"`) || !strings.Contains(nav, s.label) {
				t.Fatalf("navigation lacks %s (%s):\n%s", s.label, s.href, nav)
			}
			res := c.get(s.href)
			wantStatus(t, res, http.StatusOK)
			wantBody(t, res, s.want, `aria-current="page"`)
			if !strings.Contains(res.body, "<nav") {
				t.Error("page is not in the shared layout")
			}
		})
	}
}
