// Package migrationtest holds what tests of a core migration's Down share:
// a fresh goose provider over Kimi's embedded migrations on a database in
// t.TempDir(), and the schema as a comparable list. Only tests import it.
package migrationtest

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"

	kimi "github.com/kimiapp/kimi"
	_ "modernc.org/sqlite" // the "sqlite" driver
)

// Open returns a one-connection database named name in a temporary
// directory (foreign keys on) and a goose provider of the core migrations
// over it; both close with the test.
func Open(t testing.TB, name string) (*sql.DB, *goose.Provider) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), name)+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	p, err := goose.NewProvider(goose.DialectSQLite3, db, kimi.MigrationsFS(), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return db, p
}

// Schema is every object of sqlite_schema but goose's own table and
// SQLite's, as "type name: sql", in order.
func Schema(t testing.TB, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT type, name, COALESCE(sql, '') FROM sqlite_schema WHERE name NOT LIKE 'goose%' AND name NOT LIKE 'sqlite_%' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, name, q string
		if err := rows.Scan(&typ, &name, &q); err != nil {
			t.Fatal(err)
		}
		out = append(out, typ+" "+name+": "+q)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
