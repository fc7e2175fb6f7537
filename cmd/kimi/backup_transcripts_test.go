package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/store"
)

// Transcript text seeded into the database; each must be absent from a
// backup written with --without-transcripts.
const (
	cliTranscriptQuestion = "what is the airspeed of an unladen swallow 7c1e"
	cliTranscriptReply    = "african or european swallow reply 93fd"
	cliToolArguments      = `{"query":"swallow-arguments-4b2a"}`
	cliToolResult         = "swallow-result-excerpt-d05e"
)

// seedTranscriptSQL is one conversation with a turn, its two messages and a
// tool call with both excerpts.
var seedTranscriptSQL = []string{
	`INSERT INTO kimi_assistant_conversations (id, guild_id, channel_id, root_message_id, owner_id, created_ms, updated_ms)
		VALUES (1, 10, 20, 30, 40, 1000, 2000)`,
	`INSERT INTO kimi_assistant_turns (id, conversation_id, trigger_kind, trigger_message_id, user_id, guild_id, channel_id, status, started_ms, prompt_tokens)
		VALUES (1, 1, 'message', 30, 40, 10, 20, 'done', 1000, 77)`,
	`INSERT INTO kimi_assistant_messages (conversation_id, turn_id, role, author_id, author_name, content, created_ms)
		VALUES (1, 1, 'user', 40, 'arthur', '` + cliTranscriptQuestion + `', 1000),
		       (1, 1, 'assistant', 0, 'Kimi', '` + cliTranscriptReply + `', 2000)`,
	`INSERT INTO kimi_assistant_tool_calls (turn_id, seq, tool, outcome, arguments, result, created_ms)
		VALUES (1, 1, 'search', 'ok', '` + cliToolArguments + `', '` + cliToolResult + `', 1500)`,
}

// TestBackupWithoutTranscripts: `kimi backup -h` says a backup without
// secrets still holds the transcripts; --without-transcripts (alone or with
// --without-secrets) writes a copy whose database holds no message and no
// tool-call excerpt (queried, and by byte search), while the turn and tool
// call rows stay; without the flag they are all there.
func TestBackupWithoutTranscripts(t *testing.T) {
	dataDir, env := newDataDir(t)
	const key = "wt-live-key-transcripts-5e6f7a8b"
	st := openDB(t, dataDir)
	ctx := context.Background()
	if err := st.Write(ctx, func(tx *sql.Tx) error {
		for _, q := range seedTranscriptSQL {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return store.SetSecretSettingTx(ctx, tx, "worldtree.default_key", key)
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	help := runKimi(t, env, "", "backup", "-h")
	for _, w := range []string{"still holds the assistant's transcripts", "-without-transcripts"} {
		if !strings.Contains(help.stdout, w) {
			t.Errorf("kimi backup -h lacks %q:\n%s", w, help.stdout)
		}
	}
	texts := []string{cliTranscriptQuestion, cliTranscriptReply, cliToolArguments, cliToolResult}
	tests := []struct {
		name           string
		flags          []string
		transcriptsIn  bool
		keyIn          bool
		stdout         string
		auditActionsIn []string
	}{
		{"full", nil, true, true, "holds the assistant's transcripts", nil},
		{"without secrets", []string{"--without-secrets"}, true, false, "without secrets, holds the assistant's transcripts",
			[]string{store.ActionBackupWithoutSecrets}},
		{"without transcripts", []string{"--without-transcripts"}, false, true, "without transcripts",
			[]string{store.ActionBackupWithoutTranscripts}},
		{"without both", []string{"--without-secrets", "--without-transcripts"}, false, false, "without secrets, without transcripts",
			[]string{store.ActionBackupWithoutSecrets, store.ActionBackupWithoutTranscripts}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "copy.db")
			res := runKimi(t, env, "", append(append([]string{"backup"}, tt.flags...), dest)...)
			if res.code != 0 || !strings.Contains(res.stdout, tt.stdout) {
				t.Fatalf("backup %v: exit %d, want %q in stdout\n%s%s", tt.flags, res.code, tt.stdout, res.stdout, res.stderr)
			}
			raw, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range texts {
				if bytes.Contains(raw, []byte(s)) != tt.transcriptsIn {
					t.Errorf("%q in the file's bytes: %v, want %v", s, !tt.transcriptsIn, tt.transcriptsIn)
				}
			}
			if bytes.Contains(raw, []byte(key)) != tt.keyIn {
				t.Errorf("key in the file's bytes: %v, want %v", !tt.keyIn, tt.keyIn)
			}
			db := openDBFile(t, dest).Reader()
			var msgs, turns, calls, excerpts int
			if err := db.QueryRow(`SELECT (SELECT count(*) FROM kimi_assistant_messages),
				(SELECT count(*) FROM kimi_assistant_turns WHERE prompt_tokens = 77),
				(SELECT count(*) FROM kimi_assistant_tool_calls),
				(SELECT count(*) FROM kimi_assistant_tool_calls WHERE arguments != '' OR result != '')`).
				Scan(&msgs, &turns, &calls, &excerpts); err != nil {
				t.Fatal(err)
			}
			wantMsgs, wantExcerpts := 0, 0
			if tt.transcriptsIn {
				wantMsgs, wantExcerpts = 2, 1
			}
			if msgs != wantMsgs || excerpts != wantExcerpts || turns != 1 || calls != 1 {
				t.Errorf("copy holds %d messages, %d excerpts, %d turns, %d tool calls; want %d, %d, 1, 1",
					msgs, excerpts, turns, calls, wantMsgs, wantExcerpts)
			}
			got := queryStrings(t, db, `SELECT action FROM kimi_audit_log WHERE action LIKE 'store.backup_without_%' ORDER BY id`)
			if strings.Join(got, ",") != strings.Join(tt.auditActionsIn, ",") {
				t.Errorf("copy's audit actions = %v, want %v", got, tt.auditActionsIn)
			}
		})
	}
}
