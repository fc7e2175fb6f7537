package templates

import (
	"strings"
	"testing"
)

func sampleWorldtreeSettings() WorldtreeSettingsView {
	return WorldtreeSettingsView{
		Configured: true, BaseURL: "https://wt.example/api?<b>ok</b>", DefaultKeySet: true, AdminKeySet: true,
		ClearAdmin: true, Errors: map[string]string{"base_url": "Bad URL", "form": "<script>x</script>"},
	}
}

func sampleWorldtreeView() WorldtreeView {
	return WorldtreeView{
		Configured: true, BaseURL: "https://wt.example",
		Identity:      &WorldtreeIdentity{UserID: "alice", Tier: "user", KeyID: "a1b2", KeyLabel: "phone", Scopes: []string{"conversations.read", "<script>x</script>"}},
		Templates:     []WorldtreeTemplate{{Name: "echo", DefaultModel: "glm5", AllowedModels: []string{"glm5", "glm4"}, PromptMax: "32 KiB"}},
		AgentsError:   "",
		SessionsError: "",
		Agents: []WorldtreeAgent{
			{ID: "mimir", Name: "Mimir", Description: "<script>x</script>", Version: "0.2.0", Capabilities: []string{"kb"},
				Traits:  []KeyValue{{Key: "vibe", Value: "contemplative"}},
				Persona: &WorldtreePersona{PAD: []Stat{{Label: "Pleasure", Value: "0.52", Hint: "baseline 0.50"}}, DominantEmotion: "curiosity", UpdatedAt: "now"}},
			{ID: "domari", Name: "Domari", PersonaNote: "No persona configured."},
			{ID: "muninn", Name: "Muninn", PersonaError: "The key lacks persona.read."},
		},
		Sessions:         []WorldtreeSession{{ID: "s1", Name: "Chat", AgentID: "mimir", Created: "c", LastActive: "l", Archived: true, Tags: []string{"t"}}},
		SessionsFirstURL: "/worldtree", SessionsNextURL: "/worldtree?cursor=abc", ArchivedURL: "/worldtree?archived=1",
	}
}

// TestWorldtreeNavOnlyWhenConfigured: the optional Worldtree item shows when
// switched on, or on its own page, and nowhere else.
func TestWorldtreeNavOnlyWhenConfigured(t *testing.T) {
	tests := []struct {
		name   string
		active string
		show   []string
		want   bool
	}{
		{"off elsewhere", "overview", nil, false},
		{"on elsewhere", "overview", []string{"worldtree"}, true},
		{"off on its own page", "worldtree", nil, true},
		{"unknown optional key ignored", "settings", []string{"nope", "overview"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sampleChrome("admin")
			c.Active, c.ShowOptional = tt.active, tt.show
			out := render(t, PlaceholderPage(c, Placeholder{Title: "x"}))
			if got := strings.Contains(out, `data-testid="nav-worldtree"`); got != tt.want {
				t.Fatalf("nav-worldtree present = %v, want %v", got, tt.want)
			}
			if !strings.Contains(out, `data-testid="nav-settings"`) {
				t.Fatal("regular items must always show")
			}
			// The pre-rendered variant and a fresh render agree.
			if pre, fresh := render(t, navMarkup(c)), render(t, navList(c.Active, shownOptional(c.ShowOptional), c.Pending)); pre != fresh {
				t.Fatalf("pre-rendered nav differs:\n%s\n%s", pre, fresh)
			}
		})
	}
}

func TestWorldtreeSettingsNeverRenderKeys(t *testing.T) {
	tests := []struct {
		name string
		v    WorldtreeSettingsView
		want []string
		not  []string
	}{
		{"unconfigured", WorldtreeSettingsView{Errors: map[string]string{}},
			[]string{"Not set. The API key", `name="default_key"`, `required`},
			[]string{"worldtree-remove", "clear_admin_key", "Set — leave blank"}},
		{"configured", WorldtreeSettingsView{Configured: true, BaseURL: "https://wt.example", DefaultKeySet: true, AdminKeySet: true, ConsumerKeySet: true},
			[]string{"Set — leave blank to keep. The API key", `value="https://wt.example"`, "clear_admin_key", "clear_consumer_key", "worldtree-remove", `autocomplete="new-password"`},
			nil},
		{"ticked clear box survives an error", WorldtreeSettingsView{Configured: true, AdminKeySet: true, ClearAdmin: true,
			Errors: map[string]string{"admin_key": "Either enter a new key or tick clear, not both."}},
			[]string{`name="clear_admin_key" value="1" checked`, "not both"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := render(t, WorldtreeSettingsSection("csrf", tt.v))
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q", w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("has %q", n)
				}
			}
			// Password inputs never carry a value.
			for _, name := range []string{"default_key", "admin_key", "consumer_key"} {
				i := strings.Index(out, `name="`+name+`"`)
				end := i + strings.Index(out[i:], ">")
				if strings.Contains(out[i:end], "value=") {
					t.Errorf("%s input has a value: %s", name, out[i:end])
				}
			}
		})
	}
}

