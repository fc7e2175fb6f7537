package admin

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/assistant"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/app/settings"
)

// withRetention wires a real retention job on a real (unstarted, so the
// run stays due) durable scheduler over the harness's store.
func withRetention(t *testing.T) func(*Options) {
	return func(o *Options) {
		sched, err := scheduler.New(scheduler.Options{Store: o.Store, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		r, err := assistant.NewRetention(assistant.RetentionOptions{Store: o.Store, Jobs: sched, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close(context.Background()); _ = sched.Close(context.Background()) })
		o.Retention = r
	}
}

// TestAssistantRetentionCard: /assistant shows the transcript retention
// (30 days by default), when the job runs next and how many conversations
// that run deletes; a lowered setting counts what is now past it, saving
// deletes nothing itself and is audited; 0 says nothing is deleted; a
// value outside 0..3650 or not a number is refused, kept in the field,
// not stored and not audited; without the job the card says so.
func TestAssistantRetentionCard(t *testing.T) {
	h := newHarness(t, withRetention(t))
	h.createAdmin()
	now := time.Now()
	for i, age := range []time.Duration{40 * 24 * time.Hour, 10 * 24 * time.Hour} {
		ms := now.Add(-age).UnixMilli()
		id := i + 1
		for _, q := range []string{
			`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms) VALUES (?1, 10, 20, ?1, 40, ?2, ?2)`,
			`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms)
				VALUES (?1, ?1, 'message', ?1, 40, 10, 20, 'done', ?2)`,
			`INSERT INTO kimi_assistant_messages (conversation_id, turn_id, role, author_id, author_name, content, created_ms) VALUES (?1, ?1, 'user', 40, 'm', 'hello', ?2)`,
		} {
			if _, err := h.st.Writer().Exec(q, id, ms); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := h.newClient()
	c.login(testUser, testPassword)
	tests := []struct {
		name       string
		days       string // "" : only GET the page
		wantStatus int
		want       []string
		stored     int
		audited    bool
	}{
		{"the default", "", http.StatusOK, []string{`data-testid="card-assistant-retention"`, `action="/assistant/retention"`,
			`value="30"`, "for 30 days after a conversation&#39;s last activity", `data-testid="assistant-retention-next"`,
			"deletes the transcript of 1 conversation last active before", "0 to 3650 (default 30)"}, 30, false},
		{"lowered to 5 days", "5", http.StatusSeeOther, []string{"for 5 days after", "deletes the transcripts of 2 conversations last active before",
			"Transcript retention saved"}, 5, true},
		{"0 keeps everything", "0", http.StatusSeeOther, []string{"kept <strong data-testid=\"assistant-retention-current\">for ever</strong>",
			"deletes nothing (transcripts are kept for ever)"}, 0, true},
		{"negative", "-1", http.StatusUnprocessableEntity, []string{form.MsgAssistantRetentionNotSaved, `data-testid="assistant-retention-refused"`,
			"from 0 (for ever) to 3650", `value="-1"`}, 0, false},
		{"too many", "3651", http.StatusUnprocessableEntity, []string{form.MsgAssistantRetentionNotSaved, `value="3651"`}, 0, false},
		{"not a number", "a month", http.StatusUnprocessableEntity, []string{form.MsgAssistantRetentionDays, `value="a month"`}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.auditCount(settings.AuditActionAssistantRetention)
			page := c.get("/assistant")
			if tt.days != "" {
				res := c.post("/assistant/retention", url.Values{form.AssistantRetentionDays: {tt.days}})
				wantStatus(t, res, tt.wantStatus)
				page = res
				if tt.wantStatus == http.StatusSeeOther {
					if loc := res.Header.Get("Location"); loc != "/assistant#retention" {
						t.Errorf("Location = %q", loc)
					}
					page = c.get("/assistant")
				}
			}
			wantBody(t, page, tt.want...)
			if got, err := settings.LoadAssistantRetention(context.Background(), h.st); err != nil || got != tt.stored {
				t.Errorf("stored %d (%v), want %d", got, err, tt.stored)
			}
			if n := h.auditCount(settings.AuditActionAssistantRetention); (n == before+1) != tt.audited || n < before {
				t.Errorf("audit rows %d → %d, audited want %v", before, n, tt.audited)
			}
			var msgs int
			if err := h.st.Reader().QueryRow(`SELECT count(*) FROM kimi_assistant_messages`).Scan(&msgs); err != nil || msgs != 2 {
				t.Errorf("messages after %q = %d (%v): saving must delete nothing", tt.name, msgs, err)
			}
		})
	}

	bare := newHarness(t)
	bare.createAdmin()
	bc := bare.newClient()
	bc.login(testUser, testPassword)
	page := bc.get("/assistant")
	wantBody(t, page, "The retention job is not running on this server")
	if strings.Contains(page.body, `data-testid="assistant-retention-next"`) {
		t.Error("a next run shown without the job")
	}
}

// assistantRetentionScenarios are the retention form's route scenarios:
// refused without a session or CSRF, audited when saved.
var assistantRetentionScenarios = []scenario{
	{name: "assistant retention: anonymous save is refused", method: "POST", url: "/assistant/retention",
		form: url.Values{form.AssistantRetentionDays: {"7"}}, wantStatus: http.StatusUnauthorized, wantNoAudit: true},
	{name: "assistant retention: a save without CSRF changes nothing", method: "POST", url: "/assistant/retention", signedIn: true, noCSRF: true,
		form: url.Values{form.AssistantRetentionDays: {"7"}}, wantStatus: http.StatusForbidden, wantNoAudit: true},
	{name: "assistant retention: a save is stored and audited", method: "POST", url: "/assistant/retention", signedIn: true,
		form: url.Values{form.AssistantRetentionDays: {"7"}}, wantStatus: http.StatusSeeOther, wantLocation: "/assistant#retention",
		wantAudit: []string{settings.AuditActionAssistantRetention}},
}

func TestAssistantRetentionScenarios(t *testing.T) { runScenarios(t, assistantRetentionScenarios) }
