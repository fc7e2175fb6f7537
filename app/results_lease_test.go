package app

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/kimiapp/kimi/app/config"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/sdk"
)

// holdingModule subscribes to "digest" in guild 42; its handler tells
// entered and waits for release (or its ctx).
type holdingModule struct {
	entered chan struct{}
	release chan struct{}
}

func (m *holdingModule) Migrations() []sdk.Migration { return nil }
func (m *holdingModule) Close(context.Context) error { return nil }
func (m *holdingModule) Start(ctx context.Context, rt *sdk.Runtime) error {
	return rt.ScheduledResults.Subscribe(ctx, "digest", 42, func(ctx context.Context, _ sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
		select {
		case m.entered <- struct{}{}:
		default:
		}
		select {
		case <-m.release:
		case <-ctx.Done():
		}
		return nil
	})
}

// TestMainWithResultsLease: Extensions.ResultsLease reaches the outbox
// `serve` creates — a delivery in flight holds its row for that lease
// (lease_until_ms is the claim's time plus 3 s, not results.Lease's 60
// s) — so a test build can have a delivery cut short by kill -9 claimed
// again within seconds (cmd/kimi's TestScheduledResultsSurviveKill9).
func TestMainWithResultsLease(t *testing.T) {
	const lease = 3 * time.Second
	dataDir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	activateGuild(t, filepath.Join(dataDir, config.DBFile), 42)
	for k, v := range map[string]string{"KIMI_DATA_DIR": dataDir, "KIMI_ADDR": "127.0.0.1:0", "KIMI_MODULES": "holder"} {
		t.Setenv(k, v)
	}
	mod := &holdingModule{entered: make(chan struct{}, 1), release: make(chan struct{})}
	parts := make(chan ServeParts, 1)
	ext := Extensions{
		Specs: []sdk.Spec{{Name: "holder", Version: "1.0", APIVersion: sdk.APIVersion,
			Permissions: sdk.Permissions{ScheduledResults: []string{"digest"}},
			Create:      func(sdk.LoadContext) (sdk.Module, error) { return mod, nil }}},
		OnServe: func(_ context.Context, p ServeParts) {
			p.Results.SetProducer(allowAll{})
			parts <- p
		},
		ResultsLease: lease,
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	code := make(chan int, 1)
	go func() { code <- MainWith(ctx, []string{"serve"}, stdout, stderr, ext) }()
	defer func() {
		close(mod.release)
		cancel()
		select {
		case rc := <-code:
			if rc != ExitOK {
				t.Errorf("exit code %d:\n%s", rc, stderr)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	ready := regexp.MustCompile(`msg=ready component=kimi`)
	for deadline := time.Now().Add(30 * time.Second); !ready.MatchString(stderr.String()); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not ready:\n%s", stderr)
		}
	}
	var p ServeParts
	select {
	case p = <-parts:
	default:
		t.Fatal("OnServe was not called before ready")
	}
	before := time.Now().UnixMilli()
	pub := results.Publication{RunID: "run-1", TaskID: "task-1", Revision: 1, GuildID: 42, OwnerID: 7, PublishedAt: time.Now(),
		Outcome: sdk.ResultCompleted, Messages: []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: 42, ChannelID: 5, MessageID: 9}}}}
	if err := p.Store.Write(ctx, func(tx *sql.Tx) error { _, err := p.Results.Enqueue(ctx, tx, pub); return err }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-mod.entered:
	case <-time.After(30 * time.Second):
		t.Fatalf("the handler was never called:\n%s", stderr)
	}
	after := time.Now().UnixMilli()
	var status string
	var until int64
	// Under its lease the row keeps its stored status (it reads as
	// delivering: migration 00018).
	if err := p.Store.Reader().QueryRowContext(ctx, `SELECT status || CASE WHEN lease_token <> '' THEN ' leased' ELSE '' END, lease_until_ms
		FROM kimi_result_notifications WHERE run_id = 'run-1'`).Scan(&status, &until); err != nil {
		t.Fatal(err)
	}
	if status != "pending leased" || until < before+lease.Milliseconds() || until > after+lease.Milliseconds() {
		t.Fatalf("row %s leased until %+d ms after the enqueue (the handler ran %d ms after it), want the claim's time + %s",
			status, until-before, after-before, lease)
	}
}
