package admin

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/settings"
)

// withoutConversationLog leaves the server without the conversation log.
func withoutConversationLog(o *Options) { o.Conversations = nil }

// The seeded conversations' distinctive text: none may reach a page while
// Show transcripts is off.
var seededContent = []string{"SEEDQUESTION-alpha", "SEEDREPLY-alpha", "SEEDARGS-alpha", "SEEDRESULT-alpha",
	"SEEDQUESTION-beta", "SEEDREPLY-beta", "SEEDARGS-beta", "SEEDRESULT-beta"}

// seedTurn records a whole turn of a new conversation at place by owner,
// with its texts marked by tag, one tool call of outcome and the status.
func seedTurn(t *testing.T, log *assistant.Conversations, p assistant.Place, msg, owner uint64, tag string, outcome assistant.Outcome, status string) assistant.Conversation {
	t.Helper()
	ctx := context.Background()
	tr := assistant.Trigger{Place: p, Kind: assistant.KindMessage, MessageID: msg, AuthorID: owner, AuthorName: "Asker", Text: "SEEDQUESTION-" + tag}
	conv, err := log.Open(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := log.BeginTurn(ctx, conv, tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.RecordUsage(ctx, turn, assistant.Usage{Model: "kimi-seed", PromptTokens: 300, CompletionTokens: 45, CachedTokens: 100}); err != nil {
		t.Fatal(err)
	}
	if err := log.RecordToolCall(ctx, turn, assistant.ToolCall{Seq: 1, Tool: "dice.roll", Module: "dice", Outcome: outcome,
		Duration: 12 * time.Millisecond, Arguments: `{"q":"SEEDARGS-` + tag + `"}`, Result: "SEEDRESULT-" + tag}); err != nil {
		t.Fatal(err)
	}
	if err := log.FinishTurn(ctx, turn, assistant.Finish{Status: status, Reply: "SEEDREPLY-" + tag, BotID: 1}); err != nil {
		t.Fatal(err)
	}
	return conv
}

// seedConversations seeds alpha (guild 42 #general by {asker}, the names
// the connected bot knows, done) and beta (guild 77, channel 700, user
// 9001: ids the bot does not know, failed with a tool error), as {alpha}
// and {beta}; and {alphaGuild}… the ids.
func seedConversations(t *testing.T, h *harness) {
	t.Helper()
	proposalGuild(t, h)
	// A member who posts is in the bot's member cache: its name is known.
	asker := h.fake.AddUser(discordgo.User{Username: "asker-alpha"})
	h.fake.AddMember(strconv.Itoa(testGuild), asker.ID)
	if _, err := h.fake.PostMessage(h.vars["general"], asker.ID, "hello"); err != nil {
		t.Fatal(err)
	}
	h.vars["asker"] = asker.ID
	staff, _ := strconv.ParseUint(asker.ID, 10, 64)
	discordWait(t, "the bot caches the member who posted", func() bool { _, _, m := h.bot.Names(testGuild, 0, staff); return m != "" })
	log := assistant.NewConversations(h.st, nil)
	general, _ := strconv.ParseUint(h.vars["general"], 10, 64)
	a := seedTurn(t, log, assistant.Place{GuildID: testGuild, ChannelID: general}, 11, staff, "alpha", assistant.OutcomeOK, assistant.StatusDone)
	b := seedTurn(t, log, assistant.Place{GuildID: 77, ChannelID: 700}, 12, 9001, "beta", assistant.OutcomeFailed, assistant.StatusFailed)
	h.vars["alpha"], h.vars["beta"] = strconv.FormatInt(a.ID, 10), strconv.FormatInt(b.ID, 10)
}

// transcriptsOn turns Show transcripts on in the store.
func transcriptsOn(t *testing.T, h *harness) {
	t.Helper()
	if err := settings.SaveAssistantShowTranscripts(context.Background(), h.st, true, settings.Actor{Name: "setup"}); err != nil {
		t.Fatal(err)
	}
}

func seedWithTranscripts(t *testing.T, h *harness) { seedConversations(t, h); transcriptsOn(t, h) }

var assistantConversationScenarios = []scenario{
	{name: "conversations: signed out, the list redirects to sign-in", method: "GET", url: "/assistant/conversations",
		wantStatus: http.StatusSeeOther, wantLocation: "/login?next=%2Fassistant%2Fconversations"},
	{name: "conversations: signed out, a conversation redirects to sign-in", method: "GET", url: "/assistant/conversations/1",
		wantStatus: http.StatusSeeOther, wantLocation: "/login?next=%2Fassistant%2Fconversations%2F1"},
	{name: "conversations: without the log, 503", method: "GET", url: "/assistant/conversations", signedIn: true,
		opts:       []func(*Options){withoutConversationLog},
		wantStatus: http.StatusServiceUnavailable},
	{name: "conversations: the list names what the bot knows, ids otherwise, and no content", method: "GET", url: "/assistant/conversations",
		signedIn: true, setup: seedConversations, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="conversation-{alpha}"`, `data-testid="conversation-{beta}"`, "Proposals guild", "#general", "asker-alpha",
			`title="42"`, `>77<`, `>700<`, `>9001<`, "dice.roll", "1 failed", `href="/assistant/conversations/{alpha}"`, `data-on="false"`,
			`data-live="/assistant/conversations/events"`},
		wantNotContains: seededContent},
	{name: "conversations: the list shows no content with transcripts on either", method: "GET", url: "/assistant/conversations",
		signedIn: true, setup: seedWithTranscripts, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="conversation-{alpha}"`, `data-on="true"`, "Hide transcripts"}, wantNotContains: seededContent},
	{name: "conversations: a conversation with transcripts off shows the structure only", method: "GET", url: "/assistant/conversations/{alpha}",
		signedIn: true, setup: seedConversations, wantStatus: http.StatusOK,
		wantContains: []string{`data-testid="transcripts-hidden"`, `data-testid="tool-call-dice.roll"`, "dice", "12 ms", "kimi-seed",
			"300 in (100 cached) / 45 out", `data-status="done"`, "asker-alpha", "Proposals guild"},
		wantNotContains: append([]string{`data-testid="message-user"`, "Arguments"}, seededContent...)},
	{name: "conversations: a conversation with transcripts on shows its text and excerpts", method: "GET", url: "/assistant/conversations/{alpha}",
		signedIn: true, setup: seedWithTranscripts, wantStatus: http.StatusOK,
		wantContains:    []string{"SEEDQUESTION-alpha", "SEEDREPLY-alpha", "SEEDARGS-alpha", "SEEDRESULT-alpha", `data-testid="message-user"`},
		wantNotContains: []string{`data-testid="transcripts-hidden"`, "SEEDQUESTION-beta"}},
	{name: "conversations: a failed conversation shows its tool error", method: "GET", url: "/assistant/conversations/{beta}",
		signedIn: true, setup: seedConversations, wantStatus: http.StatusOK,
		wantContains: []string{`data-status="failed"`, "badge-danger\">failed<", `>9001<`}, wantNotContains: seededContent},
	{name: "conversations: an unknown conversation is 404", method: "GET", url: "/assistant/conversations/999999",
		signedIn: true, wantStatus: http.StatusNotFound},
	{name: "conversations: a non-numeric id is 404", method: "GET", url: "/assistant/conversations/abc",
		signedIn: true, wantStatus: http.StatusNotFound},
	{name: "conversations: a refused filter shows its errors and no list", method: "GET",
		url: "/assistant/conversations?guild=x&status=bogus&after=zz", signedIn: true, setup: seedConversations,
		wantStatus:      http.StatusUnprocessableEntity,
		wantContains:    []string{form.MsgConversationsID, form.MsgConversationsStatus, form.MsgConversationsCursor},
		wantNotContains: []string{`data-testid="conversations-table"`, "data-live="}},

	{name: "transcripts: turning them on asks first and changes nothing", method: "POST", url: "/assistant/transcripts", signedIn: true,
		form: url.Values{form.AssistantTranscripts: {"on"}}, wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains: []string{"Show transcripts?", "Yes, show transcripts", `name="transcripts" value="on"`},
		check:        wantTranscripts(false)},
	{name: "transcripts: turning them on once confirmed is saved and audited", method: "POST", url: "/assistant/transcripts", signedIn: true,
		form:       url.Values{form.AssistantTranscripts: {"on"}, form.FieldConfirm: {form.ConfirmYes}},
		wantStatus: http.StatusSeeOther, wantLocation: "/assistant/conversations", wantAudit: []string{settings.AuditActionAssistantTranscripts},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			wantTranscripts(true)(t, h, c, nil)
			wantBody(t, c.get("/assistant/conversations"), "Transcripts are shown")
		}},
	{name: "transcripts: turning them off asks first", method: "POST", url: "/assistant/transcripts", signedIn: true,
		setup: transcriptsOn, form: url.Values{form.AssistantTranscripts: {"off"}}, wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains: []string{"Hide transcripts?", "Yes, hide transcripts"}, check: wantTranscripts(true)},
	{name: "transcripts: turning them off once confirmed is saved and audited", method: "POST", url: "/assistant/transcripts", signedIn: true,
		setup: transcriptsOn, form: url.Values{form.AssistantTranscripts: {"off"}, form.FieldConfirm: {form.ConfirmYes}},
		wantStatus: http.StatusSeeOther, wantAudit: []string{settings.AuditActionAssistantTranscripts}, check: wantTranscripts(false)},
	{name: "transcripts: a switch without CSRF changes nothing", method: "POST", url: "/assistant/transcripts", signedIn: true, noCSRF: true,
		form:       url.Values{form.AssistantTranscripts: {"on"}, form.FieldConfirm: {form.ConfirmYes}},
		wantStatus: http.StatusForbidden, wantNoAudit: true, check: wantTranscripts(false)},
	{name: "transcripts: a bad value is refused", method: "POST", url: "/assistant/transcripts", signedIn: true,
		form:       url.Values{form.AssistantTranscripts: {"maybe"}, form.FieldConfirm: {form.ConfirmYes}},
		wantStatus: http.StatusUnprocessableEntity, wantNoAudit: true, check: wantTranscripts(false)},

	{name: "delete: asks first and deletes nothing", method: "POST", url: "/assistant/conversations/{alpha}/delete", signedIn: true,
		setup: seedConversations, wantStatus: http.StatusOK, wantNoAudit: true,
		wantContains: []string{"Delete this conversation?", "Yes, delete the conversation", "The usage counts (tokens, turns) stay."},
		check:        wantConversations("{alpha}", "{beta}")},
	{name: "delete: once confirmed deletes exactly that conversation, audited, usage kept", method: "POST",
		url: "/assistant/conversations/{alpha}/delete", signedIn: true,
		setup: func(t *testing.T, h *harness) {
			seedConversations(t, h)
			seedUsage(t, h)
			// The turns' own roll-up rows and the seeded one: none may go.
			var n int
			if err := h.st.Reader().QueryRow(`SELECT count(*) FROM kimi_assistant_usage`).Scan(&n); err != nil || n < 1 {
				t.Fatalf("usage rows before = %d (%v)", n, err)
			}
			h.vars["usageRows"] = strconv.Itoa(n)
		},
		form:       url.Values{form.FieldConfirm: {form.ConfirmYes}},
		wantStatus: http.StatusSeeOther, wantLocation: "/assistant/conversations", wantAudit: []string{assistant.AuditActionConversationDelete},
		check: func(t *testing.T, h *harness, c *client, _ *response) {
			wantConversations("{beta}")(t, h, c, nil)
			wantBody(t, c.get("/assistant/conversations"), "Conversation deleted.")
			var n int
			if err := h.st.Reader().QueryRow(`SELECT count(*) FROM kimi_assistant_usage`).Scan(&n); err != nil || strconv.Itoa(n) != h.vars["usageRows"] {
				t.Errorf("usage rows = %d (%v), want all %s kept", n, err, h.vars["usageRows"])
			}
			wantStatus(t, c.get("/assistant/conversations/"+h.vars["alpha"]), http.StatusNotFound)
		}},
	{name: "delete: without CSRF deletes nothing", method: "POST", url: "/assistant/conversations/{alpha}/delete", signedIn: true, noCSRF: true,
		setup: seedConversations, form: url.Values{form.FieldConfirm: {form.ConfirmYes}},
		wantStatus: http.StatusForbidden, wantNoAudit: true, check: wantConversations("{alpha}", "{beta}")},
	{name: "delete: an unknown conversation is 404", method: "POST", url: "/assistant/conversations/999999/delete", signedIn: true,
		form: url.Values{form.FieldConfirm: {form.ConfirmYes}}, wantStatus: http.StatusNotFound, wantNoAudit: true},
}

