package guildcfg

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDeleteRemovesTheDocument: Delete is compare-and-swap like Write,
// leaves the target absent (EmptyRevision) in the database, the snapshot
// and after a Reload, records a history row and an audit row, tells
// subscribers, and deleting an absent document records nothing.
func TestDeleteRemovesTheDocument(t *testing.T) {
	tests := []struct {
		name   string
		target Target
		text   string
	}{
		{"server setup", GuildTarget(1), "---\nbot_active: true\n---\n"},
		{"module settings", GuildModuleTarget(1, "alpha"), "---\nlimit: 2\n---\n"},
		{"channel fragment", ChannelTarget(7), "---\nx: 1\n---\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t)
			s := newService(t, st, TrustSettings{})
			if tt.target.Kind == KindGuildModule {
				mustWrite(t, s, GuildTarget(1), "---\nbot_active: true\n---\n")
			}
			doc := mustWrite(t, s, tt.target, tt.text)
			changes := make(chan Change, 8)
			defer s.Subscribe(func(c Change) { changes <- c })()

			var conflict *ConflictError
			if err := s.Delete(ctx, tt.target, EmptyRevision, admin); !errors.As(err, &conflict) {
				t.Fatalf("stale delete: %v, want a conflict", err)
			}
			if err := s.Delete(ctx, tt.target, doc.Revision, Actor{Kind: ActorProposal, Name: "abc"}); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			got, err := s.Document(ctx, tt.target)
			if err != nil || got.Exists || got.Revision != EmptyRevision || got.Text != "" {
				t.Fatalf("after delete: %+v, %v", got, err)
			}
			if tt.target.Kind == KindGuild && s.Active(1) {
				t.Fatal("the guild is still active after its document was deleted")
			}
			if tt.target.Kind == KindGuildModule {
				if ms, _ := s.ModuleSettings(1, "alpha"); ms.Revision != EmptyRevision && ms.Values["limit"] == 2 {
					t.Fatalf("snapshot still has the deleted settings: %+v", ms)
				}
			}
			select {
			case c := <-changes:
				if c.Target != tt.target || c.Revision != EmptyRevision {
					t.Fatalf("change = %+v", c)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no change delivered")
			}
			var audits, history int
			_ = st.Reader().QueryRow(`SELECT count(*) FROM kimi_audit_log WHERE action = ? AND actor = 'proposal:abc' AND target = ?`, ActionDocumentDelete, tt.target.String()).Scan(&audits)
			_ = st.Reader().QueryRow(`SELECT count(*) FROM kimi_revisions WHERE target = ? AND after_revision = ?`, tt.target.String(), EmptyRevision).Scan(&history)
			if audits != 1 || history != 1 {
				t.Fatalf("audit rows %d, history rows %d; want 1 and 1", audits, history)
			}
			// Deleting the absent document again records nothing.
			if err := s.Delete(ctx, tt.target, EmptyRevision, admin); err != nil {
				t.Fatalf("second Delete: %v", err)
			}
			_ = st.Reader().QueryRow(`SELECT count(*) FROM kimi_audit_log WHERE action = ?`, ActionDocumentDelete).Scan(&audits)
			if audits != 1 {
				t.Fatalf("audit rows after a no-op delete = %d", audits)
			}
			if err := s.Reload(ctx); err != nil {
				t.Fatal(err)
			}
			if tt.target.Kind == KindGuild && s.Active(1) {
				t.Fatal("active after Reload")
			}
		})
	}
}
