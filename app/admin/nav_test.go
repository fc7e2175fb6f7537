package admin

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/web/templates"
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

// TestNoBuiltSectionIsMarkedSoon: a navigation entry carries the "soon — Not
// built yet" badge exactly when its page is a placeholder (placeholders);
// every other entry is a built section (its route is registered by its own
// handler) and shows no badge. /tasks kept the badge after it was built.
func TestNoBuiltSectionIsMarkedSoon(t *testing.T) {
	h := newHarness(t, withModules(nil, false))
	h.createAdmin()
	c := h.newClient()
	c.login(testUser, testPassword)
	home := c.get("/")
	wantStatus(t, home, http.StatusOK)
	routes := map[string]bool{}
	for _, r := range h.srv.echo.Routes() {
		if r.Method == http.MethodGet {
			routes[r.Path] = true
		}
	}
	for _, item := range templates.Nav {
		t.Run(item.Label, func(t *testing.T) {
			if !routes[item.Href] {
				t.Fatalf("navigation entry %s links %s, which no GET route serves", item.Label, item.Href)
			}
			placeholder := slices.ContainsFunc(placeholders, func(p placeholderPage) bool { return p.path == item.Href })
			if item.Soon != placeholder {
				t.Errorf("%s: Soon = %v, but its page is a placeholder: %v", item.Label, item.Soon, placeholder)
			}
			entry := regexp.MustCompile(`(?s)<a [^>]*data-testid="nav-` + regexp.QuoteMeta(item.Key) + `".*?</a>`).FindString(home.body)
			if item.Optional && entry == "" {
				return // not shown on this server
			}
			if entry == "" {
				t.Fatalf("no navigation entry nav-%s in the layout", item.Key)
			}
			if badge := strings.Contains(entry, "nav-soon"); badge != placeholder {
				t.Errorf("%s entry shows the soon badge: %v, want %v (placeholder page: %v):\n%s", item.Label, badge, placeholder, placeholder, entry)
			}
		})
	}
}