// seedUsage writes one usage roll-up row (what a delete must leave).
func seedUsage(t *testing.T, h *harness) {
	t.Helper()
	err := h.st.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO kimi_assistant_usage (day, guild_id, user_id, model, prompt_tokens, turns) VALUES ('2026-01-02', 42, ?, 'kimi-seed', 300, 1)`, h.vars["asker"])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func wantTranscripts(want bool) func(t *testing.T, h *harness, _ *client, _ *response) {
	return func(t *testing.T, h *harness, _ *client, _ *response) {
		t.Helper()
		on, err := settings.LoadAssistantShowTranscripts(context.Background(), h.st)
		if err != nil || on != want {
			t.Errorf("Show transcripts = %v (%v), want %v", on, err, want)
		}
	}
}

// wantConversations checks exactly the conversations ids ({name}s) exist.
func wantConversations(ids ...string) func(t *testing.T, h *harness, _ *client, _ *response) {
	return func(t *testing.T, h *harness, _ *client, _ *response) {
		t.Helper()
		rows, err := h.st.Reader().Query(`SELECT id FROM kimi_assistant_conversations ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			got = append(got, strconv.FormatInt(id, 10))
		}
		var want []string
		for _, id := range ids {
			want = append(want, h.expand(id))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("conversations = %v, want %v", got, want)
		}
	}
}

func TestAssistantConversationsHTTP(t *testing.T) { runScenarios(t, assistantConversationScenarios) }

// TestShowTranscriptsFollowsItsSave: the server keeps Show transcripts as
// it last read or saved it, so a switch saved after a page was read with
// the other value shows (or hides) the text at the very next request.
func TestShowTranscriptsFollowsItsSave(t *testing.T) {
	h := newHarness(t)
	h.createAdmin()
	seedConversations(t, h)
	c := h.newClient()
	c.login(testUser, testPassword)
	page := "/assistant/conversations/" + h.vars["alpha"]
	for _, step := range []struct {
		on   string
		want bool
	}{{"", false}, {"on", true}, {"off", false}, {"on", true}} {
		if step.on != "" {
			res := c.post("/assistant/transcripts", url.Values{form.AssistantTranscripts: {step.on}, form.FieldConfirm: {form.ConfirmYes}})
			wantStatus(t, res, http.StatusSeeOther)
		}
		res := c.get(page)
		wantStatus(t, res, http.StatusOK)
		if got := strings.Contains(res.body, "SEEDQUESTION-alpha"); got != step.want {
			t.Errorf("after switching %q: the question shown = %v, want %v", step.on, got, step.want)
		}
	}
}
