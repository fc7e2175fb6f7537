package settings

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/store"
)

const (
	llmKey      = "sk-canary-llm-0123456789abcdef"
	llmFallback = "sk-canary-fallback-9876543210"
)

// validAssistant is a complete update against Moonshot.
func validAssistant() AssistantUpdate {
	return AssistantUpdate{BaseURL: " https://api.moonshot.ai/v1/ ", APIKey: KeyUpdate{Value: llmKey + "\n"}, Model: "kimi-test",
		MaxTokens: DefaultAssistantMaxTokens, Timeout: DefaultAssistantTimeout, Thinking: ThinkingDefault}
}

func assistantAudit(t *testing.T, st *store.Store) []string {
	t.Helper()
	rows, _, err := st.ListAudit(context.Background(), store.AuditFilter{Action: AuditActionAssistant, Limit: store.AuditPageMax})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Detail)
	}
	slices.Reverse(out) // oldest first
	return out
}

// secretKeys lists the settings stored as secrets.
func secretKeys(t *testing.T, st *store.Store) []string {
	t.Helper()
	rows, err := st.Reader().QueryContext(context.Background(), `SELECT key FROM kimi_settings WHERE secret ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	return out
}

// TestAssistantDefaults: an empty store gives Moonshot's base URL, 4,096
// output tokens, the default timeout and thinking, no key: not configured.
func TestAssistantDefaults(t *testing.T) {
	st := openSettingsStore(t)
	a, err := LoadAssistant(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if a.Primary.BaseURL != "https://api.moonshot.ai/v1" || a.MaxTokens != 4096 || a.Timeout != DefaultAssistantTimeout ||
		a.Thinking != ThinkingDefault || a.Temperature != nil || a.AllowPrivateNetwork || a.Configured() {
		t.Fatalf("defaults: %+v", a)
	}
}

// TestAssistantSaveMerges: a save stores every field (the keys as secret
// settings), a blank key keeps the stored one, clear removes it; each
// save's audit row names what changed and never a key.
func TestAssistantSaveMerges(t *testing.T) {
	ctx := context.Background()
	st := openSettingsStore(t)
	u := validAssistant()
	temp := 0.6
	u.Temperature, u.ContextWindow, u.AllowPrivateNetwork, u.Thinking = &temp, 262144, true, ThinkingOff
	u.FallbackBaseURL, u.FallbackModel, u.FallbackAPIKey = "http://127.0.0.1:11434/v1", "llama3", KeyUpdate{Value: llmFallback}
	saved, err := SaveAssistant(ctx, st, u, who)
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadAssistant(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(saved) || got.Primary.APIKey != llmKey || got.Primary.BaseURL != "https://api.moonshot.ai/v1" ||
		got.Temperature == nil || *got.Temperature != 0.6 || got.ContextWindow != 262144 || !got.AllowPrivateNetwork ||
		got.Thinking != ThinkingOff || got.Fallback.APIKey != llmFallback || !got.Configured() || !got.HasFallback() {
		t.Fatalf("loaded %+v (saved %+v)", got, saved)
	}
	if keys := secretKeys(t, st); !slices.Equal(keys, []string{SettingAssistantAPIKey, SettingAssistantFallbackAPIKey}) {
		t.Fatalf("secret settings %v, want both API keys", keys)
	}

	// A blank key keeps; the temperature blank is no longer sent.
	u2 := validAssistant()
	u2.APIKey = KeyUpdate{}
	u2.FallbackBaseURL, u2.FallbackModel = "http://127.0.0.1:11434/v1", "llama3"
	if _, err := SaveAssistant(ctx, st, u2, who); err != nil {
		t.Fatal(err)
	}
	got, _ = LoadAssistant(ctx, st)
	if got.Primary.APIKey != llmKey || got.Fallback.APIKey != llmFallback || got.Temperature != nil {
		t.Fatalf("after a blank save: %+v", got)
	}
	// Clear removes the fallback's key; an empty fallback is none.
	u3 := validAssistant()
	u3.APIKey, u3.FallbackAPIKey = KeyUpdate{}, KeyUpdate{Clear: true}
	if _, err := SaveAssistant(ctx, st, u3, who); err != nil {
		t.Fatal(err)
	}
	got, _ = LoadAssistant(ctx, st)
	if got.HasFallback() || got.Fallback.APIKey != "" || got.Primary.APIKey != llmKey {
		t.Fatalf("after clearing the fallback: %+v", got)
	}
	details := assistantAudit(t, st)
	want := []string{
		"model kimi-test; context window 262144; temperature 0.6; thinking off; private-network endpoint on; fallback base URL http://127.0.0.1:11434/v1; fallback model llama3; API key set; fallback API key set",
		"context window none; temperature none; thinking default; private-network endpoint off",
		"fallback base URL none; fallback model none; fallback API key cleared",
	}
	if !slices.Equal(details, want) {
		t.Fatalf("audit details:\n%q\nwant\n%q", details, want)
	}
	for _, d := range details {
		if strings.Contains(d, llmKey) || strings.Contains(d, llmFallback) {
			t.Fatalf("audit leaks a key: %s", d)
		}
	}
}

// TestAssistantLockedFieldsKeepStored: fields the environment sets are not
// submitted; a save keeps their stored values and does not refuse them.
func TestAssistantLockedFieldsKeepStored(t *testing.T) {
	ctx := context.Background()
	st := openSettingsStore(t)
	if _, err := SaveAssistant(ctx, st, validAssistant(), who); err != nil {
		t.Fatal(err)
	}
	u := AssistantUpdate{MaxTokens: 100, Timeout: time.Minute, Locked: AssistantLocks{BaseURL: true, Model: true, APIKey: true},
		APIKey: KeyUpdate{Clear: true}}
	if _, err := SaveAssistant(ctx, st, u, who); err != nil {
		t.Fatal(err)
	}
	// A crafted POST that sends the locked fields anyway changes none.
	crafted := u
	crafted.BaseURL, crafted.Model, crafted.APIKey = "https://evil.example/v1", "crafted", KeyUpdate{Value: "sk-crafted"}
	if _, err := SaveAssistant(ctx, st, crafted, who); err != nil {
		t.Fatal(err)
	}
	got, _ := LoadAssistant(ctx, st)
	if got.Primary != (Backend{BaseURL: "https://api.moonshot.ai/v1", APIKey: llmKey, Model: "kimi-test"}) || got.MaxTokens != 100 {
		t.Fatalf("locked fields changed: %+v", got)
	}
	env := AssistantEnv{Model: "env-model", APIKey: "sk-env"}
	eff := env.Apply(got)
	if eff.Primary.Model != "env-model" || eff.Primary.APIKey != "sk-env" || eff.Primary.BaseURL != got.Primary.BaseURL {
		t.Fatalf("Apply: %+v", eff)
	}
	if env.Locks() != (AssistantLocks{Model: true, APIKey: true}) {
		t.Fatalf("Locks: %+v", env.Locks())
	}
}

// TestAssistantValidation: each bad field gets its own sentence, and
// nothing is stored.
func TestAssistantValidation(t *testing.T) {
	nan := 3.5
	cases := []struct {
		name   string
		mutate func(*AssistantUpdate)
		field  string
		want   string
	}{
		{"blank base URL", func(u *AssistantUpdate) { u.BaseURL = "" }, FieldAssistantBaseURL, "Enter the provider's base URL"},
		{"base URL with credentials", func(u *AssistantUpdate) { u.BaseURL = "https://bob:pw@api.example/v1" }, FieldAssistantBaseURL, "must not contain a user name or password"},
		{"relative base URL", func(u *AssistantUpdate) { u.BaseURL = "api.example/v1" }, FieldAssistantBaseURL, "absolute http:// or https://"},
		{"base URL with query", func(u *AssistantUpdate) { u.BaseURL = "https://api.example/v1?k=1" }, FieldAssistantBaseURL, "query or fragment"},
		{"key with a space", func(u *AssistantUpdate) { u.APIKey.Value = "sk a" }, FieldAssistantAPIKey, "Paste the key alone"},
		{"key and clear", func(u *AssistantUpdate) { u.APIKey.Clear = true }, FieldAssistantAPIKey, "not both"},
		{"model with a space", func(u *AssistantUpdate) { u.Model = "kimi k2" }, FieldAssistantModel, "space"},
		{"context window too small", func(u *AssistantUpdate) { u.ContextWindow = 10 }, FieldAssistantContextWindow, "from 1024"},
		{"max tokens zero", func(u *AssistantUpdate) { u.MaxTokens = 0 }, FieldAssistantMaxTokens, "from 1 to"},
		{"max tokens past the window", func(u *AssistantUpdate) { u.ContextWindow, u.MaxTokens = 8192, 8192 }, FieldAssistantMaxTokens, "smaller than the context window"},
		{"temperature above 2", func(u *AssistantUpdate) { u.Temperature = &nan }, FieldAssistantTemperature, "from 0 to 2"},
		{"timeout too short", func(u *AssistantUpdate) { u.Timeout = time.Second }, FieldAssistantTimeout, "from 10 to 3600 seconds"},
		{"unknown thinking", func(u *AssistantUpdate) { u.Thinking = "maybe" }, FieldAssistantThinking, "default, on or off"},
		{"fallback model without base URL", func(u *AssistantUpdate) { u.FallbackModel = "m" }, FieldAssistantFallbackBaseURL, "fallback's base URL"},
		{"fallback base URL without model", func(u *AssistantUpdate) { u.FallbackBaseURL = "https://openrouter.ai/api/v1" }, FieldAssistantFallbackModel, "fallback's model id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := openSettingsStore(t)
			u := validAssistant()
			tc.mutate(&u)
			_, err := SaveAssistant(context.Background(), st, u, who)
			se, ok := err.(*Error)
			if !ok {
				t.Fatalf("want *Error, got %T %v", err, err)
			}
			if !strings.Contains(se.Fields[tc.field], tc.want) {
				t.Fatalf("field %s: %q, want it to contain %q (all: %v)", tc.field, se.Fields[tc.field], tc.want, se.Fields)
			}
			if strings.Contains(err.Error(), "bob:pw") || strings.Contains(err.Error(), llmKey) {
				t.Fatalf("error repeats a secret: %v", err)
			}
			if a, _ := LoadAssistant(context.Background(), st); a.Primary.APIKey != "" || len(assistantAudit(t, st)) != 0 {
				t.Fatal("a refused save stored something")
			}
		})
	}
}

// TestAssistantNeverPrintsKeys: %v, %+v, %#v and slog show the keys only
// as set.
func TestAssistantNeverPrintsKeys(t *testing.T) {
	a := Assistant{Primary: Backend{BaseURL: "https://api.moonshot.ai/v1", APIKey: llmKey, Model: "m"}, Fallback: Backend{APIKey: llmFallback}}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "settings", a)
	for _, s := range []string{fmt.Sprintf("%v", a), fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a), logged.String()} {
		if strings.Contains(s, llmKey) || strings.Contains(s, llmFallback) {
			t.Fatalf("a key is printed: %s", s)
		}
	}
}

// TestAssistantConfigured: a model and a key make it configured; without
// a key only a private-network (local, keyless) endpoint is.
func TestAssistantConfigured(t *testing.T) {
	cases := []struct {
		name string
		a    Assistant
		want bool
	}{
		{"defaults", DefaultAssistant(), false},
		{"key without model", Assistant{Primary: Backend{BaseURL: DefaultAssistantBaseURL, APIKey: "k"}}, false},
		{"model without key", Assistant{Primary: Backend{BaseURL: DefaultAssistantBaseURL, Model: "m"}}, false},
		{"model and key", Assistant{Primary: Backend{BaseURL: DefaultAssistantBaseURL, APIKey: "k", Model: "m"}}, true},
		{"keyless local endpoint", Assistant{Primary: Backend{BaseURL: "http://127.0.0.1:11434/v1", Model: "m"}, AllowPrivateNetwork: true}, true},
	}
	for _, tc := range cases {
		if got := tc.a.Configured(); got != tc.want {
			t.Errorf("%s: Configured() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAssistantKeyIsNeverCarriedToAnotherHost: a save that points the base
// URL (or the fallback's) at another server while leaving the stored key
// blank is refused on the key's field, and nothing changes; a new path on
// the same server, a new key, or a clear is saved.
func TestAssistantKeyIsNeverCarriedToAnotherHost(t *testing.T) {
	cases := []struct {
		name      string
		edit      func(*AssistantUpdate)
		wantField string // "" = saved
		wantKey   string // the primary key after the save
	}{
		{"same server, another path", func(u *AssistantUpdate) { u.BaseURL = "https://API.moonshot.ai./v2" }, "", llmKey},
		{"same server, default port spelled", func(u *AssistantUpdate) { u.BaseURL = "https://api.moonshot.ai:443/v1" }, "", llmKey},
		{"another host", func(u *AssistantUpdate) { u.BaseURL = "https://collector.example/v1" }, FieldAssistantAPIKey, llmKey},
		{"another port", func(u *AssistantUpdate) { u.BaseURL = "https://api.moonshot.ai:8443/v1" }, FieldAssistantAPIKey, llmKey},
		{"another scheme", func(u *AssistantUpdate) { u.BaseURL = "http://api.moonshot.ai/v1" }, FieldAssistantAPIKey, llmKey},
		{"another host with its key", func(u *AssistantUpdate) {
			u.BaseURL, u.APIKey = "https://collector.example/v1", KeyUpdate{Value: "sk-new-key-for-collector"}
		}, "", "sk-new-key-for-collector"},
		{"another host, key cleared", func(u *AssistantUpdate) {
			u.BaseURL, u.APIKey, u.AllowPrivateNetwork = "http://127.0.0.1:11434/v1", KeyUpdate{Clear: true}, true
		}, "", ""},
		{"the fallback moved", func(u *AssistantUpdate) { u.FallbackBaseURL = "https://collector.example/v1" }, FieldAssistantFallbackAPIKey, llmKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			st := openSettingsStore(t)
			first := validAssistant()
			first.FallbackBaseURL, first.FallbackModel, first.FallbackAPIKey = "https://fallback.example/v1", "m", KeyUpdate{Value: llmFallback}
			if _, err := SaveAssistant(ctx, st, first, who); err != nil {
				t.Fatal(err)
			}
			u := validAssistant()
			u.APIKey = KeyUpdate{}
			u.FallbackBaseURL, u.FallbackModel = "https://fallback.example/v1", "m"
			c.edit(&u)
			_, err := SaveAssistant(ctx, st, u, who)
			got, lerr := LoadAssistant(ctx, st)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if c.wantField != "" {
				var se *Error
				if !errors.As(err, &se) || !strings.Contains(se.Fields[c.wantField], "enter its API key again") {
					t.Fatalf("err = %v, want a refusal on %s", err, c.wantField)
				}
				if got.Primary.BaseURL != "https://api.moonshot.ai/v1" || got.Fallback.BaseURL != "https://fallback.example/v1" {
					t.Fatalf("a refused save changed the base URLs: %q, %q", got.Primary.BaseURL, got.Fallback.BaseURL)
				}
			} else if err != nil {
				t.Fatalf("save: %v", err)
			}
			if got.Primary.APIKey != c.wantKey {
				t.Fatalf("key after the save = %q, want %q", got.Primary.APIKey, c.wantKey)
			}
		})
	}
}
