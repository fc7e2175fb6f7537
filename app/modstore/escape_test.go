package modstore

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfinementEscapes: routes out of the authorizer a confined module
// ("kudos") could take with plain SQL on the ports it is given. Each case
// is an attack; every one must be refused or leave the core untouched.
func TestConfinementEscapes(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	read := func(q string) error {
		rows, err := f.kudos.Reader().QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}
	exec := func(q string) error {
		_, err := f.kudos.Reader().ExecContext(ctx, q)
		return err
	}
	write := func(stmts ...string) error {
		return bounded(t, "WriteTx", func() error {
			return f.kudos.WriteTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
				for _, q := range stmts {
					if _, err := tx.ExecContext(ctx, q); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	coreObjects := func() []string {
		rows, err := f.st.Reader().QueryContext(ctx, `SELECT type || ' ' || name FROM sqlite_schema WHERE name NOT LIKE 'kimi\_%' ESCAPE '\' AND name NOT LIKE 'kudos\_%' ESCAPE '\' AND name NOT LIKE 'other\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' OR name LIKE 'kimi\_evil%' ESCAPE '\'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			rows.Scan(&s)
			out = append(out, s)
		}
		return out
	}

	t.Run("VACUUM INTO from the reader copies the whole database", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "stolen.db")
		err := exec(`VACUUM INTO '` + out + `'`)
		if _, statErr := os.Stat(out); statErr == nil {
			t.Fatalf("a confined module wrote a full copy of the database (sessions, settings) to %s (err=%v)", out, err)
		}
	})
	t.Run("VACUUM INTO from a WriteTx", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "stolen2.db")
		_ = write(`ROLLBACK`, `VACUUM INTO '`+out+`'`)
		if _, statErr := os.Stat(out); statErr == nil {
			t.Fatalf("a confined module's WriteTx wrote a full copy of the database to %s", out)
		}
	})
	t.Run("ALTER TABLE RENAME into the reserved prefix", func(t *testing.T) {
		_ = write(`CREATE TABLE kudos_rename (x)`)
		_ = write(`ALTER TABLE kudos_rename RENAME TO kimi_evil`)
		var n int
		if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'kimi_evil'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("a confined module created core-prefixed table kimi_evil by renaming its own (n=%d, %v)", n, err)
		}
	})
	t.Run("ALTER TABLE RENAME into another module's prefix", func(t *testing.T) {
		_ = write(`CREATE TABLE kudos_squat (x)`)
		_ = write(`ALTER TABLE kudos_squat RENAME TO other_squat`)
		var n int
		if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'other_squat'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("a confined module created a table in module other's namespace by renaming its own (n=%d, %v)", n, err)
		}
	})
	t.Run("DELETE FROM sqlite_sequence resets core AUTOINCREMENT counters", func(t *testing.T) {
		var before int
		if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM sqlite_sequence WHERE name LIKE 'kimi\_%' ESCAPE '\'`).Scan(&before); err != nil {
			t.Fatal(err)
		}
		if before == 0 {
			t.Fatal("the fixture has no core AUTOINCREMENT counters: this test would prove nothing")
		}
		_ = write(`DELETE FROM sqlite_sequence`)
		var after int
		if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM sqlite_sequence WHERE name LIKE 'kimi\_%' ESCAPE '\'`).Scan(&after); err != nil {
			t.Fatal(err)
		}
		if after != before {
			t.Fatalf("a confined module deleted the core tables' AUTOINCREMENT counters (%d rows → %d)", before, after)
		}
	})
	for _, tt := range []struct{ name, q string }{
		{"pragma_table_info of a core table", `SELECT name FROM pragma_table_info('kimi_sessions')`},
		{"count of pragma_table_info of a core table", `SELECT count(*) FROM pragma_table_info('kimi_settings')`},
		{"load_extension", `SELECT load_extension('/nonexistent')`},
		{"CTE named like a core table", `WITH kimi_sessions(id) AS (SELECT id FROM kimi_sessions) SELECT * FROM kimi_sessions`},
		{"settings through json_each", `SELECT value FROM json_each((SELECT json_group_array(value) FROM kimi_settings))`},
		{"sqlite_dbpage", `SELECT data FROM sqlite_dbpage`},
		{"dbstat", `SELECT name FROM dbstat`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := read(tt.q); err == nil {
				t.Fatalf("allowed: %s", tt.q)
			}
		})
	}
	for _, tt := range []struct {
		name string
		q    []string
	}{
		{"temp trigger", []string{`CREATE TEMP TRIGGER kudos_tt AFTER INSERT ON kudos_points BEGIN DELETE FROM kimi_sessions; END`, `INSERT INTO kudos_points (v) VALUES ('x')`}},
		{"own table from a core select", []string{`CREATE TABLE kudos_copy AS SELECT * FROM kimi_settings`}},
		{"insert select from core", []string{`INSERT INTO kudos_points (v) SELECT value FROM kimi_settings`}},
		{"quoted name breaking out", []string{`CREATE TABLE "kudos_x"" (a); DROP TABLE kimi_settings; --" (y)`}},
		{"savepoint release after rollback", []string{`ROLLBACK`, `SAVEPOINT s`, `DELETE FROM kimi_sessions`, `RELEASE s`}},
		{"virtual table over core", []string{`CREATE VIRTUAL TABLE kudos_fts USING fts5(v)`, `INSERT INTO kudos_fts SELECT value FROM kimi_settings`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_ = write(tt.q...)
			v, ok, err := f.st.Setting(ctx, "worldtree.key")
			if err != nil || !ok || v != "secret-value" {
				t.Fatalf("settings changed: %q %v %v", v, ok, err)
			}
			var n int
			if err := f.st.Reader().QueryRowContext(ctx, `SELECT count(*) FROM kimi_sessions`).Scan(&n); err != nil || n != 1 {
				t.Fatalf("sessions = %d, %v", n, err)
			}
			for _, tbl := range []string{"kudos_copy", "kudos_fts"} {
				var leaked string
				err := f.st.Reader().QueryRowContext(ctx, `SELECT group_concat(`+map[string]string{"kudos_copy": "value", "kudos_fts": "v"}[tbl]+`) FROM `+tbl).Scan(&leaked)
				if err == nil && strings.Contains(leaked, "secret-value") {
					t.Fatalf("the secret was copied into %s", tbl)
				}
			}
		})
	}
	if objs := coreObjects(); len(objs) > 0 {
		t.Errorf("objects outside every prefix after the attacks: %v", objs)
	}
}
