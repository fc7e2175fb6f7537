// Command resultskimi is Kimi built for the scheduled-results crash test
// (cmd/kimi/results_crash_test.go): three subscriber modules (results_a …
// results_c) each subscribe "reports" in guild Guild and record, per
// handler invocation, one attempts row and (INSERT OR IGNORE) one effects
// row keyed by the notification id; an OnServe producer publishes
// Published results, recording each run in resultskimi_published in the
// same transaction as its results.Enqueue (so a kill never loses or
// doubles a publication); its Producer allows every access check and
// serves no file. The outbox lease is Lease, so a delivery cut short by
// kill -9 is claimed again within seconds of the restart.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/kimiapp/kimi/app"
	"github.com/kimiapp/kimi/app/results"
	"github.com/kimiapp/kimi/modules/sdk"
)

// The crash test mirrors these.
const (
	Published = 2000
	Guild     = 42
	Lease     = 2 * time.Second
	// perTx publications are enqueued per producer transaction.
	perTx = 5
)

var subscribers = []string{"results_a", "results_b", "results_c"}

func main() {
	var specs []sdk.Spec
	for _, n := range subscribers {
		specs = append(specs, spec(n))
	}
	os.Exit(app.MainWith(context.Background(), os.Args[1:], os.Stdout, os.Stderr,
		app.Extensions{Specs: specs, OnServe: onServe, ResultsLease: Lease}))
}

func spec(name string) sdk.Spec {
	return sdk.Spec{Name: name, Version: "1.0.0", APIVersion: 2,
		Permissions: sdk.Permissions{ScheduledResults: []string{"reports"}},
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return &module{name: name}, nil }}
}

type module struct {
	name string
	rt   *sdk.Runtime
}

func (m *module) Migrations() []sdk.Migration {
	return []sdk.Migration{{Name: "001_results", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
		_, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table("effects")+` (id TEXT PRIMARY KEY, run_id TEXT NOT NULL);
			CREATE TABLE `+mc.Table("attempts")+` (id TEXT NOT NULL, run_id TEXT NOT NULL, pid INTEGER NOT NULL, at_ms INTEGER NOT NULL)`)
		return err
	}}}
}

func (m *module) Start(ctx context.Context, rt *sdk.Runtime) error {
	m.rt = rt
	if rt.ScheduledResults == nil {
		return errors.New("no scheduled-results port")
	}
	return rt.ScheduledResults.Subscribe(ctx, "reports", Guild, m.handle)
}

// handle is at least once: the effect is deduplicated by the
// notification id, every invocation leaves an attempts row.
func (m *module) handle(ctx context.Context, r sdk.ScheduledResult, _ sdk.ScheduledResultFiles) error {
	return m.rt.Storage.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+m.rt.Storage.Table("attempts")+` (id, run_id, pid, at_ms) VALUES (?, ?, ?, ?)`,
			r.NotificationID, r.RunID, os.Getpid(), time.Now().UnixMilli()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO `+m.rt.Storage.Table("effects")+` (id, run_id) VALUES (?, ?)`, r.NotificationID, r.RunID)
		return err
	})
}

func (m *module) Close(context.Context) error { return nil }

// producer allows every access and has no files.
type producer struct{}

var _ results.Producer = producer{}

func (producer) CheckAccess(context.Context, results.Publication) error { return nil }
func (producer) ReadFile(context.Context, string, string, int64) ([]byte, error) {
	return nil, errors.New("no files")
}

func onServe(ctx context.Context, p app.ServeParts) {
	p.Results.SetProducer(producer{})
	go publish(ctx, p)
}

// publish enqueues the runs not yet recorded, perTx per transaction, each
// recorded with the number of notifications its Enqueue added.
func publish(ctx context.Context, p app.ServeParts) {
	log := p.Logger.With("component", "resultskimi")
	st := p.Store
	if err := st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS resultskimi_published (run_id TEXT PRIMARY KEY, enqueued INTEGER NOT NULL)`)
		return err
	}); err != nil {
		log.Error("create the producer's table", "err", err)
		return
	}
	var n int
	if err := st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM resultskimi_published`).Scan(&n); err != nil {
		log.Error("count the published runs", "err", err)
		return
	}
	for n < Published {
		err := st.Write(ctx, func(tx *sql.Tx) error {
			for i := n; i < min(n+perTx, Published); i++ {
				run := fmt.Sprintf("run-%04d", i)
				k, err := p.Results.Enqueue(ctx, tx, results.Publication{RunID: run, TaskID: "task", Revision: 1, GuildID: Guild, OwnerID: 7,
					PublishedAt: time.Now(), Outcome: sdk.ResultCompleted,
					Messages: []sdk.ScheduledResultMessage{{Message: sdk.MessageRef{GuildID: Guild, ChannelID: 5, MessageID: uint64(1000 + i)}, Content: run}}})
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO resultskimi_published (run_id, enqueued) VALUES (?, ?)`, run, k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			if ctx.Err() == nil {
				log.Error("publish", "err", err)
			}
			return
		}
		n = min(n+perTx, Published)
	}
	log.Info("results published", "runs", n)
}
