// Package altercases holds the module migrations that the host's tests
// (app/modstore) and the fakes' (modules/sdk/sdktest) both run to prove
// that a confined module's migrations may ALTER its own tables and
// nothing else, alike. "P_" in their SQL stands for the module's table
// prefix and "_"; another module's table is other_data (id, v), a core
// table kimi_settings. Only tests import it.
package altercases

import (
	"context"
	"database/sql"
	"strings"
)

// Step is a migration's work: p is the module's table prefix.
type Step func(ctx context.Context, tx *sql.Tx, p string) error

// Work is a migration that must work; Check ("P_" the prefix) reads one
// value proving its effect, Want.
type Work struct {
	Name        string
	Up          Step
	Check, Want string
}

// Refusal is a migration that must be refused with an error holding Want,
// leaving the schema and the ledger as they were.
type Refusal struct {
	Name string
	Up   Step
	Want string
}

// Prefixed is q with "P_" replaced by prefix p.
func Prefixed(q, p string) string { return strings.ReplaceAll(q, "P_", p+"_") }

// Base is every case's first migration ("P_" is the module's
// prefix): an AUTOINCREMENT table with a UNIQUE column, an index, a
// trigger and a view over it, and a plain table.
const Base = `CREATE TABLE P_a (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT, w TEXT UNIQUE, x INTEGER);
	INSERT INTO P_a (v, w, x) VALUES ('one', 'a', 1), ('two', 'b', 2);
	CREATE INDEX P_a_v ON P_a (v);
	CREATE TRIGGER P_a_t AFTER INSERT ON P_a BEGIN UPDATE P_a SET v = upper(new.v) WHERE id = new.id; END;
	CREATE VIEW P_av AS SELECT v FROM P_a;
	CREATE TABLE P_plain (k TEXT);`

// Exec runs each of stmts ("P_" is the prefix) with tx.ExecContext.
func Exec(stmts ...string) Step {
	return func(ctx context.Context, tx *sql.Tx, p string) error {
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, Prefixed(q, p)); err != nil {
				return err
			}
		}
		return nil
	}
}

