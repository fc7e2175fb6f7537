// Command crashkimi is Kimi built with four test modules (crash_a …
// crash_d) for the scheduler crash test (cmd/kimi/scheduler_crash_test.go):
// each seeds, once, OneShots one-shot jobs due over a few seconds and
// Periodic periodic jobs, and every run records (job, lease token, pid,
// start, end) in the module's runs table.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/kimiapp/kimi/app"
	"github.com/kimiapp/kimi/app/scheduler"
	"github.com/kimiapp/kimi/modules/all"
	"github.com/kimiapp/kimi/modules/sdk"
)

// Per module.
const (
	OneShots = 500
	Periodic = 2
	spread   = 4 * time.Second
)

func main() {
	specs := all.Specs()
	for _, n := range []string{"crash_a", "crash_b", "crash_c", "crash_d"} {
		specs = append(specs, spec(n))
	}
	os.Exit(app.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr, specs...))
}

func spec(name string) sdk.Spec {
	return sdk.Spec{Name: name, Version: "1.0.0", APIVersion: 2,
		Create: func(sdk.LoadContext) (sdk.Module, error) { return &module{name: name}, nil }}
}

type module struct {
	name string
	rt   *sdk.Runtime
}

func (m *module) Migrations() []sdk.Migration {
	return []sdk.Migration{{Name: "001_runs", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
		_, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table("runs")+` (job TEXT NOT NULL, token TEXT NOT NULL,
			pid INTEGER NOT NULL, start_ms INTEGER NOT NULL, end_ms INTEGER);
			CREATE TABLE `+mc.Table("meta")+` (k TEXT PRIMARY KEY, v TEXT NOT NULL)`)
		return err
	}}}
}

func (m *module) Start(ctx context.Context, rt *sdk.Runtime) error {
	m.rt = rt
	if err := rt.Scheduler.Register("run", m.run); err != nil {
		return err
	}
	var seeded int
	if err := rt.Storage.Reader().QueryRowContext(ctx, `SELECT count(*) FROM `+rt.Storage.Table("meta")+` WHERE k = 'seeded'`).Scan(&seeded); err != nil {
		return err
	}
	if seeded > 0 {
		return nil
	}
	now := time.Now()
	for i := range OneShots {
		if err := rt.Scheduler.RunAt(ctx, fmt.Sprintf("once-%d", i), now.Add(spread*time.Duration(i)/OneShots), "run", nil); err != nil {
			return err
		}
	}
	for i := range Periodic {
		if err := rt.Scheduler.RunEvery(ctx, fmt.Sprintf("every-%d", i), 150*time.Millisecond, "run", nil, sdk.EveryOptions{}); err != nil {
			return err
		}
	}
	err := rt.Storage.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO `+rt.Storage.Table("meta")+` (k, v) VALUES ('seeded', 'yes')`)
		return err
	})
	if err == nil {
		rt.Logger.Info("crash jobs seeded")
	}
	return err
}

func (m *module) run(ctx context.Context, run sdk.JobRun) error {
	tok := scheduler.LeaseToken(ctx)
	if tok == "" {
		return errors.New("no lease token")
	}
	runs := m.rt.Storage.Table("runs")
	err := m.rt.Storage.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO `+runs+` (job, token, pid, start_ms) VALUES (?, ?, ?, ?)`,
			run.Key, tok, os.Getpid(), time.Now().UnixMilli())
		return err
	})
	if err != nil {
		return err
	}
	time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
	return m.rt.Storage.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE `+runs+` SET end_ms = ? WHERE token = ?`, time.Now().UnixMilli(), tok)
		return err
	})
}

func (m *module) Close(context.Context) error { return nil }
