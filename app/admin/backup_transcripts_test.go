package admin

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/store"
)

// TestBackupDownloadWithoutTranscripts: the backup card says a backup
// without secrets still holds the transcripts and offers a checkbox; ticked,
// either download's database holds no message and no tool-call excerpt
// (opened and queried, and by byte search) while the turn and tool-call rows
// stay; unticked, the transcripts are there.
func TestBackupDownloadWithoutTranscripts(t *testing.T) {
	const (
		question = "admin-backup-question-text-61d7"
		reply    = "admin-backup-reply-text-2f8c"
		args     = `{"q":"admin-backup-arguments-90ab"}`
		result   = "admin-backup-result-excerpt-c4d3"
	)
	h := newHarness(t)
	h.createAdmin()
	ctx := context.Background()
	if err := h.st.Write(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms)
				VALUES (1, 10, 20, 30, 40, 1000, 2000)`,
			`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms)
				VALUES (1, 1, 'message', 30, 40, 10, 20, 'done', 1000)`,
			`INSERT INTO kimi_assistant_messages (conversation_id, turn_id, role, author_id, author_name, content, created_ms)
				VALUES (1, 1, 'user', 40, 'arthur', '` + question + `', 1000), (1, 1, 'assistant', 0, 'Kimi', '` + reply + `', 2000)`,
			`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, outcome, arguments, result, created_ms)
				VALUES (1, 1, 'search', 'ok', '` + args + `', '` + result + `', 1500)`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c := h.newClient()
	c.login(testUser, testPassword)
	page := c.get("/settings")
	wantStatus(t, page, http.StatusOK)
	wantBody(t, page, "A backup without secrets still holds the assistant's transcripts",
		`name="`+form.FieldBackupTranscripts+`" value="`+form.BackupTranscriptsOmit+`"`, `data-testid="backup-without-transcripts"`)

	omit := url.Values{form.FieldBackupTranscripts: {form.BackupTranscriptsOmit}}
	both := url.Values{form.FieldBackupTranscripts: {form.BackupTranscriptsOmit}, form.FieldBackupSecrets: {form.BackupSecretsOmit}}
	tests := []struct {
		name          string
		form          url.Values
		transcriptsIn bool
		filename      string
		detail        string
	}{
		{"full", nil, true, `kimi-backup-\d{8}T\d{6}Z\.db`, "full backup (holds the secrets: Worldtree and model-provider keys, the Discord token), holds the assistant's transcripts"},
		{"without secrets", url.Values{form.FieldBackupSecrets: {form.BackupSecretsOmit}}, true,
			`kimi-backup-\d{8}T\d{6}Z-without-secrets\.db`, "backup without secrets, holds the assistant's transcripts"},
		{"without transcripts", omit, false, `kimi-backup-\d{8}T\d{6}Z-without-transcripts\.db`,
			"full backup (holds the secrets: Worldtree and model-provider keys, the Discord token), without transcripts"},
		{"without both", both, false, `kimi-backup-\d{8}T\d{6}Z-without-secrets-without-transcripts\.db`,
			"backup without secrets, without transcripts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := c.post("/settings/backup", tt.form)
			wantStatus(t, res, http.StatusOK)
			cd := res.Header.Get("Content-Disposition")
			if !regexp.MustCompile(`\Aattachment; filename="` + tt.filename + `"\z`).MatchString(cd) {
				t.Errorf("Content-Disposition = %q", cd)
			}
			for _, s := range []string{question, reply, args, result} {
				if strings.Contains(res.body, s) != tt.transcriptsIn {
					t.Errorf("%q in the download: %v, want %v", s, !tt.transcriptsIn, tt.transcriptsIn)
				}
			}
			var detail string
			if err := h.st.Reader().QueryRowContext(ctx, `SELECT detail FROM kimi_audit_log WHERE action = ? ORDER BY id DESC LIMIT 1`,
				ActionBackupDownload).Scan(&detail); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(detail, tt.detail) {
				t.Errorf("audit detail = %q, want it to start with %q", detail, tt.detail)
			}
			p := filepath.Join(t.TempDir(), "dl.db")
			if err := os.WriteFile(p, []byte(res.body), 0o600); err != nil {
				t.Fatal(err)
			}
			cp, err := store.Open(ctx, p, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer cp.Close()
			var msgs, excerpts, turns, calls int
			if err := cp.Reader().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM kimi_assistant_messages),
				(SELECT count(*) FROM kimi_assistant_tool_calls WHERE arguments != '' OR result != ''),
				(SELECT count(*) FROM kimi_assistant_turns), (SELECT count(*) FROM kimi_assistant_tool_calls)`).
				Scan(&msgs, &excerpts, &turns, &calls); err != nil {
				t.Fatal(err)
			}
			wantMsgs, wantExcerpts := 0, 0
			if tt.transcriptsIn {
				wantMsgs, wantExcerpts = 2, 1
			}
			if msgs != wantMsgs || excerpts != wantExcerpts || turns != 1 || calls != 1 {
				t.Errorf("download holds %d messages, %d excerpts, %d turns, %d tool calls; want %d, %d, 1, 1",
					msgs, excerpts, turns, calls, wantMsgs, wantExcerpts)
			}
		})
	}
	// The live database keeps its transcripts.
	var n int
	if err := h.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_assistant_messages`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("live messages after the downloads = %d, %v", n, err)
	}
}
