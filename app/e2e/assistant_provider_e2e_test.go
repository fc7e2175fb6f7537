package e2e

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/llm"
	"github.com/kimiapp/kimi/app/llm/llmfake"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/hello"
	"github.com/kimiapp/kimi/modules/sdk"
)

// e2eProviderKey is the configured provider's API key: distinctive, so a
// byte search finds every copy of it.
const e2eProviderKey = "sk-e2e-SECRET-4f9a0c61d2b7e8a5"

// e2eProviderModel is the model the operator picks.
const e2eProviderModel = "e2e-model"

// TestE2EConfiguredProviderRetriesOnceAndKeepsItsKey is the appliance with
// a provider configured as an operator does it — the /assistant form of
// the signed-in admin: a base URL (a fake model on loopback, the
// private-network switch on, as for a local Ollama), an API key and a
// model — so the assistant's turns run through the real llm.Chain and the
// egress transport, not the bare demo model. A turn with a tool call
// answers; a 429 without Retry-After on every request is tried twice (the
// one retry after llm.RetryDelay) and a 429 with Retry-After once (the
// policy fails over at once, and there is no fallback), and the member
// gets the busy message each time. Then the key is hunted for everywhere
// the appliance writes: it is in every request's Authorization header the
// fake model received, and nowhere else — not in a request body, serve's
// log, an admin page or live fragment, a Discord request, a database row
// outside kimi_settings (the audit rows included) or the backup without
// secrets.
func TestE2EConfiguredProviderRetriesOnceAndKeepsItsKey(t *testing.T) {
	prov := llmfake.New()
	t.Cleanup(prov.Close) // after serve stops (cleanups run last first)
	prov.SetAPIKey(e2eProviderKey)
	prov.SetModels(llmfake.ModelEntry{ID: e2eProviderModel, OwnedBy: "e2e"})
	a := startE2E(t, e2eOptions{configuredProvider: true, specs: []sdk.Spec{hello.Spec()}, modules: hello.Name,
		docs: map[guildcfg.Target]string{guildcfg.GuildTarget(e2eID(t, e2eGuild)): e2eGuildDoc}})
	c := a.signIn()
	a.waitConnected(c)

	// The operator saves the provider on /assistant.
	c.get("/assistant")
	code, body, loc := c.post("/assistant", url.Values{
		form.AssistantBaseURL: {prov.URL()}, form.AssistantAPIKey: {e2eProviderKey}, form.AssistantModel: {e2eProviderModel},
		form.AssistantPrivateNetwork: {"1"}, form.AssistantMaxTokens: {"1024"}, form.AssistantTimeout: {"60"},
		form.AssistantThinking: {"default"},
	})
	if code != http.StatusSeeOther || loc != "/assistant" {
		t.Fatalf("POST /assistant = %d to %q:\n%.3000s", code, loc, body)
	}
	c.waitPage("the provider configured", "/assistant", `data-testid="assistant-state" data-configured="true"`)

	t.Run("a turn with a tool call", func(t *testing.T) {
		const id = "call_greet"
		prov.SetSteps(
			llmfake.Step{Match: llmfake.Match{ToolResultFor: id}, Plan: llmfake.Text("I greeted you.")},
			llmfake.Step{Match: llmfake.Match{Contains: "greet me", Model: e2eProviderModel}, Plan: llmfake.ToolCall(id, hello.ToolGreet, `{}`)},
		)
		before := len(prov.Requests())
		a.botAnswer(a.mention("greet me").ID, "I greeted you.")
		reqs := completions(prov.Requests()[before:])
		if len(reqs) != 2 {
			t.Fatalf("the provider got %d completions, want 2 (the call, its result)", len(reqs))
		}
		if res, ok := toolResult(reqs[1], id); !ok || !strings.Contains(res, "Hello, Ann!") {
			t.Fatalf("the tool result = %q (found %v), want hello_member's greeting", res, ok)
		}
	})

	// The chain counts failed attempts per backend: the success above
	// reset them; the first case's two make the second's one the third in
	// a row, which starts the cooldown (still one request, still busy).
	for _, tc := range []struct {
		name, retryAfter string
		requests         int
	}{
		{"429 without Retry-After: one retry", "", 2},
		{"429 with Retry-After: no retry (no fallback to fail over to)", "1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prov.SetSteps(llmfake.Step{Repeat: true, Plan: llmfake.RateLimited(tc.retryAfter)})
			before := len(prov.Requests())
			got := a.botAnswer(a.mention("are you there? "+tc.name).ID, llm.UserMessage(llm.OutcomeBusy))
			if strings.Contains(got.Content, "rate limit") {
				t.Fatalf("answer = %q, want only the scrubbed busy message", got.Content)
			}
			if n := len(completions(prov.Requests()[before:])); n != tc.requests {
				t.Fatalf("the provider got %d completions for the turn, want %d", n, tc.requests)
			}
		})
	}
	if !strings.Contains(a.Log(), "model backend failed; retrying once") {
		t.Fatalf("serve's log has no retry warning:\n%s", a.Log())
	}

	// Where the key must be: every request the fake model received.
	all := prov.Requests()
	if len(completions(all)) < 5 {
		t.Fatalf("the provider got %d completions, want at least 5", len(completions(all)))
	}
	for i, r := range all {
		if got := r.Header.Get("Authorization"); got != "Bearer "+e2eProviderKey {
			t.Fatalf("request %d (%s %s) Authorization = %q, want the bearer key", i, r.Method, r.Path, got)
		}
		if bytes.Contains(r.Raw, []byte(e2eProviderKey)) {
			t.Fatalf("request %d (%s %s) carries the key in its body", i, r.Method, r.Path)
		}
		for k, vs := range r.Header {
			if k != "Authorization" && strings.Contains(strings.Join(vs, "\n"), e2eProviderKey) {
				t.Fatalf("request %d carries the key in its %s header", i, k)
			}
		}
	}

	t.Run("not on an admin page or live fragment", func(t *testing.T) {
		pages := c.crawl("/")
		for _, p := range []string{"/", "/assistant", "/settings", "/audit", "/modules", "/modules/" + hello.Name,
			"/discord", "/guilds", "/guilds/" + e2eGuild, "/demo", "/tasks", "/results", "/proposals"} {
			if _, ok := pages[p]; !ok {
				t.Errorf("the crawl did not reach %s (reached %d pages)", p, len(pages))
			}
		}
		for p, b := range pages {
			if strings.Contains(b, e2eProviderKey) {
				t.Errorf("%s shows the key", p)
			}
		}
		if !strings.Contains(pages["/assistant"], e2eProviderModel) {
			t.Fatalf("/assistant does not show the model (the crawl read something else):\n%.2000s", pages["/assistant"])
		}
	})

	t.Run("not in a Discord request", func(t *testing.T) {
		for _, r := range a.Discord().Requests() {
			if bytes.Contains(r.Body, []byte(e2eProviderKey)) || strings.Contains(fmt.Sprint(r.Header, r.Query), e2eProviderKey) {
				t.Fatalf("Discord got the key: %s %s", r.Method, r.Path)
			}
		}
	})

	t.Run("in the full backup only", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			form   url.Values
			holdIt bool
		}{
			{"full", url.Values{}, true},
			{"without secrets", url.Values{form.FieldBackupSecrets: {form.BackupSecretsOmit}}, false},
		} {
			c.get("/settings")
			code, b, _ := c.post("/settings/backup", tc.form)
			if code != http.StatusOK || !strings.HasPrefix(b, "SQLite format 3\x00") {
				t.Fatalf("%s backup: %d, %d bytes", tc.name, code, len(b))
			}
			if strings.Contains(b, e2eProviderKey) != tc.holdIt {
				t.Fatalf("the %s backup holds the key: %v, want %v", tc.name, !tc.holdIt, tc.holdIt)
			}
		}
	})

	a.Stop()
	t.Run("not in serve's log", func(t *testing.T) {
		for name, out := range map[string]string{"stderr": a.Log(), "stdout": a.Log()} {
			if strings.Contains(out, e2eProviderKey) {
				t.Fatalf("serve's %s has the key:\n%s", name, out)
			}
		}
		if !strings.Contains(a.Log(), "msg=\"database checkpointed and closed\"") {
			t.Fatalf("serve's log is not the whole run's:\n%s", a.Log())
		}
	})
	t.Run("not in a database row but its setting", func(t *testing.T) {
		st, err := store.Open(context.Background(), filepath.Join(a.DataDir(), config.DBFile), store.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		rows := dumpRows(t, st.Reader())
		var setting, audits int
		for _, r := range rows {
			if r.table == "kimi_audit_log" && strings.Contains(r.text, settings.AuditActionAssistant) {
				audits++
			}
			if !strings.Contains(r.text, e2eProviderKey) {
				continue
			}
			if r.table == "kimi_settings" && strings.Contains(r.text, settings.SettingAssistantAPIKey) {
				setting++
				continue
			}
			t.Errorf("%s has the key: %.300s", r.table, r.text)
		}
		if setting != 1 || audits != 1 {
			t.Fatalf("the key's setting rows = %d, the save's audit rows = %d; want 1 and 1", setting, audits)
		}
	})
}