func TestWorldtreePageSections(t *testing.T) {
	out := render(t, WorldtreePage(sampleChrome("admin"), sampleWorldtreeView()))
	for _, w := range []string{"alice", "conversations.read", "echo", "32 KiB", "Mimir", "contemplative", "0.52", "baseline 0.50",
		"curiosity", "No persona configured.", "The key lacks persona.read.", `href="/worldtree?cursor=abc"`, "archived", "Include archived"} {
		if !strings.Contains(out, w) {
			t.Errorf("page lacks %q", w)
		}
	}
	v := sampleWorldtreeView()
	v.Identity, v.IdentityError = nil, "The key lacks \"x\"."
	v.Sessions, v.SessionsError = nil, "cursor rejected"
	out = render(t, WorldtreePage(sampleChrome("admin"), v))
	for _, w := range []string{`data-testid="worldtree-error-identity"`, `data-testid="worldtree-error-sessions"`, "Back to the first page", "Mimir", "echo"} {
		if !strings.Contains(out, w) {
			t.Errorf("page with failed sections lacks %q", w)
		}
	}
	empty := render(t, WorldtreePage(sampleChrome("admin"), WorldtreeView{}))
	if !strings.Contains(empty, "Worldtree is not configured") || !strings.Contains(empty, `href="/settings#worldtree"`) {
		t.Error("unconfigured page lacks the empty state pointing to settings")
	}
}

// TestWorldtreePageUnavailable: when every section failed with one cause the page shows it once
// and no section.
func TestWorldtreePageUnavailable(t *testing.T) {
	v := sampleWorldtreeView()
	v.Unavailable, v.Notice = true, "Could not reach the Worldtree server (connection refused)."
	out := render(t, WorldtreePage(sampleChrome("admin"), v))
	if strings.Count(out, v.Notice) != 1 || !strings.Contains(out, `data-testid="worldtree-notice"`) {
		t.Errorf("the notice is not shown once:\n%s", out)
	}
	for _, section := range []string{"identity", "templates", "agents", "sessions"} {
		if strings.Contains(out, `data-testid="worldtree-`+section+`"`) {
			t.Errorf("section %s shown while Worldtree is unavailable", section)
		}
	}
}

// TestWorldtreeSettingsResult: a failed connection test of the last save shows once above the form.
func TestWorldtreeSettingsResult(t *testing.T) {
	v := WorldtreeSettingsView{Configured: true, BaseURL: "http://127.0.0.1:9", DefaultKeySet: true, Errors: map[string]string{},
		Result: &Flash{Kind: FlashWarning, Message: "Saved, but Worldtree could not be reached: <down>."}}
	out := render(t, WorldtreeSettingsSection("csrf", v))
	if strings.Count(out, "Saved, but Worldtree could not be reached: &lt;down&gt;.") != 1 || !strings.Contains(out, `data-testid="worldtree-result"`) {
		t.Errorf("the result is not shown once, escaped:\n%s", out)
	}
}

// TestWorldtreeSessionItem: a session reads as a title line (its name, or its id without one)
// and a meta line with the id, agent, times and tags.
func TestWorldtreeSessionItem(t *testing.T) {
	tests := []struct {
		name    string
		s       WorldtreeSession
		title   string
		inMeta  []string
		notMeta []string
	}{
		{"named", WorldtreeSession{ID: "s1", Name: "Long <chat>", AgentID: "mimir", Created: "c1", LastActive: "l1", Tags: []string{"t1"}},
			`data-testid="worldtree-session-name">Long &lt;chat&gt;</strong>`, []string{"s1", "mimir", "c1", "l1", "t1"}, nil},
		{"unnamed shows the id as title", WorldtreeSession{ID: "s2", AgentID: "domari"},
			`data-testid="worldtree-session-name">s2</code>`, []string{"domari"}, []string{"s2", "Created", "Last active", "Tags"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := render(t, worldtreeSessionItem(tt.s))
			if !strings.Contains(out, tt.title) {
				t.Errorf("title line lacks %q:\n%s", tt.title, out)
			}
			i := strings.Index(out, `data-testid="worldtree-session-meta"`)
			if i < 0 {
				t.Fatalf("no meta line:\n%s", out)
			}
			meta := out[i:]
			for _, w := range tt.inMeta {
				if !strings.Contains(meta, w) {
					t.Errorf("meta line lacks %q", w)
				}
			}
			for _, n := range tt.notMeta {
				if strings.Contains(meta, n) {
					t.Errorf("meta line has %q", n)
				}
			}
		})
	}
}