// Query runs q ("P_" is the prefix) with tx.QueryContext and reads
// every row.
func Query(q string, args ...any) Step {
	return func(ctx context.Context, tx *sql.Tx, p string) error {
		rows, err := tx.QueryContext(ctx, Prefixed(q, p), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}
}

// Works are module migrations that must work, each with a query
// ("P_" the prefix) whose single value proves its effect.
var Works = []Work{
	{"add column with default", Exec(`ALTER TABLE P_a ADD COLUMN n INTEGER DEFAULT 7`),
		`SELECT group_concat(n) FROM P_a`, "7,7"},
	{"add column not null default", Exec(`ALTER TABLE P_a ADD COLUMN m TEXT NOT NULL DEFAULT 'z'`, `INSERT INTO P_a (v) VALUES ('three')`),
		`SELECT group_concat(m) FROM P_a`, "z,z,z"},
	{"add column with a check", Exec(`ALTER TABLE P_a ADD COLUMN c INTEGER DEFAULT 1 CHECK (c > 0)`),
		`SELECT group_concat(c) FROM P_a`, "1,1"},
	{"rename column", Exec(`ALTER TABLE P_a RENAME COLUMN v TO label`),
		`SELECT (SELECT group_concat(label) FROM (SELECT label FROM P_a ORDER BY id)) || ' | ' || (SELECT group_concat(sql, ' | ') FROM (SELECT sql FROM sqlite_master WHERE name IN ('P_a_v', 'P_av') ORDER BY name))`,
		`one,two | CREATE INDEX P_a_v ON P_a (label) | CREATE VIEW P_av AS SELECT label FROM P_a`},
	{"drop column", Exec(`ALTER TABLE P_a DROP COLUMN x`),
		`SELECT group_concat(name) FROM pragma_table_info('P_a')`, "id,v,w"},
	{"rename an AUTOINCREMENT table within the prefix", Exec(`ALTER TABLE P_a RENAME TO P_b`, `INSERT INTO P_b (v) VALUES ('three')`),
		`SELECT (SELECT group_concat(v) FROM (SELECT v FROM P_b ORDER BY id)) || ' ' || (SELECT seq FROM sqlite_sequence WHERE name = 'P_b') || ' ' || (SELECT count(*) FROM sqlite_master WHERE tbl_name = 'P_a') || ' ' || (SELECT sql FROM sqlite_master WHERE name = 'P_av')`,
		"one,two,THREE 3 0 CREATE VIEW P_av AS SELECT v FROM \"P_b\""},
	{"rename a plain table within the prefix", Exec(`ALTER TABLE P_plain RENAME TO P_plain2`, `INSERT INTO P_plain2 VALUES ('k')`),
		`SELECT k FROM P_plain2`, "k"},
	{"create and drop index", Exec(`CREATE INDEX P_a_vw ON P_a (v, w)`, `DROP INDEX P_a_v`),
		`SELECT group_concat(name) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'P_a' AND sql IS NOT NULL`, "P_a_vw"},
	{"create and drop trigger", Exec(`DROP TRIGGER P_a_t`, `CREATE TRIGGER P_a_t2 AFTER INSERT ON P_a BEGIN UPDATE P_a SET w = 'set' WHERE id = new.id; END`, `INSERT INTO P_a (v) VALUES ('three')`),
		`SELECT v || ' ' || w FROM P_a WHERE id = 3`, "three set"},
	{"the documented 12-step rebuild, without the foreign_keys pragma", Exec(
		// https://www.sqlite.org/lang_altertable.html#otheralter: PRAGMA
		// foreign_keys cannot change inside the host's transaction, so
		// steps 1, 2 and 12 are left out; the view is dropped and
		// recreated (step 11), foreign_key_check runs (step 10).
		`DROP VIEW P_av`,
		`CREATE TABLE P_new_a (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT NOT NULL, w TEXT UNIQUE, added INTEGER NOT NULL DEFAULT 0)`,
		`INSERT INTO P_new_a (id, v, w) SELECT id, v, w FROM P_a`,
		`DROP TABLE P_a`,
		`ALTER TABLE P_new_a RENAME TO P_a`,
		`CREATE INDEX P_a_v ON P_a (v)`,
		`CREATE TRIGGER P_a_t AFTER INSERT ON P_a BEGIN UPDATE P_a SET v = upper(new.v) WHERE id = new.id; END`,
		`CREATE VIEW P_av AS SELECT v FROM P_a`,
		`PRAGMA foreign_key_check(P_a)`,
		`INSERT INTO P_a (v) VALUES ('three')`),
		`SELECT (SELECT group_concat(x) FROM (SELECT v || added AS x FROM P_a ORDER BY id)) || ' ' || (SELECT count(*) FROM sqlite_master WHERE tbl_name = 'P_a') || ' ' || (SELECT group_concat(v) FROM (SELECT v FROM P_av ORDER BY 1))`,
		// The table, its UNIQUE index, P_a_v, P_a_t.
		"one0,two0,THREE0 4 THREE,one,two"},
	{"several statements in one Exec", Exec(`ALTER TABLE P_a ADD COLUMN s1 INTEGER DEFAULT 1; ALTER TABLE P_a RENAME COLUMN s1 TO s2;
		CREATE INDEX P_a_s2 ON P_a (s2); UPDATE P_a SET s2 = s2 + id; ALTER TABLE P_plain RENAME TO P_plain3`),
		`SELECT group_concat(s2) || ' ' || (SELECT count(*) FROM P_plain3) FROM P_a`, "2,3 0"},
	{"an ALTER before a SELECT of its own table in one Query", Query(`ALTER TABLE P_a ADD COLUMN q INTEGER DEFAULT 5; SELECT q FROM P_a`),
		`SELECT group_concat(q) FROM P_a`, "5,5"},
	{"a prepared ALTER", func(ctx context.Context, tx *sql.Tx, p string) error {
		st, err := tx.PrepareContext(ctx, `ALTER TABLE `+p+`_a ADD COLUMN r INTEGER DEFAULT 9`)
		if err != nil {
			return err
		}
		defer st.Close()
		_, err = st.ExecContext(ctx)
		return err
	}, `SELECT group_concat(r) FROM P_a`, "9,9"},
}

// Refused are module migrations that must be refused, each with the
// words its error must hold.
var Refused = []Refusal{
	{"rename out of the prefix", Exec(`ALTER TABLE P_a RENAME TO stray_a`), "table 'stray_a', which is not the module's own, appeared"},
	{"rename into another module's prefix", Exec(`ALTER TABLE P_a RENAME TO other_a`), "table 'other_a', which is not the module's own, appeared"},
	{"rename into the core's prefix", Exec(`ALTER TABLE P_plain RENAME TO kimi_plain`), "table 'kimi_plain', which is not the module's own, appeared"},
	{"read sqlite_master", Query(`SELECT sql FROM sqlite_master`), "authorization denied"},
	{"read sqlite_schema", Query(`SELECT * FROM sqlite_schema`), "authorization denied"},
	{"read sqlite_master right after an own ALTER in one Exec", Exec(`ALTER TABLE P_a ADD COLUMN z; SELECT sql FROM sqlite_master`), "authorization denied"},
	{"read sqlite_master right after an own ALTER in one Query", Query(`ALTER TABLE P_a ADD COLUMN z; SELECT sql FROM sqlite_master`), "authorization denied"},
	{"read sqlite_master in the ALTER's default", Exec(`ALTER TABLE P_a ADD COLUMN z DEFAULT ((SELECT sql FROM sqlite_master))`), "not constant"},
	{"prepare an ALTER and a read of sqlite_master together", func(ctx context.Context, tx *sql.Tx, p string) error {
		_, err := tx.PrepareContext(ctx, `ALTER TABLE `+p+`_a ADD COLUMN z; SELECT sql FROM sqlite_master`)
		return err
	}, "2 statements in one Prepare"},
	{"read sqlite_master through a view re-prepared after an ALTER", func(ctx context.Context, tx *sql.Tx, p string) error {
		st, err := tx.PrepareContext(ctx, `SELECT * FROM `+p+`_av`)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := Exec(`DROP VIEW P_av`, `CREATE VIEW P_av AS SELECT sql FROM sqlite_master`, `ALTER TABLE P_a ADD COLUMN z`)(ctx, tx, p); err != nil {
			return err
		}
		rows, err := st.QueryContext(ctx)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}, "authorization denied"},
	{"writable_schema", Exec(`PRAGMA writable_schema = ON`), "authorization denied"},
	{"update sqlite_master", Exec(`UPDATE sqlite_master SET sql = 'x' WHERE name = 'kimi_settings'`), "sqlite_master may not be modified"},
	{"update sqlite_master right after an own ALTER", Exec(`ALTER TABLE P_a ADD COLUMN z; UPDATE sqlite_master SET sql = 'x' WHERE name = 'kimi_settings'`), "sqlite_master may not be modified"},
	{"alter a core table", Exec(`ALTER TABLE kimi_settings ADD COLUMN z`), "authorization denied"},
	{"alter another module's table", Exec(`ALTER TABLE other_data ADD COLUMN z`), "authorization denied"},
	{"drop another module's column", Exec(`ALTER TABLE other_data DROP COLUMN v`), "authorization denied"},
	{"rename another module's table", Exec(`ALTER TABLE other_data RENAME TO P_stolen`), "authorization denied"},
}
