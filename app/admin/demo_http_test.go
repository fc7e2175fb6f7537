package admin

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	demochat "github.com/kimiapp/kimi/app/demo"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

// withDemo runs the server in demo mode over a real fake Discord with the seeded demo guild
// (closed with the harness).
func withDemo(o *Options) {
	f := fakediscord.New(fakediscord.Options{})
	o.Demo = demochat.NewChat(f, f.SeedDemo())
}

// demoVars names the demo guild's ids for a scenario: {general}, {help}, {ada}, {bo}.
func demoVars(t *testing.T, h *harness) {
	t.Helper()
	g, err := h.srv.opts.Demo.DemoGuild(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range g.Channels {
		h.vars[c.Name] = c.ID
	}
	for _, m := range g.Members {
		h.vars[m.Name] = m.ID
	}
}

func demoPost(content string) url.Values {
	return url.Values{form.FieldDemoChannel: {"{general}"}, form.FieldDemoMember: {"{ada}"}, form.FieldDemoContent: {content}}
}

// demoMessages lists the contents of a demo channel's messages.
func demoMessages(t *testing.T, h *harness, channel string) []string {
	t.Helper()
	ms, err := h.srv.opts.Demo.DemoMessages(context.Background(), h.vars[channel], "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Author+": "+m.Content)
	}
	return out
}

var demo = []func(*Options){withDemo}

var demoScenarios = []scenario{
	{name: "demo: anonymous is sent to sign in", method: "GET", url: "/demo", opts: demo,
		wantStatus: http.StatusSeeOther, wantLocation: "/login?next=%2Fdemo"},
	{name: "demo: outside demo mode the page does not exist", method: "GET", url: "/demo", signedIn: true,
		wantStatus: http.StatusNotFound, wantNotContains: []string{`data-testid="demo-banner"`}},
	{name: "demo: outside demo mode nothing is labelled a demo", method: "GET", url: "/", signedIn: true,
		wantStatus: http.StatusOK, wantNotContains: []string{`data-testid="demo-banner"`, `data-testid="nav-demo"`}},
	{name: "demo: every page is labelled, the sign-in page too", method: "GET", url: "/login", opts: demo,
		wantStatus: http.StatusOK, wantContains: []string{`data-testid="demo-banner"`, "nothing reaches the real Discord"}},
	{name: "demo: the overview is labelled and links the demo", method: "GET", url: "/", opts: demo, signedIn: true,
		wantStatus: http.StatusOK, wantContains: []string{`data-testid="demo-banner"`, `data-testid="nav-demo"`}},
	{name: "demo: the chat view lists the channels and opens the first", method: "GET", url: "/demo", opts: demo, signedIn: true,
		wantStatus: http.StatusOK, wantContains: []string{fakediscord.DemoGuildName, `data-testid="demo-channel-general"`,
			`data-testid="demo-channel-help"`, "#welcome", "No messages in #welcome yet.", ">ada</option>", ">bo</option>", ">cy</option>",
			`action="/demo/messages"`, `name="_csrf"`}},
	{name: "demo: an unknown channel is a 404", method: "GET", url: "/demo?channel=42", opts: demo, signedIn: true,
		wantStatus: http.StatusNotFound},
	{name: "demo: a post lands in its channel as the chosen member", method: "POST", url: "/demo/messages", opts: demo, signedIn: true,
		setup: demoVars, form: demoPost("hello <b>world</b>"), wantStatus: http.StatusSeeOther,
		wantAudit: []string{ActionDemoMessagePost},
		check: func(t *testing.T, h *harness, c *client, res *response) {
			if loc := res.Header.Get("Location"); loc != "/demo?as="+h.vars["ada"]+"&channel="+h.vars["general"] {
				t.Fatalf("Location = %q, want the channel's page", loc)
			}
			if got := demoMessages(t, h, "general"); len(got) != 1 || got[0] != "ada: hello <b>world</b>" {
				t.Fatalf("general = %q", got)
			}
			page := c.get("/demo?channel=" + h.vars["general"])
			if !strings.Contains(page.body, "hello &lt;b&gt;world&lt;/b&gt;") || !strings.Contains(page.body, `data-testid="demo-author">ada<`) {
				t.Fatalf("the chat view does not list the message (escaped):\n%s", page.body)
			}
		}},
	{name: "demo: an empty message is refused, nothing posted", method: "POST", url: "/demo/messages", opts: demo, signedIn: true,
		setup: demoVars, form: demoPost("   "), wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"Write a message."},
		wantNoAudit: true,
		check: func(t *testing.T, h *harness, _ *client, _ *response) {
			if got := demoMessages(t, h, "general"); len(got) != 0 {
				t.Fatalf("posted %q", got)
			}
		}},
	{name: "demo: a message over 2000 characters is refused, its text kept", method: "POST", url: "/demo/messages", opts: demo, signedIn: true,
		setup: demoVars, form: demoPost(strings.Repeat("é", 2001)), wantStatus: http.StatusUnprocessableEntity,
		wantContains: []string{"at most 2000 characters", strings.Repeat("é", 50)}, wantNoAudit: true},
	{name: "demo: a member who is not in the demo guild is refused", method: "POST", url: "/demo/messages", opts: demo, signedIn: true,
		setup: demoVars, form: url.Values{form.FieldDemoChannel: {"{general}"}, form.FieldDemoMember: {"900000000000000002"}, form.FieldDemoContent: {"as the bot"}},
		wantStatus: http.StatusUnprocessableEntity, wantContains: []string{"not in the demo guild"}, wantNoAudit: true},
	{name: "demo: outside demo mode a post is a 404", method: "POST", url: "/demo/messages", signedIn: true,
		form: url.Values{form.FieldDemoContent: {"x"}}, wantStatus: http.StatusNotFound, wantNoAudit: true},
}

// TestDemoPages runs the demo scenario table.
func TestDemoPages(t *testing.T) { runScenarios(t, demoScenarios) }
