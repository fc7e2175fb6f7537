package admin

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kimiapp/kimi/app/admin/form"
	"github.com/kimiapp/kimi/app/settings"
	"github.com/kimiapp/kimi/app/store"
)

// TestBackupDownloadKinds: the Settings page says plainly that a full backup
// holds the secrets in plain text and offers both downloads; the full
// download holds the keys saved on the Worldtree and Assistant pages (byte search), the one
// without secrets holds none of them yet restores, and each audit row says
// which kind was downloaded.
func TestBackupDownloadKinds(t *testing.T) {
	const (
		defaultKey  = "wt-default-key-0a1b2c3d4e5f6071"
		adminKey    = "wt-admin-key-8192a3b4c5d6e7f8"
		consumerKey = "wt-consumer-key-f0e1d2c3b4a59687"
		llmKey      = "sk-llm-backup-key-5a6b7c8d9e0f1a2b"
		llmFallback = "sk-llm-fallback-key-c3d4e5f6a7b8c9d0"
	)
	h := newHarness(t)
	h.createAdmin()
	ctx := context.Background()
	if _, err := settings.SaveWorldtree(ctx, h.st, settings.WorldtreeUpdate{
		BaseURL:    "https://wt.example/api",
		DefaultKey: settings.KeyUpdate{Value: defaultKey}, AdminKey: settings.KeyUpdate{Value: adminKey},
		ConsumerKey: settings.KeyUpdate{Value: consumerKey},
	}, settings.Actor{Name: testUser}); err != nil {
		t.Fatal(err)
	}
	if _, err := settings.SaveAssistant(ctx, h.st, settings.AssistantUpdate{
		BaseURL: "https://api.moonshot.ai/v1", APIKey: settings.KeyUpdate{Value: llmKey}, Model: "m",
		MaxTokens: 100, Timeout: settings.DefaultAssistantTimeout,
		FallbackBaseURL: "https://openrouter.ai/api/v1", FallbackAPIKey: settings.KeyUpdate{Value: llmFallback}, FallbackModel: "f",
	}, settings.Actor{Name: testUser}); err != nil {
		t.Fatal(err)
	}
	c := h.newClient()
	c.login(testUser, testPassword)
	page := c.get("/settings")
	wantStatus(t, page, http.StatusOK)
	wantBody(t, page, "A full backup holds the secrets in plain text", "the model provider's API keys", "as private as the server",
		`data-testid="backup-submit"`,
		`name="`+form.FieldBackupSecrets+`" value="`+form.BackupSecretsOmit+`"`, `data-testid="backup-submit-without-secrets"`)

	keys := []string{defaultKey, adminKey, consumerKey, llmKey, llmFallback}
	tests := []struct {
		name     string
		form     url.Values
		keysIn   bool
		filename string
		detail   string
	}{
		{"full", nil, true, `kimi-backup-\d{8}T\d{6}Z\.db`, "full backup (holds the secrets: Worldtree and model-provider keys, the Discord token)"},
		{"without secrets", url.Values{form.FieldBackupSecrets: {form.BackupSecretsOmit}}, false,
			`kimi-backup-\d{8}T\d{6}Z-without-secrets\.db`, "backup without secrets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.auditCount(ActionBackupDownload)
			res := c.post("/settings/backup", tt.form)
			wantStatus(t, res, http.StatusOK)
			cd := res.Header.Get("Content-Disposition")
			if !regexp.MustCompile(`\Aattachment; filename="` + tt.filename + `"\z`).MatchString(cd) {
				t.Errorf("Content-Disposition = %q", cd)
			}
			for _, k := range keys {
				if strings.Contains(res.body, k) != tt.keysIn {
					t.Errorf("key %q in the download: %v, want %v", k[:10], !tt.keysIn, tt.keysIn)
				}
			}
			if n := h.auditCount(ActionBackupDownload); n != before+1 {
				t.Fatalf("backup audit rows = %d, want %d", n, before+1)
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
			dest := filepath.Join(t.TempDir(), "kimi.db")
			if _, err := store.Restore(ctx, dest, p); err != nil {
				t.Fatalf("restore of the download: %v", err)
			}
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(h.st.Path()), ".kimi-download-*"))
			if len(left) != 0 {
				t.Errorf("temporary backup left behind: %v", left)
			}
		})
	}
	// The live configuration keeps its keys.
	got, err := settings.LoadWorldtree(ctx, h.st)
	if err != nil || got.DefaultKey != defaultKey || got.AdminKey != adminKey || got.ConsumerKey != consumerKey {
		t.Fatalf("live Worldtree settings after the downloads: %v, %v", got, err)
	}
}
