package admin

import (
	"net/http"
	"testing"

	demochat "github.com/kimiapp/kimi/app/demo"
	"github.com/kimiapp/kimi/app/discord/fakediscord"
)

var demoLinkScenarios = []scenario{
	{name: "demo: ?channel= takes a channel's name", method: "GET", url: "/demo?channel=general", opts: demo, signedIn: true,
		setup: demoVars, wantStatus: http.StatusOK, wantContains: []string{"No messages in #general yet.", "Send to #general", `value="{general}"`}},
	{name: "demo: ?channel= takes a #name too", method: "GET", url: "/demo?channel=%23help", opts: demo, signedIn: true,
		wantStatus: http.StatusOK, wantContains: []string{"No messages in #help yet."}},
	{name: "demo: an unknown name is a 404", method: "GET", url: "/demo?channel=nowhere", opts: demo, signedIn: true,
		wantStatus: http.StatusNotFound},
	{name: "demo: with no commands it links to the modules", method: "GET", url: "/demo", opts: demo, signedIn: true,
		wantStatus: http.StatusOK, wantContains: []string{`data-testid="demo-no-commands"`, `href="/modules" data-testid="demo-no-commands-modules"`}},
	{name: "demo: each message is an anchor", method: "GET", url: "/demo?channel=general", opts: demo, signedIn: true,
		setup: func(t *testing.T, h *harness) {
			demoVars(t, h)
			if err := h.srv.opts.Demo.PostAsMember(t.Context(), h.vars["general"], h.vars["ada"], "anchored"); err != nil {
				t.Fatal(err)
			}
			ms, err := h.srv.opts.Demo.DemoMessages(t.Context(), h.vars["general"], "")
			if err != nil || len(ms) != 1 {
				t.Fatalf("messages = %v, %v", ms, err)
			}
			h.vars["msg"] = ms[0].ID
		},
		wantStatus: http.StatusOK, wantContains: []string{`id="demo-message-{msg}"`, "anchored"}},
}

// TestDemoLinks runs the demo's link scenarios.
func TestDemoLinks(t *testing.T) { runScenarios(t, demoLinkScenarios) }

// TestMessageLink: a message's "Open in Discord" link goes to discord.com,
// and in demo mode to /demo at the message's channel and message.
func TestMessageLink(t *testing.T) {
	f := fakediscord.New(fakediscord.Options{})
	t.Cleanup(f.Close)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"discord", Options{}, "https://discord.com/channels/42/100/7"},
		{"demo", Options{Demo: demochat.NewChat(f, f.SeedDemo())}, "/demo?channel=100#demo-message-7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (&Server{opts: tc.opts}).messageLink(42, 100, 7); got != tc.want {
				t.Fatalf("messageLink = %q, want %q", got, tc.want)
			}
		})
	}
}
