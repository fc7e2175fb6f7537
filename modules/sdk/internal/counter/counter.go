// Package counter is a tiny Kimi module: /count bumps a per-guild counter.
package counter

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/kimiapp/kimi/modules/sdk"
)

// Name is the module name; it prefixes the module's tables and topics.
const Name = "counter"

// Spec declares the module. The host validates it before any code runs.
func Spec() sdk.Spec {
	return sdk.Spec{
		Name:    Name,
		Version: "1.0.0",
		// Shown under the name on the admin's module pages (optional).
		Description: "Counts with /count and remembers the total per server.",
		APIVersion:  2, // a literal on purpose: a future SDK must fail preflight loudly
		Create:      func(sdk.LoadContext) (sdk.Module, error) { return &module{}, nil },
		Permissions: sdk.Permissions{
			DiscordActions: []sdk.DiscordAction{sdk.ActionSendMessage},
		},
		Commands: []string{"count"}, // the module owns the names it registers
	}
}

type module struct {
	rt  *sdk.Runtime
	reg sdk.Registration
}

var _ sdk.Module = (*module)(nil)

// Migrations are named and forward-only: never rename or reorder a released step.
func (m *module) Migrations() []sdk.Migration {
	return []sdk.Migration{{
		Name: "001_create_counts",
		Up: func(ctx context.Context, mc sdk.MigrationContext) error {
			_, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table("counts")+
				` (guild_id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`)
			return err
		},
	}}
}

// Start registers what the module offers; everything it registers is
// released again in Close.
func (m *module) Start(ctx context.Context, rt *sdk.Runtime) error {
	m.rt = rt
	reg, err := rt.Interactions.AddCommand(sdk.CommandSpec{
		Name:        "count",
		Description: "Bump this server's counter",
		MinTier:     sdk.TierMember, // commands are staff-only unless they say otherwise
	}, m.count, nil)
	if err != nil {
		return fmt.Errorf("counter: add command: %w", err)
	}
	m.reg = reg
	rt.Health.Report(sdk.HealthHealthy, "", nil)
	return nil
}

func (m *module) count(ctx context.Context, in sdk.Interaction) error {
	var n int64
	table := m.rt.Storage.Table("counts") // `"counter_counts"`
	err := m.rt.Storage.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO `+table+` (guild_id, n) VALUES (?, 1)
			ON CONFLICT (guild_id) DO UPDATE SET n = n + 1 RETURNING n`, in.GuildID()).Scan(&n)
	})
	if err != nil {
		return fmt.Errorf("counter: bump: %w", err)
	}
	return in.Respond(ctx, sdk.Response{Content: fmt.Sprintf("Count: %d", n)})
}

func (m *module) Close(context.Context) error {
	if m.reg != nil {
		m.reg.Close()
	}
	return nil
}