// completions are the chat completions among the requests.
func completions(reqs []llmfake.Recorded) []llmfake.Recorded {
	return slices.DeleteFunc(slices.Clone(reqs), func(r llmfake.Recorded) bool { return r.Path != "/v1/chat/completions" })
}

var (
	e2eHref = regexp.MustCompile(`href="(/[^"]*)"`)
	e2eLive = regexp.MustCompile(`data-live="(/[^"]+)"`)
)

// crawl reads every admin page reachable from the start pages by the
// links the pages show (not /static), and the first fragment of every
// live region they hold, keyed by address; a page that is not 200 fails.
func (c *e2eClient) crawl(start ...string) map[string]string {
	c.a.t.Helper()
	seen := map[string]string{}
	queue := slices.Clone(start)
	for len(queue) > 0 && len(seen) < 500 {
		p := queue[0]
		queue = queue[1:]
		if _, ok := seen[p]; ok || strings.HasPrefix(p, "/static/") {
			continue
		}
		code, body := c.get(p)
		if code != http.StatusOK {
			c.a.t.Fatalf("GET %s = %d", p, code)
		}
		seen[p] = body
		for _, m := range e2eHref.FindAllStringSubmatch(body, -1) {
			queue = append(queue, html.UnescapeString(m[1]))
		}
		for _, m := range e2eLive.FindAllStringSubmatch(body, -1) {
			live := html.UnescapeString(m[1])
			if _, ok := seen[live]; !ok {
				seen[live] = c.firstFragment(live)
			}
		}
	}
	return seen
}

