package host

import (
	"context"
	"database/sql"
	"log/slog"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/guildcfg"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/kudos"
	"github.com/kimiapp/kimi/modules/sdk"
)

// TestKudosCountsARedeliveredResultOnce: the reference subscriber on the
// real host, storage and outbox (seed 001's kudos test, on the real
// parts): kudos subscribes at Start through the host's port and counts a
// delivered result; then the acknowledgement is lost — the row is put
// back as a crash after the handler's commit leaves it (delivering, its
// lease expired) — and after kudos restarts the same notification is
// delivered again and still counted once.
func TestKudosCountsARedeliveredResultOnce(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	specs := []sdk.Spec{kudos.Spec()}
	guilds, err := guildcfg.New(ctx, st, guildcfg.Options{Modules: specs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer guilds.Close()
	doc, err := guilds.Document(ctx, guildcfg.GuildTarget(42))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guilds.Write(ctx, guildcfg.GuildTarget(42), "---\nbot_active: true\n---\n", doc.Revision, guildcfg.Actor{Kind: guildcfg.ActorCLI}); err != nil {
		t.Fatal(err)
	}
	svc, err := results.New(results.Options{Store: st, Logger: slog.New(slog.DiscardHandler), Producer: allowAll{}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	caps := sdk.NewCapabilities([]string{sdk.CapScheduledResults}, false, false)
	h, err := New(ctx, Options{Specs: specs, Store: st, Guilds: guilds, Logger: slog.New(slog.DiscardHandler),
		Selection: []string{kudos.Name}, SelectionSet: true, Capabilities: &caps, Results: svc,
		Getenv: func(k string) string {
			if k == "REFERENCE_KUDOS_RESULT_GUILD_ID" {
				return "42"
			}
			return ""
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if m, _ := h.Module(kudos.Name); m.State != StateRunning {
		t.Fatalf("kudos = %s %q", m.State, m.Reason)
	}
	svc.Start()
	pub := results.Publication{RunID: "run-1", TaskID: "task-1", Revision: 1, GuildID: 42, OwnerID: 7, PublishedAt: time.Now(),
		Outcome: sdk.ResultCompleted, Messages: []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: 42, ChannelID: 5, MessageID: 9}, Content: "done"}}}
	if err := st.Write(ctx, func(tx *sql.Tx) error { _, err := svc.Enqueue(ctx, tx, pub); return err }); err != nil {
		t.Fatal(err)
	}
	acknowledged := func(wantAttempts int) {
		t.Helper()
		var status string
		var attempts int
		eventually(t, "the notification is acknowledged", func() bool {
			err := st.Reader().QueryRowContext(ctx, `SELECT status, attempts FROM kimi_result_notifications WHERE module = ?`, kudos.Name).Scan(&status, &attempts)
			return err == nil && status == string(results.StatusAcknowledged)
		})
		if attempts != wantAttempts {
			t.Fatalf("acknowledged after %d attempts, want %d", attempts, wantAttempts)
		}
		m, _ := h.Module(kudos.Name)
		if got := m.Metrics["published_task_results"]; got != 1 {
			t.Fatalf("published_task_results = %v, want 1 (metrics %v)", got, m.Metrics)
		}
	}
	acknowledged(1)
	// The acknowledgement is lost: the row is left as a kill after the
	// handler's commit leaves it (its stored status as claimed, under a
	// lease that ran out).
	if err := st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE kimi_result_notifications SET status = 'pending', acknowledged_ms = 0,
			lease_token = 'lost', lease_until_ms = ? WHERE module = ?`, time.Now().Add(-time.Second).UnixMilli(), kudos.Name)
		if err != nil {
			return err
		}
		// … and its count with it.
		_, err = tx.ExecContext(ctx, `UPDATE kimi_result_counts SET n = n + CASE status WHEN 'pending' THEN 1 ELSE -1 END
			WHERE module = ? AND status IN ('pending', 'acknowledged')`, kudos.Name)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.Restart(ctx, kudos.Name, "test"); err != nil {
		t.Fatal(err)
	}
	acknowledged(2)
	var receipts int
	if err := st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_result_notifications`).Scan(&receipts); err != nil || receipts != 1 {
		t.Fatalf("notifications = %d, %v; want the one", receipts, err)
	}
}
