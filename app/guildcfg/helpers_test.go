package guildcfg

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/kimiapp/kimi/app/store"
	"github.com/kimiapp/kimi/modules/sdk"
)

// openStore opens and migrates a real SQLite file in a temp dir.
func openStore(t testing.TB) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kimi.db"), store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return st
}

// Test modules: alpha takes its guild offline when invalid (the default
// policy), beta only switches itself off, gamma has no guild settings.
func testSpecs() []sdk.Spec {
	return []sdk.Spec{
		{Name: "alpha", GuildSettings: &sdk.GuildSettingsSchema{
			Fields: []sdk.GuildSettingField{
				{Name: "channel_id", Kind: sdk.GuildSettingID, Help: "where alpha posts"},
				{Name: "enabled", Kind: sdk.GuildSettingBool, Default: true},
				{Name: "mode", Kind: sdk.GuildSettingEnum, Default: "quiet", Choices: []string{"quiet", "loud"}},
				{Name: "roles", Kind: sdk.GuildSettingIDList},
				{Name: "note", Kind: sdk.GuildSettingStr},
				{Name: "tags", Kind: sdk.GuildSettingStrList},
				{Name: "limit", Kind: sdk.GuildSettingInt, Default: 5},
			},
			Validate: func(v map[string]any) []string {
				if v["mode"] == "loud" && v["channel_id"] == nil {
					return []string{"loud mode needs channel_id"}
				}
				if v["note"] == "panic" {
					panic("boom")
				}
				return nil
			},
		}},
		{Name: "beta", GuildSettings: &sdk.GuildSettingsSchema{
			InvalidPolicy: sdk.DisableModule,
			Fields:        []sdk.GuildSettingField{{Name: "channel_id", Kind: sdk.GuildSettingID, Required: true}},
		}},
		{Name: "gamma"},
	}
}

func newService(t testing.TB, st *store.Store, trust TrustSettings) *Service {
	t.Helper()
	s, err := New(context.Background(), st, Options{Modules: testSpecs(), Trust: trust, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

var admin = Actor{Kind: ActorAdmin, Name: "alice", IP: "127.0.0.1"}

// mustWrite writes text over whatever the document holds now.
func mustWrite(t testing.TB, s *Service, target Target, text string) Document {
	t.Helper()
	ctx := context.Background()
	cur, err := s.Document(ctx, target)
	if err != nil {
		t.Fatalf("Document(%s): %v", target, err)
	}
	doc, err := s.Write(ctx, target, text, cur.Revision, admin)
	if err != nil {
		t.Fatalf("Write(%s): %v", target, err)
	}
	return doc
}

// counts returns the rows of the documents, revisions and audit_log tables.
func counts(t testing.TB, st *store.Store) [3]int {
	t.Helper()
	var c [3]int
	for i, table := range []string{"kimi_documents", "kimi_revisions", "kimi_audit_log"} {
		if err := st.Reader().QueryRow("SELECT count(*) FROM " + table).Scan(&c[i]); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
	}
	return c
}