// firstFragment is the first event a live region's stream sends.
func (c *e2eClient) firstFragment(path string) string {
	c.a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.a.URL()+path, nil)
	if err != nil {
		c.a.t.Fatal(err)
	}
	res, err := c.HTTPClient().Do(req)
	if err != nil {
		c.a.t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		c.a.t.Fatalf("GET %s = %d", path, res.StatusCode)
	}
	var ev strings.Builder
	br := bufio.NewReader(res.Body)
	for {
		line, err := br.ReadString('\n')
		if strings.TrimRight(line, "\r\n") == "" && ev.Len() > 0 {
			return ev.String()
		}
		ev.WriteString(line)
		if err == io.EOF {
			return ev.String()
		}
		if err != nil {
			c.a.t.Fatalf("read %s: %v", path, err)
		}
	}
}

// dumpedRow is one database row, its columns as text.
type dumpedRow struct{ table, text string }

// dumpRows reads every row of every table.
func dumpRows(t *testing.T, db *sql.DB) []dumpedRow {
	t.Helper()
	names, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for names.Next() {
		var n string
		if err := names.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	names.Close()
	var out []dumpedRow
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for i, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%s=%v ", cols[i], v)
			}
			out = append(out, dumpedRow{table: table, text: b.String()})
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return out
}
