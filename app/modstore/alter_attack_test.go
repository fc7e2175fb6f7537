package modstore

import (
	"context"
	"testing"

	"github.com/kimiapp/kimi/modules/sdk"
	"github.com/kimiapp/kimi/modules/sdk/hostkit/altercases"
)

// TestMigrationSplitterAndWindowAttacksRefused: SQL meant to make the
// statement split and SQLite disagree (a ";" in an identifier, a Tcl
// parameter, a blob, a comment, a "\\v"), EXPLAIN, a generated column or
// CHECK reaching the schema, temp, a rename out and back, and a pragma of a
// core table after an own ALTER are all refused.
func TestMigrationSplitterAndWindowAttacksRefused(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	for i, q := range []string{
		"ALTER TABLE P_a ADD COLUMN [z;] ; SELECT sql FROM sqlite_master",
		"ALTER TABLE P_a ADD COLUMN `z;`; SELECT sql FROM sqlite_master",
		"ALTER TABLE P_a ADD COLUMN z DEFAULT $a(;); SELECT sql FROM sqlite_master",
		"ALTER TABLE P_a ADD COLUMN z DEFAULT x'00'';'; SELECT sql FROM sqlite_master",
		"ALTER TABLE P_a ADD COLUMN z /* ; */ ; SELECT sql FROM sqlite_master",
		"ALTER TABLE P_a ADD COLUMN z\v; SELECT sql FROM sqlite_master",
		"ALTER TABLE P_a ADD COLUMN g AS (length(sqlite_source_id())); SELECT sql FROM sqlite_master",
		"ALTER TABLE temp.P_a ADD COLUMN z",
		"CREATE TEMP TABLE P_t (x)",
		"ALTER TABLE P_a ADD COLUMN c INTEGER DEFAULT 1 CHECK ((SELECT count(*) FROM sqlite_master) > 0)",
		"ALTER TABLE P_a RENAME TO other_a; ALTER TABLE other_a RENAME TO P_a",
		"EXPLAIN ALTER TABLE P_a ADD COLUMN z; SELECT sql FROM sqlite_master",
		"ALTER TABLE P_a ADD COLUMN z; PRAGMA table_info(kimi_settings)",
	} {
		module := "probe" + string(rune('a'+i))
		p := module
		base := sdk.Migration{Name: "001", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
			return altercases.Exec(altercases.Base)(ctx, mc.Tx, p)
		}}
		step := sdk.Migration{Name: "002", Up: func(ctx context.Context, mc sdk.MigrationContext) error {
			return altercases.Query(q)(ctx, mc.Tx, p)
		}}
		_, err := f.m.Migrate(ctx, module, sdk.Permissions{}, []sdk.Migration{base, step})
		t.Logf("%q => %v", q, err)
		if err == nil {
			t.Errorf("%q was not refused", q)
		}
	}
}
