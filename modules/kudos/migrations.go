package kudos

import (
	"context"

	"github.com/kimiapp/kimi/modules/sdk"
)

// migrations are forward-only. The host records each applied name and runs
// the rest, in order, each in its own transaction, before any module
// starts. Never edit, rename or reorder a released step: append a new one.
// Table names always come from mc.Table, which returns the quoted physical
// name ("reference_kudos_kudos") that keeps this module's tables out of
// everyone else's way in the shared database.
func migrations() []sdk.Migration {
	return []sdk.Migration{
		{Name: "001_create_kudos", Up: createKudos},
		{Name: "002_index_kudos", Up: indexKudos},
		{Name: "003_result_receipts", Up: createResultReceipts},
	}
}

// createKudos: one row per kudos given; given_at is unix seconds.
func createKudos(ctx context.Context, mc sdk.MigrationContext) error {
	_, err := mc.Tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+mc.Table("kudos")+` (
		id          INTEGER PRIMARY KEY AUTOINCREMENT,
		guild_id    INTEGER NOT NULL,
		giver_id    INTEGER NOT NULL,
		receiver_id INTEGER NOT NULL,
		reason      TEXT    NOT NULL,
		given_at    REAL    NOT NULL
	)`)
	return err
}

// indexKudos shows that later schema work is simply appended. Every read
// is scoped to one guild and a time window, so this index keeps the
// leaderboard and the daily limit cheap as the table grows. Index names
// share the database-wide namespace, so they carry the module prefix too.
func indexKudos(ctx context.Context, mc sdk.MigrationContext) error {
	_, err := mc.Tx.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS reference_kudos_by_guild_time ON `+
		mc.Table("kudos")+` (guild_id, given_at)`)
	return err
}

// createResultReceipts keeps only opaque deduplication ids and their expiry
// — never task output or owner ids.
func createResultReceipts(ctx context.Context, mc sdk.MigrationContext) error {
	_, err := mc.Tx.ExecContext(ctx, `CREATE TABLE `+mc.Table("result_receipts")+
		` (notification_id TEXT PRIMARY KEY, expires_at REAL NOT NULL)`)
	return err
}
